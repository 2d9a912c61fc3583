"""Decode step by step: greedy or beam search one token at a time, with candidates, attention and the beam tree."""

import streamlit as st

from transformer.session import DecodingSession
from transformer.translate import TranslationError
from ui import figures
from ui.translation import prepare
from ui.widgets import (
    apply_pending_head,
    attention_explorer,
    current_translator,
    page_setup,
    search_settings,
)

DEFAULT_SENTENCE = "In the beginning God created the heaven and the earth."
ACTIONS = {"Next": DecodingSession.step, "Back": DecodingSession.back, "Run to end": DecodingSession.run_to_end,
           "Reset": DecodingSession.reset}


def _act(name: str) -> None:
    ACTIONS[name](st.session_state.step_session)


def _tree_steps(session, pieces) -> list[dict]:
    return [{"nodes": [{"parent": n.parent, "label": pieces([n.token])[0], "score": n.score, "status": n.status,
                        "slot": n.slot} for n in step.nodes]} for step in session.history]


def current_step(session, tok, src_pieces) -> None:
    step = session.current
    if step is None:
        st.info("Press **Next** to feed <s> and predict the first token.")
        return
    names = [" ".join(tok.target_pieces(h.prefix)) for h in step.live]
    k = st.selectbox("Hypothesis", range(len(names)), format_func=lambda i: f"{i}: {names[i]}", key="step_hyp") \
        if len(names) > 1 else 0
    hyp = step.live[min(k, len(step.live) - 1)]
    prefix = tok.target_pieces(hyp.prefix)
    st.markdown(f"At step {session.n_steps} the decoder read **{' '.join(prefix)}** (log-prob "
                f"{hyp.score:.3f}); its newest token `{prefix[-1]}` is the query whose attention is shown. "
                "Its candidates for the next token:")
    c1, c2 = st.columns(2)
    c1.plotly_chart(figures.candidates_bar(tok.target_pieces(hyp.candidates.tokens), hyp.candidates.probs,
                                           title=f"top {len(hyp.candidates.tokens)} next tokens"), key="step_cands")
    layer = c2.selectbox("Decoder layer", range(hyp.cross_attention.shape[0]), key="step_layer")
    c2.plotly_chart(figures.head_rows(hyp.cross_attention[layer].numpy(), src_pieces, title="cross-attention per head"),
                    key="step_cross", theme=None)
    c2.plotly_chart(figures.head_rows(hyp.self_attention[layer].numpy(), prefix, title="self-attention per head"),
                    key="step_self", theme=None)


def main() -> None:
    page_setup()
    st.title("Decode step by step")
    translator = current_translator()
    if translator is None:
        return
    tok = translator.tokenizer
    if "step_text" not in st.session_state:
        st.session_state.step_text = (st.session_state.get("tr_text") or "").strip() or DEFAULT_SENTENCE
    text = st.text_input("English sentence", key="step_text")
    settings = search_settings("step")
    try:
        source = prepare(translator, text)
    except TranslationError as e:
        st.info(str(e))
        return
    for warning in source.warnings:
        st.warning(warning)
    request = (str(translator.checkpoint.path), tuple(source.ids), settings)
    if st.session_state.get("step_request") != request:
        st.session_state.step_session = DecodingSession(translator.model, source.ids, settings)
        st.session_state.step_request = request
    session = st.session_state.step_session
    cols = st.columns(len(ACTIONS))
    for col, name in zip(cols, ACTIONS):
        col.button(name, key=f"step_{name.lower().replace(' ', '_')}", on_click=_act, args=(name,),
                   disabled=session.done if name in ("Next", "Run to end") else name == "Back" and not session.n_steps,
                   width="stretch")
    live = [tok.decode_target(h.tokens) for h in session.live]
    st.markdown(f"**Step {session.n_steps}.** " + ("Done." if session.done else "Output so far: " + " | ".join(
        f"`{t or '∅'}`" for t in live)))
    current_step(session, tok, source.pieces)
    if settings.beam_size > 1 and session.history:
        st.subheader("Beam tree")
        st.plotly_chart(figures.beam_tree(_tree_steps(session, tok.target_pieces)), key="step_tree")
        st.caption("Blue: live, green: finished with </s>, yellow: stopped at the length limit, grey: pruned.")
    finished = session.finished
    if finished:
        st.subheader("Finished hypotheses")
        labels = [f"{tok.decode_target(h.tokens) or '∅'}  (score {h.normalized_score:.3f})" for h in finished]
        pick = st.radio("Open a hypothesis to see its attention", range(len(labels)), format_func=labels.__getitem__,
                        key="step_pick")
        hyp = finished[min(pick, len(finished) - 1)]
        st.markdown(f"**Result:** {tok.decode_target(hyp.tokens)}")
        apply_pending_head("step_att")
        attention_explorer(translator.attention_maps(source.ids, hyp.tokens), key="step_att")


main()

"""Decode step by step: greedy or beam search one token at a time, with candidates, attention and the beam tree."""

import streamlit as st

from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import TranslationError
from ui import figures, views
from ui.bidi import isolate
from ui.explorer import attention_explorer
from ui.models import source_language
from ui.text import code, plain
from ui.translation import bounded, decode_slot, follow_prefix, prepare
from ui.widgets import (
    chart,
    choice_box,
    current_translator,
    decode_turn,
    page_setup,
    search_settings,
    sentence_input,
    tokens_help,
)

DEFAULT_SENTENCE = "In the beginning God created the heaven and the earth."
ACTIONS = {"Next": DecodingSession.step, "Back": DecodingSession.back, "Run to end": DecodingSession.run_to_end,
           "Reset": DecodingSession.reset}


def _act(name: str) -> None:
    st.session_state.step_pending = name  # done in main(), inside a decode slot, before the buttons are drawn


def current_step(session, tok, src_pieces) -> None:
    step = session.current
    if step is None:
        st.info("Press **Next** to feed `<s>` and predict the first token.")
        return
    prefixes = [tuple(h.prefix) for h in step.live]  # a hypothesis is followed by its prefix, not by its rank
    picked = st.session_state.get("step_hyp")
    if picked is not None and follow_prefix(picked, prefixes) is None:
        st.info(f"The hypothesis you followed, {code(' '.join(tok.target_pieces(picked)))}, has left the beam "
                "(finished or pruned); showing the best live one.")
        st.session_state.step_hyp = prefixes[0]
    if len(prefixes) > 1:
        choice_box(st, "Hypothesis", prefixes, key="step_hyp", follow=lambda old, opts: follow_prefix(old, opts) or 0,
                   format_func=lambda p: f"{prefixes.index(p)}: {isolate(' '.join(tok.target_pieces(p)))}")
    hyp = step.live[prefixes.index(st.session_state.step_hyp)] if st.session_state.get("step_hyp") in prefixes \
        else step.live[0]
    prefix = tok.target_pieces(hyp.prefix)
    st.markdown(f"At step {session.n_steps} the decoder read **{plain(isolate(' '.join(prefix)))}** (log-prob "
                f"{hyp.score:.3f}); its newest token {code(isolate(prefix[-1]))} is the query whose attention is "
                "shown. Its candidates for the next token:")
    c1, c2 = st.columns(2)
    chart(c1, figures.candidates_bar(tok.target_pieces(hyp.candidates.tokens), hyp.candidates.probs,
                                     title=f"top {len(hyp.candidates.tokens)} next tokens"),
          key="step_cands", filename=f"step-{session.n_steps}-candidates")
    layer = c2.selectbox("Decoder layer", range(hyp.cross_attention.shape[0]), key="step_layer")
    chart(c2, figures.head_rows(hyp.cross_attention[layer].numpy(), src_pieces, title="cross-attention per head"),
          key="step_cross", filename=f"step-{session.n_steps}-cross-attention-layer-{layer}", theme=None)
    chart(c2, figures.head_rows(hyp.self_attention[layer].numpy(), prefix, title="self-attention per head"),
          key="step_self", filename=f"step-{session.n_steps}-self-attention-layer-{layer}", theme=None)
    views.step_head_view(hyp, prefix, src_pieces, layer, key="step_lines")


def main() -> None:
    page_setup("step")
    st.title("Decode step by step")
    translator = current_translator()
    if translator is None:
        return
    tok = translator.tokenizer
    text = sentence_input(f"{source_language(translator.checkpoint.metadata)} sentence", "step_text",
                          (st.session_state.get("tr_text") or "").strip() or DEFAULT_SENTENCE)
    settings = bounded(search_settings("step"))
    try:
        source = prepare(translator, text)
    except TranslationError as e:
        st.info(str(e))
        return
    for warning in source.warnings:
        st.warning(plain(warning))
    request = (str(translator.checkpoint.path), tuple(source.ids), settings)
    pending = st.session_state.pop("step_pending", None)
    try:
        with decode_turn() as on_wait, decode_slot(on_wait):
            if st.session_state.get("step_request") != request:
                st.session_state.step_session = DecodingSession(translator.model, source.ids, settings)
                st.session_state.pop("step_hyp", None)
                st.session_state.step_request = request
            elif pending is not None:
                ACTIONS[pending](st.session_state.step_session)
    except TranslationError as e:  # ServerBusy
        st.warning(str(e))
        return
    session = st.session_state.step_session
    cols = st.columns(len(ACTIONS))
    for col, name in zip(cols, ACTIONS):
        col.button(name, key=f"step_{name.lower().replace(' ', '_')}", on_click=_act, args=(name,),
                   disabled=session.done if name in ("Next", "Run to end") else name == "Back" and not session.n_steps,
                   width="stretch")
    live = [tok.decode_target(h.tokens) for h in session.live]
    st.markdown(f"**Step {session.n_steps}.** " + ("Done." if session.done else "Output so far: " + " | ".join(
        code(isolate(t)) if t else "∅" for t in live)))
    current_step(session, tok, source.pieces)
    tokens_help()
    if settings.beam_size > 1 and session.history:
        st.subheader("Beam tree")
        views.beam_tree(session, translator, source.ids, key="step_tree")
    finished = session.finished
    if finished:
        st.subheader("Finished hypotheses")
        labels = [f"{plain(isolate(tok.decode_target(h.tokens))) or '∅'}  (score {h.normalized_score:.3f})"
                  for h in finished]
        pick = st.radio("Open a hypothesis to see its attention", range(len(labels)), format_func=labels.__getitem__,
                        key="step_pick")
        hyp = finished[min(pick, len(finished) - 1)]
        st.markdown(f"**Result:** {plain(isolate(tok.decode_target(hyp.tokens)))}")
        with decode_turn() as on_wait, decode_slot(on_wait):
            maps = translator.attention_maps(source.ids, hyp.tokens)
        attention_explorer(maps, key="step_att")


main()

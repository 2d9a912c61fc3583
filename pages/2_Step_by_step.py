"""Decode step by step: greedy search, sampling or beam search a token at a time: candidates, attention, beam tree."""

import streamlit as st

import ui.step.forced_comparison as forced_comparison
from transformer.bidi import isolate
from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import TranslationError
from ui.shared.attention import svg_views
from ui.shared.attention.explorer import attention_explorer
from ui.shared.attention.lens_switch import NOTES, lens_switch, lensed, step_rows
from ui.shared.attention.query_rows import head_rows
from ui.shared.charts.show import chart
from ui.shared.models.catalog import source_language
from ui.shared.models.loading import current_translator, decode_turn
from ui.shared.models.translation_gate import bounded, decode_slot, prepare
from ui.shared.page import page_setup
from ui.shared.state import class_mode
from ui.shared.state.defaults import default_sentence
from ui.shared.state.page_state import link, link_problems, sentence_input, share
from ui.shared.state.search import search_settings
from ui.shared.state.sentences import typed_sentence
from ui.shared.text.plain import code, plain, score
from ui.shared.text.token_help import tokens_help
from ui.step import forcing, hypotheses
from ui.step.next_token import redraw, step_candidates

ACTIONS = ("Next", "Back", "Run to end", "Reset")  # taken by forcing.apply


def _act(name: str) -> None:
    st.session_state[forcing.PENDING] = name  # done in main(), inside a decode slot, before the buttons are drawn


def current_step(session, translator, src_pieces) -> None:
    tok = translator.tokenizer
    step = session.current
    if step is None:
        start = tok.target_pieces([session.specials.start])[0]  # <s>, or Marian's <pad>
        st.info(f"Press **Next** to feed `{start}` and predict the first token.")
        return
    prefixes = [tuple(h.prefix) for h in step.live]  # a hypothesis is followed by its prefix, not by its rank
    n_forced = len(session.prefix)
    hyp = step.live[prefixes.index(hypotheses.followed_prefix(prefixes, lambda p: isolate(" ".join(
        forcing.piece_labels(tok.target_pieces(p), 1, n_forced)))))]
    prefix = tok.target_pieces(hyp.prefix)
    n_read = min(n_forced, len(prefix) - 1)  # the forced pieces the step read (prefix[0]: the start token)
    labels = forcing.piece_labels(prefix, 1, n_read)  # the head views' key labels
    newest = code(isolate(prefix[-1]))
    if n_read == len(prefix) - 1 > 0:  # the query is a forced piece
        newest = f":violet-background[{forcing.FORCED_MARK}{newest}]"
    st.markdown(f"At step {session.n_steps} the decoder read {forcing.marked_pieces(prefix, 1, n_read)} "
                f"(log-probability {score(hyp.score)}); its newest token {newest} is the query whose "
                "attention is shown. Its candidates for the next token:")
    c1, c2 = st.columns(2)
    order = step_candidates(c1, step, step.live.index(hyp), tok.target_pieces, key="step_cands",
                            rows=session.settings.candidates + session.settings.do_sample,
                            filename=f"step-{session.n_steps}-candidates",
                            forced=session.n_steps <= len(session.prefix))
    forcing.force_panel(c1, session, hyp, tok.target_pieces, translator, order)
    lens = lens_switch(c2, "step")
    cross, self_rows, note = step_rows(session.model, session.src_ids, hyp.prefix, hyp.cross_attention,
                                       hyp.self_attention, lens, session.specials)
    layer = c2.selectbox("Decoder layer", range(cross.shape[0]), key="step_layer")
    sizes = class_mode.sizes(share=0.5)  # the right one of the page's two columns
    chart(c2, head_rows(cross[layer], src_pieces, title="cross-attention per head", sizes=sizes),
          key="step_cross", filename=f"step-{session.n_steps}-cross-attention-layer-{layer}")
    chart(c2, head_rows(self_rows[layer], labels, title="self-attention per head", sizes=sizes),
          key="step_self", filename=f"step-{session.n_steps}-self-attention-layer-{layer}")
    c2.caption(" ".join(filter(None, [NOTES[lens], note])))
    svg_views.step_head_view(hyp, labels, src_pieces, layer, key="step_lines")


def main() -> None:
    page_setup("step")
    st.title("Decode step by step")
    translator = current_translator()
    if translator is None:
        return
    tok = translator.tokenizer
    metadata = translator.checkpoint.metadata
    text = sentence_input(f"{source_language(metadata)} sentence", "step_text",
                          typed_sentence("tr_text") or default_sentence(metadata))
    settings = bounded(search_settings("step"))
    try:
        source = prepare(translator, text)
    except TranslationError as e:
        st.info(str(e))
        return
    for warning in source.warnings:
        st.warning(plain(warning))
    request = (str(translator.checkpoint.path), tuple(source.ids), settings)
    pending = st.session_state.pop(forcing.PENDING, None)
    linked, problems = forcing.link_prefix(translator, link())
    dropped: list[str] = []  # why the forced prefix was not kept
    try:
        with decode_turn() as on_wait, decode_slot(on_wait):
            if st.session_state.get("step_request") != request:
                previous = st.session_state.get("step_session")
                fresh = DecodingSession(translator.model, source.ids, settings, specials=translator.specials)
                st.session_state.step_session, dropped = forcing.start(fresh, previous, linked)
                redraw(previous, st.session_state.step_session)  # "Draw again": the new sample at the same step
                hypotheses.forget_followed()
                st.session_state.step_request = request
            elif pending is not None:
                session = st.session_state.step_session
                st.session_state.step_session = forcing.apply(session, pending)
                if st.session_state.step_session is not session:  # forced, or a forced piece taken back
                    hypotheses.forget_followed()
    except TranslationError as e:  # ServerBusy
        st.warning(str(e))
        return
    if linked is not None:  # the link's prefix, refused: a link problem like the others
        problems, dropped = problems + dropped, []
    link_problems(problems)
    for note in dropped:  # the session's prefix, after a new sentence, model or search
        st.info(note, icon=":material/edit_off:")
    session = st.session_state.step_session
    share(prefix=forcing.link_text(tok, session))
    cols = st.columns(len(ACTIONS))
    for col, name in zip(cols, ACTIONS):
        col.button(name, key=f"step_{name.lower().replace(' ', '_')}", on_click=_act, args=(name,),
                   disabled=session.done if name in ("Next", "Run to end") else name == "Back" and not session.n_steps,
                   width="stretch")
    live = [forcing.marked(tok, h.tokens, len(session.prefix)) for h in session.live]
    done = f"Done: {forcing.marked(tok, session.result().best.tokens, len(session.prefix))}" if session.done else ""
    st.markdown(f"**Step {session.n_steps}.** " + (done or "Output so far: " + " | ".join(live)))
    forcing.forced_note(session, translator)
    current_step(session, translator, source.pieces)
    tokens_help()
    if settings.beam_size > 1 and session.history:
        st.subheader("Beam tree")
        svg_views.beam_tree(session, translator, source.ids, key="step_tree", on_continue=forcing.continue_from,
                            marked=lambda tokens: forcing.marked(tok, tokens, len(session.prefix), False),
                            forced_mark=forcing.FORCED_MARK)
    finished = session.result().hypotheses  # the n best (all of them once done: the search's output)
    if finished:
        st.subheader("Finished hypotheses" if settings.nbest == 1 else f"The {settings.nbest} best finished hypotheses")
        labels = [hypotheses.nbest_label(forcing.marked(tok, h.tokens, len(session.prefix), False), h, settings)
                  for h in finished]
        hyp = hypotheses.opened_hypothesis(finished, labels)
        if note := hypotheses.penalty_note(settings):
            st.caption(note)
        st.markdown(f"**Result:** {forcing.marked(tok, finished[0].tokens, len(session.prefix), False)}")  # the winner
        if hyp is not finished[0]:
            st.markdown(f"**Opened below:** {forcing.marked(tok, hyp.tokens, len(session.prefix), False)}")
        with decode_turn() as on_wait, decode_slot(on_wait):
            maps = translator.attention_maps(source.ids, hyp.tokens)
        lens = st.session_state.get("step_lens", "raw")  # the switch above, at the current step
        attention_explorer(lensed(translator, maps, source.ids, hyp.tokens, lens, "step_att") or maps, key="step_att")
    forced_comparison.side_by_side(translator, session)  # own beside forced; nothing without a forced prefix


main()

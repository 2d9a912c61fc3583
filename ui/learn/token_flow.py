"""The Learn page's "one token through the whole model": pick an output token and a stage (both kept in the link,
`token=2&stage=dec.1.cross_attn`), and the package's flow view (`transformer.explain.views.token_flow`) draws every
stage from the embedding to the softmax with the model's numbers, at class mode's size when it is on."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from transformer.bidi import piece_labels
from transformer.charts.theme import NORMAL
from transformer.decoding.translate import Translation, Translator
from transformer.explain.flow import NeuronExamples, neuron_examples, token_flow, translation_inputs
from transformer.explain.views import stage_label, token_flow_view
from ui.shared.models.loading import decode_turn
from ui.shared.models.translation_gate import decode_slot
from ui.shared.state import class_mode
from ui.shared.state.linked_choices import seed_indexes
from ui.shared.state.page_state import choice_box, link, link_problems, share

MAX_HEIGHT = 900  # px of the view's frame; a taller flow scrolls inside it, never sideways
DEV_SENTENCES = 20  # the sentences whose pieces are searched for what fires a neuron
CLASS_FONT_PX, FONT_PX = class_mode.LABEL_PX, NORMAL.body  # the view's text, in class mode and not


def _labels(pieces: list[str]) -> list[str]:
    """Each piece marked for its direction alone (these lists are rarely neighbours in a sentence: no joiners)."""
    return [piece_labels([p])[0] for p in pieces]


def _seed_stage(keys: tuple[str, ...]) -> None:
    """The link's stage into the stage box, or a sentence saying it does not exist in this model."""
    wanted = link().get("stage")
    if wanted is None:
        return
    if wanted in keys:
        st.session_state["learn_flow_stage"] = wanted
    else:
        link_problems([f"Stage {wanted[:40]!r} in the link does not exist in this model: use one of "
                       f"{', '.join(keys)}."])


def _neurons(translator: Translator, flow, sentences: list[str]) -> list[NeuronExamples]:
    """Where each stage's busiest neurons fire most in `sentences` and their greedy translations."""
    pairs = [translation_inputs(translator.translate(text), translator.specials) for text in sentences]
    return [ex for stage in flow.stages if stage.neurons for ex in
            neuron_examples(translator.model, pairs, stage.side, stage.layer, [n.index for n in stage.neurons])]


def flow_section(translator: Translator, translation: Translation, examples: Callable[[], list[str]]) -> None:
    """examples: the model's test sentences, loaded only when asked for (the neurons' pieces)."""
    st.header("4. One token through the whole model")
    st.markdown("Follow one output token from the embeddings to the softmax: the source piece it attends to most "
                "becomes a vector (embedding × √d + positional encoding) and passes through every encoder layer; "
                "the decoder reads the token before it, attends to itself and to the source, and the last vector "
                "becomes one logit per word and a probability after the softmax. Every strip is a vector of the "
                "model's own numbers (hover for one); each panel is a layer; move the temperature to see what "
                "sampling would draw.")
    out = translation.target_pieces
    if not out:
        st.info("The translation is empty: there is no output token to follow.")
        return
    seed_indexes({"token": ("learn_flow_token", len(out))})
    c1, c2 = st.columns(2)
    token = choice_box(c1, "Output token", list(range(len(out))), key="learn_flow_token",
                       format_func=lambda i: f"{i}: {out[i]}", follow=lambda old, opts: 0)
    with decode_turn() as on_wait, decode_slot(on_wait):
        flow = token_flow(translator.model, *translation_inputs(translation, translator.specials), token,
                          specials=translator.specials)
    _seed_stage(flow.keys)
    default = next(k for k in reversed(flow.keys) if k.startswith("dec.") or k == "tgt.embed")
    if st.session_state.get("learn_flow_stage") not in flow.keys:
        st.session_state["learn_flow_stage"] = default
    stage = choice_box(c2, "Stage", list(flow.keys), key="learn_flow_stage", format_func=stage_label)
    share(token=str(token), stage=stage)
    neurons: list[NeuronExamples] = []
    if st.checkbox(f"Find the pieces that fire the busiest neurons in {DEV_SENTENCES} test sentences",
                   key="learn_flow_neurons"):
        sentences = examples()[:DEV_SENTENCES]
        if not sentences:
            st.info("The corpus this model was trained on cannot be loaded here, so there are no test sentences.")
        with decode_turn() as on_wait, decode_slot(on_wait):
            neurons = _neurons(translator, flow, sentences)
    tok = translator.tokenizer
    view = token_flow_view(flow, lambda ids: _labels(tok.source_pieces(ids)),
                           lambda ids: _labels(tok.target_pieces(ids)), stage=stage, neurons=neurons,
                           font_px=CLASS_FONT_PX if class_mode.is_on() else FONT_PX)
    st.iframe(view.document(), height=min(view.height, MAX_HEIGHT))

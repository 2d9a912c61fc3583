"""The lens switch beside the attention pickers: which reading of attention the maps show (raw weights,
norm-weighted, Shift-Att, rollout, ALTI+, value zeroing; `transformer.explain.lenses`), kept in the link as
`lens=`. A page hands its maps through `lens_view` and draws whatever comes back, gold links included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import streamlit as st

from transformer.decoding.translate import Translation, TranslationAttention, TranslationError, Translator
from transformer.explain.lenses import HEADLESS, LABELS, LENSES, LensMaps, as_attention, lens_maps
from ui.text import plain
from ui.translation import decode_slot
from ui.widgets import decode_turn, link, link_problems, share

PARAM = "lens"
MEAN = -1  # the explorer's "mean of heads" (ui.explorer.MEAN)
MAX_ZEROED = 120  # value zeroing re-runs each layer once per token: longer sentences would keep a slot too long
MEMO = "_lens_memo"  # session state: the last lensed maps, so that a rerun does not compute them again
MEMO_SIZE = 8
NOTES = {
    "raw": "The attention weights themselves: alpha_ij, each row sums to 1.",
    "norm": "Each weight times the size of what that key sends through the head, ||alpha_ij f(x_j)|| with f the value "
            "projection and the head's slice of W^O, rows rescaled to 1 (Kobayashi et al., 2020). A key that gets "
            "weight but sends a tiny vector (often </s> or punctuation) fades.",
    "shift": "Cross-attention row t is the one of the next step, whose decoder input is token t (Chen et al., 2020): "
             "the decoder may look at a word's source once it has read it. The last token (</s>) gets the row of one "
             "extra step that reads it. Encoder and decoder self-attention are the raw weights.",
    "shift_norm": "Shift-Att over the norm-weighted maps: cross-attention shifted by one step, every map weighted "
                  "by the norms of what it moves.",
    "rollout": "Attention rollout with the residual (Abnar & Zuidema, 2020): how much each position draws on each "
               "input token, through every layer below; cross-attention is carried through the encoder's rollout to "
               "the source words. One map per layer, of all heads together.",
    "alti": "ALTI+ (Ferrando et al., 2022): each output token's contributions from the source words (cross-attention "
            "map) and from the target prefix (decoder self-attention map), through the whole model; a token's "
            "two maps together sum to 1. One map per layer, of all heads together.",
    "value_zeroing": "Value zeroing (Mohebbi et al., 2023): how much a token's layer output changes (cosine distance) "
                     "when one key's value vector is zeroed in that layer, rows rescaled to 1. One map per layer.",
}


def read_lens(params: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """The lens of a link, if it names one."""
    if PARAM not in params:
        return None, []
    if params[PARAM] in LENSES:
        return params[PARAM], []
    return None, [f"Unknown lens {params[PARAM]!r} in the link (use {', '.join(LENSES)})."]


def lens_switch(container, key: str) -> str:
    """The lens select box (restored from the link on a page's first run), its choice written to the link."""
    lens, problems = read_lens(link())
    link_problems(problems)
    if lens is not None:
        st.session_state[f"{key}_lens"] = lens
    lens = container.selectbox("Lens", list(LENSES), format_func=LABELS.get, key=f"{key}_lens",
                               help="How to read what each position draws on: the raw weights, or one of the "
                                    "methods that also weigh what each position moves (see the note under it).")
    share(**{PARAM: None if lens == "raw" else lens})
    return lens


def _memo() -> dict:
    return st.session_state.setdefault(MEMO, {})


def lensed_maps(translator: Translator, source_ids: Sequence[int], token_ids: Sequence[int], lens: str) -> LensMaps:
    """The lens's maps of one sentence, remembered per session (the model copy, the sentence and the lens)."""
    memo_key = (id(translator.model), str(translator.checkpoint.path), tuple(source_ids), tuple(token_ids), lens)
    memo = _memo()
    if memo_key not in memo:
        with st.spinner(f"Computing {LABELS[lens]}…"), decode_turn() as on_wait, decode_slot(on_wait):
            memo[memo_key] = lens_maps(translator.model, source_ids, token_ids, lens)
        while len(memo) > MEMO_SIZE:
            memo.pop(next(iter(memo)))
    return memo[memo_key]


def lensed(translator: Translator, att: TranslationAttention, source_ids: Sequence[int], token_ids: Sequence[int],
           lens: str, key: str) -> TranslationAttention | None:
    """att as `lens` reads it; None (and a note) when it cannot be computed here."""
    if lens == "raw":
        return att
    if lens == "value_zeroing" and len(source_ids) + len(token_ids) > MAX_ZEROED:
        st.info(f"Value zeroing re-runs every layer once per token; the app does it for sentences of up to "
                f"{MAX_ZEROED} source and output pieces together (this one has {len(source_ids) + len(token_ids)}). "
                "The command line has no limit.")
        return None
    if lens in HEADLESS and st.session_state.get(f"{key}_head", MEAN) not in (MEAN, 0):
        st.session_state[f"{key}_head"] = MEAN  # one map per layer: head pickers have nothing else to show
    try:
        maps = lensed_maps(translator, source_ids, token_ids, lens)
    except TranslationError as e:  # every decode slot busy
        st.warning(plain(str(e)))
        return None
    return as_attention(att, maps)


def lens_view(translator: Translator, att: TranslationAttention, source_ids: Sequence[int],
              token_ids: Sequence[int], key: str) -> TranslationAttention:
    """The lens switch, its note, and att as the chosen lens reads it (raw when it cannot be computed)."""
    lens = lens_switch(st, key)
    st.caption(NOTES[lens] + ("" if lens == "raw" else " Gold links (teaching model) are drawn over any lens."))
    return lensed(translator, att, source_ids, token_ids, lens, key) or att


def translation_view(translator: Translator, translation: Translation, key: str) -> Translation:
    """`lens_view` over a Translation: the same translation with the lens's maps."""
    att = lens_view(translator, translation.attention, translation.source_ids, translation.token_ids, key)
    return translation if att is translation.attention else dataclasses.replace(translation, attention=att)


def lens_pair(translator: Translator, translation: Translation, other: Translator, other_translation: Translation,
              key: str) -> tuple[TranslationAttention, TranslationAttention]:
    """One lens switch over two models' translations (e.g. heads switched off): both read with the same lens,
    or both raw when the lens cannot be computed for either."""
    first = lens_view(translator, translation.attention, translation.source_ids, translation.token_ids, key)
    if first is translation.attention:
        return first, other_translation.attention
    second = lensed(other, other_translation.attention, other_translation.source_ids, other_translation.token_ids,
                    st.session_state[f"{key}_lens"], key)
    return (first, second) if second is not None else (translation.attention, other_translation.attention)

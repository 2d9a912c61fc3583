"""The lens switch beside the attention pickers: which reading of attention the maps show (raw weights,
norm-weighted, Shift-Att, rollout, ALTI+, value zeroing; `transformer.explain.lenses`), kept in the link as
`lens=`. A page hands its maps through `lens_view` and draws whatever comes back, gold links included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import streamlit as st
import torch
from torch import Tensor

from transformer.data.tokenizer import SpecialIds
from transformer.decoding.translate import Translation, TranslationAttention, TranslationError, Translator
from transformer.explain.checks import MAX_ZEROED  # value zeroing re-runs each layer once per token
from transformer.explain.lenses import HEADLESS, LABELS, LENSES, LayerMaps, LensMaps, as_attention, lens_maps
from transformer.model.layers import Transformer
from ui.shared.attention.query_rows import LAYER_ROW, QueryRows
from ui.shared.models.loading import decode_turn
from ui.shared.models.translation_gate import decode_slot
from ui.shared.state.links import quoted
from ui.shared.state.page_state import link, link_problems, share
from ui.shared.text.plain import plain

PARAM = "lens"
UNSHIFTED = {"shift": "raw", "shift_norm": "norm"}  # what a decoding step shows for a Shift-Att lens
MEAN = -1  # the explorer's "mean of heads" (ui.shared.attention.explorer.MEAN)
MEMO = "_lens_memo"  # session state: the last lensed maps, so that a rerun does not compute them again
MEMO_SIZE = 8
LAYER_MAPS = "{}_layer_maps"  # session state per explorer key: the lens's own layer maps (LensMaps.layer_maps) or none
NOTES = {
    "raw": "The attention weights themselves: alpha_ij, each row sums to 1.",
    "norm": "Each weight times the size of what that key sends through the head, ||alpha_ij f(x_j)|| with f the value "
            "projection and the head's slice of W^O, rows rescaled to 1 (Kobayashi et al., 2020). A key that gets "
            "weight but sends a tiny vector (often </s> or punctuation) fades. The heads' maps are each head's own; "
            "the layer's map (\"mean of heads\" in the Head picker, \"mean\" in the AER grid) is the paper's "
            "layer-level one, the norm of the vector all heads together send, ||Σ_h alpha^h_ij f^h(x_j)||, rows "
            "rescaled to 1: heads that send opposite vectors cancel there, where a mean of the heads' maps adds them.",
    "shift": "Cross-attention row t is the one of the next step, whose decoder input is token t (Chen et al., 2020): "
             "the decoder may look at a word's source once it has read it. The last token (</s>) gets the row of one "
             "extra step that reads it. Encoder and decoder self-attention are the raw weights.",
    "shift_norm": "Shift-Att over the norm-weighted maps: cross-attention shifted by one step, every map weighted "
                  "by the norms of what it moves.",
    "rollout": "Attention rollout with the residual (Abnar & Zuidema, 2020): how much each position draws on each "
               "input token, through every layer below. Cross-attention to the source is each decoder layer's mean "
               "cross-attention times the encoder's rollout: no residual and nothing through the decoder's "
               "self-attention, so it says where that layer reads in the source words, not how much of the output "
               "token comes from them (ALTI+ carries both). One map per layer, of all heads together.",
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
    return None, [f"Unknown lens {quoted(params[PARAM])} in the link (use {', '.join(LENSES)})."]


def lens_switch(container, key: str) -> str:
    """The lens select box, restored from the link, its choice written to the link.

    The link is read on a page's first run, or when the box is first drawn in this session: on Decode step by
    step the box appears only once a hypothesis finishes, runs after the link was opened."""
    params = link()
    if f"{key}_lens" not in st.session_state and PARAM in st.query_params:
        params = {PARAM: st.query_params[PARAM]}
    lens, problems = read_lens(params)
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


def lensed_maps(model: Transformer, source_ids: Sequence[int], token_ids: Sequence[int], lens: str,
                specials: SpecialIds) -> LensMaps:
    """The lens's maps of one sentence, remembered per session (the model, which the app caches, or a changed
    copy of it, the sentence and the lens)."""
    memo_key = (id(model), model.config, tuple(source_ids), tuple(token_ids), lens)
    memo = _memo()
    if memo_key not in memo:
        with st.spinner(f"Computing {LABELS[lens]}…"), decode_turn() as on_wait, decode_slot(on_wait):
            memo[memo_key] = lens_maps(model, source_ids, token_ids, lens, specials=specials)
        while len(memo) > MEMO_SIZE:
            memo.pop(next(iter(memo)))
    return memo[memo_key]


def lensed(translator: Translator, att: TranslationAttention, source_ids: Sequence[int], token_ids: Sequence[int],
           lens: str, key: str) -> TranslationAttention | None:
    """att as `lens` reads it; None (and a note) when it cannot be computed here."""
    st.session_state.pop(LAYER_MAPS.format(key), None)
    if lens == "raw":
        return att
    if lens in HEADLESS and st.session_state.get(f"{key}_head", MEAN) not in (MEAN, 0):
        st.session_state[f"{key}_head"] = MEAN  # one map per layer: head pickers have nothing else to show
    maps = _computed(translator.model, source_ids, token_ids, lens, translator.specials)
    if maps is not None and maps.layer_maps is not None:
        st.session_state[LAYER_MAPS.format(key)] = maps.layer_maps
    return None if maps is None else as_attention(att, maps)


def layer_maps(key: str) -> LayerMaps | None:
    """The lens's own map of each layer (the norm-weighted lens's ||Σ_h alpha^h_ij f^h(x_j)||) for the maps that
    `lensed` last gave the explorer of `key`; None where the layer's map is the mean of its heads."""
    return st.session_state.get(LAYER_MAPS.format(key))


def _computed(model: Transformer, source_ids: Sequence[int], token_ids: Sequence[int], lens: str,
              specials: SpecialIds) -> LensMaps | None:
    """lensed_maps, or None and a note when the app does not compute it (too long, or every slot busy)."""
    if lens == "value_zeroing" and len(source_ids) + len(token_ids) > MAX_ZEROED:
        st.info(f"Value zeroing re-runs every layer once per token; the app does it for sentences of up to "
                f"{MAX_ZEROED} source and output pieces together (this one has {len(source_ids) + len(token_ids)}). "
                "The command line has no limit.")
        return None
    try:
        return lensed_maps(model, source_ids, token_ids, lens, specials)
    except TranslationError as e:  # every decode slot busy
        st.warning(plain(str(e)))
        return None


def lens_view(translator: Translator, att: TranslationAttention, source_ids: Sequence[int],
              token_ids: Sequence[int], key: str) -> TranslationAttention:
    """The lens switch, its note, and att as the chosen lens reads it (raw when it cannot be computed)."""
    lens = _switch_row(key)
    return lensed(translator, att, source_ids, token_ids, lens, key) or att


def _switch_row(key: str) -> str:
    """The lens switch with its note beside it; the chosen lens."""
    c1, c2 = st.columns([1.4, 3], vertical_alignment="center")
    lens = lens_switch(c1, key)
    c2.caption(NOTES[lens])
    return lens


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
                    st.session_state[f"{key}_lens"], f"{key}_other")  # its layer maps kept apart from the first's
    return (first, second) if second is not None else (translation.attention, other_translation.attention)


def lens_outputs(translator: Translator, source_ids: Sequence[int],
                 outputs: Mapping[str, tuple[Sequence[int], TranslationAttention]], key: str,
                 ) -> tuple[str, dict[str, TranslationAttention]]:
    """One lens switch over several outputs of one source (greedy, beam, a reference): the lens they are read
    with and their maps, all through that lens, or all raw ("raw") when it cannot be computed for one of them."""
    lens = _switch_row(key)
    read = {name: lensed(translator, att, source_ids, ids, lens, key) for name, (ids, att) in outputs.items()}
    if any(att is None for att in read.values()):
        return "raw", {name: att for name, (_, att) in outputs.items()}
    return lens, read


@dataclasses.dataclass(frozen=True)
class StepRows:
    """One family's query rows at a decoding step, per decoder layer: heads (L, H', Lk), and the layers' own rows
    (L, Lk) where the lens defines them (norm-weighted), else None. Indexed by layer as the heads' array is."""

    heads: np.ndarray
    layer: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.heads.shape

    def __getitem__(self, layer: int) -> QueryRows:
        return QueryRows(self.heads[layer], None if self.layer is None else self.layer[layer])


LAYER_ROW_NOTE = (f"The last row, “{LAYER_ROW}”, is the layer's own map, the norm of the vector all heads "
                  "together send, ||Σ_h alpha^h_ij f^h(x_j)||, rescaled to 1 (Kobayashi et al.'s layer-level measure); "
                  "the rows above it are each head's own.")


def step_rows(model: Transformer, source_ids: Sequence[int], prefix: Sequence[int], cross: Tensor, self_rows: Tensor,
              lens: str, specials: SpecialIds) -> tuple[StepRows, StepRows, str]:
    """A decoding step's query rows as `lens` reads them: cross (L, H', S), self (L, H', len(prefix)), each with
    the layer's own row where the lens has one, and a note.

    The query reads the prefix's last token; a pass over the prefix gives its rows (the token fed after it, which
    only a later row could read, changes nothing). Shift-Att needs the token this step has not chosen yet, so the
    step shows the lens below the shift."""
    below = UNSHIFTED.get(lens, lens)
    note = (f"{LABELS[lens]} reads the step after a token is chosen; this step's rows are shown {LABELS[below]}."
            if below != lens else "")
    maps = None if below == "raw" else _computed(model, source_ids, [*prefix[1:], specials.eos], below, specials)
    if maps is None:
        return StepRows(cross.numpy()), StepRows(self_rows.numpy()), note
    stack = lambda ms: torch.stack([m[:, -1] for m in ms]).float().cpu().numpy()  # noqa: E731  (L, H', Lk)
    own = maps.layer_maps
    if own is None:
        return StepRows(stack(maps.cross)), StepRows(stack(maps.dec_self)), note
    return (StepRows(stack(maps.cross), stack(own.cross)[:, 0]),  # own: (L, 1, Lk) -> (L, Lk)
            StepRows(stack(maps.dec_self), stack(own.dec_self)[:, 0]), " ".join(filter(None, [note, LAYER_ROW_NOTE])))


def report_maps(model: Transformer, translation: Translation, lenses: Sequence[str], specials: SpecialIds,
                ) -> tuple[dict[str, LensMaps], list[str]]:
    """The lenses' maps of a translation for the HTML report (no streamlit: the download's thread), and a note for
    each lens left out (value zeroing on a sentence over MAX_ZEROED pieces)."""
    maps, skipped = {}, []
    for lens in lenses:
        if lens == "value_zeroing" and len(translation.source_ids) + len(translation.token_ids) > MAX_ZEROED:
            skipped.append(f"{LABELS[lens]} is left out: the app computes it for up to {MAX_ZEROED} source and "
                           "output pieces together (python -m transformer.explain.lenses has no limit).")
            continue
        with decode_slot():
            maps[lens] = lens_maps(model, translation.source_ids, translation.token_ids, lens, specials=specials)
    return maps, skipped


def split_note(key: str) -> None:
    """Under the teaching model's AER panel: which maps its two grids score when a lens is on."""
    lens = st.session_state.get(f"{key}_lens", "raw")
    if lens != "raw":
        st.caption(f"“This sentence” scores the maps as {LABELS[lens]} reads them; the test-split grid scores the raw "
                   "weights. `python -m transformer.explain.lenses --checkpoint checkpoints/en-fr-teaching` scores "
                   "every lens on the test split, for alignment and for faithfulness to occlusion.")

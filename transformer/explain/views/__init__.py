"""Views of attention that display themselves: in Jupyter (`_repr_html_`, as BertViz's `head_view`), in a browser
(`View.document()`), in the app (streamlit.components) and in the HTML report. Each is one self-contained
HTML fragment of SVG and inline JS, no CDN, built from the same tensors as the app's heatmaps, in the font, sizes
and colours of the charts' theme (`transformer.charts.theme`).

- `head_view`, `model_view`: attention as lines between two columns of tokens (`lines`)
- `heatmaps`: every head of every layer as a heatmap labelled with its tokens: an Altair chart
  (`transformer.charts.grid.attention_grid`), which Jupyter shows through Altair's renderer
- `cell_flow`: Eq. 1 for one query of one head, stage by stage, with the model's numbers (`flow`)
- `beam_tree`: the beam search tree, laid out by step and rank (`tree`)
- `one_token`: one output token through the whole model, embedding to softmax, with a temperature slider
  (`token_flow`, over `transformer.explain.flow`)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import altair as alt

import transformer.explain.checks as checks
from transformer.charts.grid import attention_grid
from transformer.charts.theme import NORMAL
from transformer.decoding.search import HypothesisStep, SearchStep
from transformer.decoding.translate import TranslationAttention, Translator
from transformer.explain.arithmetic import CellArithmetic
from transformer.explain.views.flow import flow_view, input_name
from transformer.explain.views.lines import as_maps, head_view_from, model_view_from
from transformer.explain.views.svg import View, column_is_rtl
from transformer.explain.views.token_flow import stage_label, token_flow_view
from transformer.explain.views.tree import beam_tree_from, beam_tree_svg, node_prefix, winning_nodes

FAMILIES = ("enc_self", "dec_self", "cross")
NAMES = {"enc_self": ("source queries", "source keys"), "dec_self": ("target queries", "target keys (read)"),
         "cross": ("target queries", "source keys")}
TITLES = {"enc_self": "encoder self-attention", "dec_self": "decoder self-attention", "cross": "cross-attention"}


def family_labels(attention: TranslationAttention, family: str) -> tuple[list[str], list[str]]:
    """(query labels, key labels): a decoder query is labelled with the token it emitted, decoder self-attention's
    keys with the tokens the decoder read (<s> first)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    return {"enc_self": (attention.source_pieces, attention.source_pieces),
            "dec_self": (attention.target_pieces, attention.target_input_pieces),
            "cross": (attention.target_pieces, attention.source_pieces)}[family]


def _maps(attention: TranslationAttention, family: str):
    import torch

    return torch.stack(getattr(attention, family))  # (L, H, Lq, Lk)


def head_view(attention: TranslationAttention, family: str = "cross", layer: int = 0,
              heads: Sequence[int] | None = None) -> View:
    """Token lines of one family of a translation's attention (`Translator.translate(..., attention=True)`)."""
    rows, cols = family_labels(attention, family)
    return head_view_from(_maps(attention, family), rows, cols, layer=layer, heads=heads,
                          query_name=NAMES[family][0], key_name=NAMES[family][1])


def model_view(attention: TranslationAttention, family: str = "cross") -> View:
    rows, cols = family_labels(attention, family)
    return model_view_from(_maps(attention, family), rows, cols, query_name=NAMES[family][0],
                           key_name=NAMES[family][1])


def heatmaps_from(weights, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str = "",
                  layers: Sequence[int] | None = None, query_name: str = "query",
                  key_name: str = "key") -> alt.TopLevelMixin:
    """Every head of every layer (or of `layers`) of maps (L, H, Lq, Lk) as heatmaps labelled with the tokens, a
    row of heads per layer: an Altair chart (a notebook shows it through Altair's renderer, and
    `transformer.charts.render` draws it as SVG or PNG). The weights must match the labels and be finite, `layers`
    be layers of the maps."""
    maps = as_maps(weights, len(query_labels), len(key_labels))
    layers = checks.indices(layers, "layers", maps.shape[0])
    return attention_grid(maps, query_labels, key_labels, layers=layers, title=title, row_title=query_name,
                          col_title=key_name)


def heatmaps(attention: TranslationAttention, family: str = "cross",
             layers: Sequence[int] | None = None) -> alt.TopLevelMixin:
    """Every head of one family of a translation's attention as labelled heatmaps (`heatmaps_from`)."""
    rows, cols = family_labels(attention, family)
    return heatmaps_from(_maps(attention, family), rows, cols, layers=layers, title=TITLES[family],
                         query_name=NAMES[family][0], key_name=NAMES[family][1])


def step_head_view(hypothesis: HypothesisStep, prefix_pieces: Sequence[str], source_pieces: Sequence[str],
                   family: str = "cross", layer: int = 0, layer_picker: bool = True) -> View:
    """The head view of one decoding step: the newest token of the prefix is the query, its lines go to the source
    (cross) or to the prefix it read (dec_self)."""
    if family not in ("cross", "dec_self"):
        raise ValueError(f"family must be 'cross' or 'dec_self' for a decoding step, got {family!r}")
    rows = hypothesis.cross_attention if family == "cross" else hypothesis.self_attention  # (L, H, Lk)
    if rows is None:
        raise ValueError("this step was taken without recording attention")
    keys = source_pieces if family == "cross" else prefix_pieces
    query = len(prefix_pieces) - 1
    return head_view_from(rows[:, :, None, :], prefix_pieces, keys, layer=layer, focus=query, query_positions=[query],
                          query_name="the prefix (query: the newest token)", key_name=NAMES[family][1],
                          layer_picker=layer_picker)


def beam_tree(steps: Sequence[SearchStep], pieces: Callable[[list[int]], list[str]],
              best: Sequence[int] | None = None, forced: int = 0) -> View:
    """The tree of a recorded search (`DecodingSession.history`, or `DecodeResult.steps`); forced: how many first
    steps emitted a forced prefix (`DecodingSession.prefix`), marked."""
    return beam_tree_from(steps, pieces, best, forced=forced)


def cell_flow(cell: CellArithmetic, query_label: str, key_labels: Sequence[str], key: int | None = None, *,
              reveal: str = "all", compact: bool = False) -> View:
    """Eq. 1 as one picture for a cell computed by `transformer.explain.cell_arithmetic` (`compact`: its query's
    input, q and output above the key rows, for a narrow or zoomed page)."""
    return flow_view(cell, query_label, key_labels, key, reveal=reveal, compact=compact)


def one_token(translator: Translator, text: str, token: int = 0, *, stage: str | None = None, seed: int = 0,
              font_px: int = NORMAL.body) -> View:
    """Output token `token` of the translation of `text` (greedy search) through the whole model: the flow view
    (`transformer.explain.flow.token_flow`) with `stage` open."""
    from transformer.explain.flow import token_flow, translation_inputs

    translation = translator.translate(text)
    flow = token_flow(translator.model, *translation_inputs(translation, translator.specials), token,
                      specials=translator.specials)
    tok = translator.tokenizer
    return token_flow_view(flow, tok.source_pieces, tok.target_pieces, stage=stage, seed=seed, font_px=font_px,
                           title=f"{text} → {translation.text}")


__all__ = ["FAMILIES", "View", "beam_tree", "beam_tree_svg", "cell_flow", "column_is_rtl", "family_labels",
           "flow_view", "head_view", "head_view_from", "heatmaps", "heatmaps_from", "input_name",
           "model_view", "model_view_from", "node_prefix", "one_token", "stage_label", "step_head_view",
           "token_flow_view", "winning_nodes"]

"""The attention explorer of a translation: family, layer and head pickers, one heatmap, the model view of every
layer and head, and the downloads. Its state is shared in the page's link (att, layer, head, hide).

A page draws it with `attention_explorer(translation.attention, key=...)`; views of other kinds of maps (e.g.
gold alignments of a teaching model) can sit beside it the same way, each with its own key prefix.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from transformer.charts.grid import head_grid
from transformer.charts.heatmap import heatmap
from transformer.decoding.translate import TranslationAttention
from transformer.explain import Link, link_cells, piece_words
from transformer.explain.lenses import HEADLESS
from ui.shared.attention import families, lens_switch, svg_views
from ui.shared.attention.families import FAMILIES
from ui.shared.charts.show import chart, selected
from ui.shared.state import class_mode, links
from ui.shared.state.page_state import choice_box, link, link_problems, share

MEAN = -1  # the Head picker's "mean of heads" (not None: a select box shows None as "nothing chosen")
CAPTIONS = {
    "enc_self": "Rows are source queries, columns source keys: how much each source token draws on every other one "
                "while the encoder builds its representation. Nothing is hidden from it but padding.",
    "dec_self": "Rows are target queries, columns the tokens the decoder had read (`<s>` first, `<pad>` in a "
                "Marian model): the causal mask hides later positions, so the upper triangle is 0. A row is "
                "labelled with the token its query emitted; that query read the token before it, which the hover "
                "names.",
    "cross": "Rows are target queries, columns source keys: where the decoder looked in the source while writing "
             "each output token. A row is labelled with the token its query emitted; that query read the token "
             "before it (`<s>` first, `<pad>` in a Marian model), which the hover names.",
}
NAMES = {"enc_self": ("source query", "source key"), "dec_self": ("target query", "target key"),
         "cross": ("target query", "source key")}


def _restore(att: TranslationAttention, key: str, n_layers: dict[str, int], n_heads: int) -> None:
    """The link's family, layer, head and toggle, before their widgets are drawn. Maps of one map per layer (a
    layer-level lens: rollout, ALTI+, value zeroing) have no head to restore: the link's is ignored, with a note
    when it names one."""
    headless = st.session_state.get(f"{key}_lens") in HEADLESS or n_heads == 1  # the page's lens switch, drawn above
    values, problems = links.read_view(link(), n_layers, n_heads, headless)
    if headless:
        values.pop("head", None)
    link_problems(problems)
    names = {"family": f"{key}_family", "layer": f"{key}_layer", "hide": f"{key}_hide"}
    for name, value in values.items():
        if name == "head":
            st.session_state[f"{key}_head"] = MEAN if value is None else value
        else:
            st.session_state[names[name]] = value


def _picked_in_model_view(key: str) -> None:
    """on_select of the model view: open the clicked small map in the pickers above."""
    pick = selected(f"{key}_model_view", "head")
    if pick is not None:
        st.session_state[f"{key}_layer"], st.session_state[f"{key}_head"] = int(pick["layer"]), int(pick["head"])


def attention_explorer(att: TranslationAttention, key: str, gold: frozenset[Link] | None = None) -> None:
    """Family, layer and head pickers, one heatmap, the model view and the export buttons. With `gold` word links
    (a sentence of the teaching grammar), cross-attention maps mark the gold cells."""
    n_layers = {f: len(getattr(att, f)) for f in FAMILIES}
    n_heads = att.cross[0].shape[0]
    _restore(att, key, n_layers, n_heads)
    if class_mode.is_on():  # at the class's size the toggle's label needs a row of its own
        (c1, c2, c3), c4 = st.columns([2, 1, 1.5]), st.container()
    else:
        c1, c2, c3, c4 = st.columns([2, 1, 1.5, 1.5])  # wide enough for "mean of heads" and the toggle's label
    family = c1.radio("Attention", list(FAMILIES), format_func=FAMILIES.get, key=f"{key}_family")
    layer = choice_box(c2, "Layer", list(range(n_layers[family])), key=f"{key}_layer", format_func=lambda i: f"{i}",
                       follow=lambda old, opts: min(old or 0, len(opts) - 1))
    head = None  # one map per layer: no head to pick, the layer's map is of all heads together
    if n_heads > 1:
        picked = c3.selectbox("Head", [MEAN, *range(n_heads)], key=f"{key}_head",
                              format_func=lambda h: "mean of heads" if h == MEAN else f"head {h}")
        head = None if picked == MEAN else picked
    hide = c4.toggle("Hide special tokens", key=f"{key}_hide",
                     help="Drop the <s>, </s> and <pad> rows and columns; rows then sum to less than 1.")
    share(**{**links.view_params(family, layer, head, hide), **({} if n_heads > 1 else {"head": None})})
    matrix, rows, cols = families.matrix(att, family, layer, head, hide_special=hide)
    own = lens_switch.layer_maps(key) if n_heads > 1 and head is None else None
    if own is not None:  # the lens's own layer map (norm-weighted: ||Σ_h alpha^h_ij f^h(x_j)||), not the heads' mean
        matrix = families.layer_matrix(getattr(own, family), att, family, layer, hide_special=hide)
    if matrix.size == 0:
        st.info("Nothing left to show without the special tokens.")
        return
    head_name = ("all heads together" if n_heads == 1 else f"head {head}" if head is not None else
                 "all heads' summed vectors" if own is not None else "mean of heads")
    title = f"{FAMILIES[family]}, layer {layer}, {head_name}"
    notes = families.row_notes(att, family, hide_special=hide)
    query_name, key_name = NAMES[family]
    gold_cells = link_cells(gold, piece_words(cols), piece_words(rows)) if gold is not None and family == "cross" \
        else []
    drawn = heatmap(matrix, rows, cols, title=title, row_title=query_name, col_title=key_name, notes=notes,
                    note_title=families.NOTE_TITLE, outlines={"gold link": gold_cells}, sizes=class_mode.sizes())
    chart(st, drawn, key=f"{key}_heatmap", filename=f"{family}-layer-{layer}-{head_name}")
    sums = ("each row sums to 1" if not hide else
            "with the special tokens hidden a row sums to less than 1: the rest went to <s> or </s>")
    gold_note = (" Orange outlines mark the grammar's gold links: where a perfect alignment head would look."
                 if gold is not None and family == "cross" else "")
    st.caption(f"{CAPTIONS[family]} Darker is more weight; {sums}.{gold_note} The chart's download button "
               "(top right, on hover) saves the picture as PNG (SVG: see the sidebar).")
    with st.expander("Token lines: the same weights as lines between the tokens (head view)", expanded=True):
        svg_views.head_view(att, family, layer, head, hide)
    # tracked, so that the grid is built and drawn only while the expander is open
    model_view = st.expander("Model view: every layer and head", key=f"{key}_model_view_open", on_change="rerun")
    with model_view:
        if model_view.open and st.radio("Draw as", ["maps", "lines"], horizontal=True, key=f"{key}_model_kind",
                                        format_func={"maps": "small heatmaps", "lines": "token lines"}.get) == "lines":
            svg_views.model_view(att, family, hide)
        elif model_view.open:
            grid, _, _ = families.every_head(att, family, hide_special=hide)
            chart(st, head_grid(grid, select="head", sizes=class_mode.sizes()), key=f"{key}_model_view",
                  filename=f"{family}-every-layer-and-head", on_select=partial(_picked_in_model_view, key))
            st.caption("Click a small map to open that layer and head above. Heads of one layer often "
                       "specialise: one looks at the previous token, one at the next, one at the word being "
                       "translated.")
    c1, c2, c3 = st.columns(3)
    c1.download_button("Download all maps (.npz)", lambda: families.to_npz(att), "attention.npz",
                       "application/octet-stream", key=f"{key}_npz", on_click="ignore")
    c2.download_button("Download all maps (.json)", lambda: families.to_json(att), "attention.json",
                       "application/json", key=f"{key}_json", on_click="ignore")
    c3.download_button("Download all maps (.csv)", lambda: families.to_csv(att), "attention.csv", "text/csv",
                       key=f"{key}_csv", on_click="ignore",
                       help="One row per weight: family, layer, head, query and key position and token, weight.")

"""Every layer's and head's map at once, a layers x heads grid of heatmaps, in two kinds:

- `head_grid` (the model view), meant for picking a head: a click on a small map selects its (layer, head); the
  maps have no token labels (the tooltip names the head), and a map larger than MAX_SIDE x MAX_SIDE cells is
  averaged down to it, which the subtitle says;
- `attention_grid`, meant for reading every head (a notebook, a report): each map labelled with its tokens, every
  cell drawn.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from transformer.bidi import is_rtl, piece_labels
from transformer.charts import theme
from transformer.charts.heatmap import CHAR_WIDTH, MAX_CELLS, WEIGHTS, Scale, column_angle, label_array, message
from transformer.charts.theme import NORMAL, Sizes
from transformer.labels import HOVER_CHARS, LABEL_CHARS, shorten

MAX_SIDE = 16  # cells along a small map's side: 48 heads of a 160 x 100 map would be 768,000 marks
MIN_CELL = 8  # px of an attention_grid cell at the least: smaller, a grid is wider than the page and scrolls
GAP = 8  # px between two maps of attention_grid


def pooled(maps: np.ndarray, side: int = MAX_SIDE) -> np.ndarray:
    """maps (L, H, Lq, Lk) averaged over blocks so that neither side exceeds `side` cells: (L, H, Lq', Lk')."""
    n_layers, n_heads, n_rows, n_cols = maps.shape
    fr, fc = math.ceil(n_rows / side), math.ceil(n_cols / side)
    if fr == 1 and fc == 1:
        return maps
    rows, cols = math.ceil(n_rows / fr), math.ceil(n_cols / fc)
    padded = np.full((n_layers, n_heads, rows * fr, cols * fc), np.nan)
    padded[:, :, :n_rows, :n_cols] = maps
    blocks = padded.reshape(n_layers, n_heads, rows, fr, cols, fc)  # (L, H, Lq', fr, Lk', fc)
    return np.nanmean(blocks, axis=(3, 5))


def head_grid(maps, *, title: str = "", select: str | None = None, scale: Scale = WEIGHTS,
              sizes: Sizes = NORMAL, map_px: int | None = None) -> alt.TopLevelMixin:
    """maps (L, H, Lq, Lk): one small map per layer (rows) and head (columns); select: the name of a click
    selection over (layer, head)."""
    maps = np.asarray(maps, dtype=np.float64)
    if maps.ndim != 4:
        raise ValueError(f"maps should be (layers, heads, queries, keys), got shape {maps.shape}")
    if maps.size == 0:
        return message("Nothing to show: the maps have no rows or no columns.", title=title, sizes=sizes)
    n_layers, n_heads, n_rows, n_cols = maps.shape
    small = pooled(maps)
    subtitle = alt.Undefined
    if small.shape != maps.shape:
        subtitle = (f"each map averaged from {n_rows} x {n_cols} to {small.shape[2]} x {small.shape[3]} cells "
                    "(open a head for every cell)")
    layer, head, row, col = np.indices(small.shape).reshape(4, -1)
    data = pd.DataFrame({"layer": layer, "head": head, "row": row, "col": col, "value": small.ravel(),
                         "name": [f"layer {a}, head {b}" for a, b in zip(layer, head)]})
    side = map_px or max(40, min(110, (sizes.page - 80) // max(n_heads, 1) - 8))
    rect = alt.Chart(data).mark_rect().encode(
        x=alt.X("col:O", axis=None), y=alt.Y("row:O", axis=None),
        color=alt.Color("value:Q", scale=scale.encoding(), legend=alt.Legend(title=scale.title)),
        tooltip=[alt.Tooltip("name:N", title="map"), alt.Tooltip("value:Q", title=scale.title, format=".3f")],
    ).properties(width=side, height=side * min(max(small.shape[2] / max(small.shape[3], 1), 0.5), 2))
    if select is not None:
        rect = rect.add_params(alt.selection_point(name=select, fields=["layer", "head"], on="click", toggle=False))
    head_names = "datum.value" if n_heads > 1 else "'all heads'"
    chart = rect.facet(
        row=alt.Row("layer:O", header=alt.Header(labelExpr="'layer ' + datum.value", title=None, labelAngle=0)),
        column=alt.Column("head:O", header=alt.Header(labelExpr=f"'head ' + {head_names}" if n_heads > 1 else
                                                        head_names, title=None)),
        spacing=4, title=alt.Title(title, subtitle=subtitle) if title else alt.Undefined,
        # SVG whatever its size (Streamlit draws over 2,000 data rows on a canvas): each small map an element a
        # click lands on and its labels text; pooling keeps it to 48 x 256 cells at most
        usermeta={"embedOptions": {"renderer": "svg"}})
    return theme.sized(chart, sizes)


def _lookup(labels: Sequence[str], field: str) -> str:
    """A Vega expression: the label (shortened to HOVER_CHARS) at the position in `field`."""
    return f"{json.dumps([shorten(t, HOVER_CHARS) for t in labels], ensure_ascii=False)}[datum.{field}]"


def attention_grid(maps, rows: Sequence[str], cols: Sequence[str], *, layers: Sequence[int] | None = None,
                   title: str = "", row_title: str = "query", col_title: str = "key", scale: Scale = WEIGHTS,
                   fmt: str = ".3f", sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """maps (L, H, Lq, Lk): every head of every layer (or of `layers`, numbered as in the model) as a heatmap
    labelled with its tokens, a row of heads per layer, for reading rather than picking (`head_grid` picks). The
    axes are `heatmap`'s: positions labelled with the shortened tokens, the first query on top, both tokens whole in
    a cell's tooltip; the query labels stand left of each layer's first head, the key labels above the top layer's
    maps, and keys that read right to left (Arabic) run from the right. A grid of more than MAX_CELLS cells is
    not drawn: its chart asks for fewer layers."""
    maps = np.asarray(maps, dtype=np.float64)
    if maps.ndim != 4:
        raise ValueError(f"maps should be (layers, heads, queries, keys), got shape {maps.shape}")
    n_layers, n_heads, n_rows, n_cols = maps.shape
    if (n_rows, n_cols) != (len(rows), len(cols)):
        raise ValueError(f"maps of {n_rows} queries x {n_cols} keys do not match {len(rows)} x {len(cols)} labels")
    shown = list(range(n_layers)) if layers is None else list(layers)
    wrong = [a for a in shown if isinstance(a, bool) or not isinstance(a, int | np.integer) or not 0 <= a < n_layers]
    if wrong:
        raise ValueError(f"layers must be integers from 0 to {n_layers - 1}, got {wrong[0]!r}")
    picked = maps[shown]  # (L', H, Lq, Lk)
    if picked.size == 0:
        return message("Nothing to show: no layer, no head, or maps with no rows or no columns.", title=title,
                       sizes=sizes)
    if picked.size > MAX_CELLS:
        return message(f"{len(shown) * n_heads} maps of {n_rows} x {n_cols} are {picked.size:,} cells, more than a "
                       f"chart draws ({MAX_CELLS:,}): pick fewer layers, or draw one head with heatmap().",
                       title=title, sizes=sizes)
    layer, head, row, col = np.indices(picked.shape).reshape(4, -1)
    layer = np.asarray(shown)[layer]
    flat = picked.ravel()
    shown_rows, shown_cols = piece_labels(rows), piece_labels(cols)
    # numbers only, one row per cell: the tooltip's words are looked up from the positions (a 12-head grid of a
    # 40-piece sentence is 18,000 cells, whose labels written out would triple the spec)
    data = pd.DataFrame({"layer": layer, "head": head, "row": row, "col": col,
                         "value": np.where(np.isfinite(flat), flat, np.nan)})
    longest_row = min(max((len(t) for t in shown_rows), default=1), LABEL_CHARS)
    room = sizes.page - CHAR_WIDTH * sizes.label * longest_row - 3 * sizes.label - GAP * (n_heads - 1)
    cell = int(max(MIN_CELL, min(sizes.row, room / (n_heads * n_cols))))
    longest = max((len(shorten(t)) for t in shown_cols), default=1)
    # upright where they fit, else turned a quarter: at a small map's cells a slanted label covers its neighbours'
    angle = 0 if column_angle(n_cols, longest, sizes, cell * n_cols) == 0 else -90
    keys = list(range(n_cols))
    x = alt.X("col:O", title=col_title, scale=alt.Scale(domain=keys[::-1] if is_rtl("".join(cols)) else keys),
              axis=alt.Axis(orient="top", labelExpr=label_array(shown_cols), labelAngle=angle,
                            labelAlign="left" if angle else "center", labelBaseline="middle" if angle else "bottom"))
    y = alt.Y("row:O", title=row_title, scale=alt.Scale(domain=list(range(n_rows))),
              axis=alt.Axis(labelExpr=label_array(shown_rows)))
    tooltip = [alt.Tooltip("map:N"), alt.Tooltip("row_label:N", title=row_title),
               alt.Tooltip("col_label:N", title=col_title), alt.Tooltip("value:Q", title=scale.title, format=fmt)]
    base = alt.Chart().encode(x=x, y=y)
    legend = alt.Legend(title=scale.title) if scale.legend else None
    missing = base.mark_rect(color=theme.NO_VALUE).encode(tooltip=tooltip[:3]).transform_filter(
        "!isValid(datum.value) || !isFinite(datum.value)")
    rect = base.mark_rect().encode(color=alt.Color("value:Q", scale=scale.encoding(), legend=legend), tooltip=tooltip)
    drawn = alt.layer(missing, rect, data=data).transform_calculate(
        map="'layer ' + datum.layer + ', head ' + datum.head",
        row_label=_lookup(shown_rows, "row"), col_label=_lookup(shown_cols, "col"),
    ).properties(width={"step": cell}, height={"step": cell})
    chart = drawn.facet(
        row=alt.Row("layer:O", header=alt.Header(labelExpr="'layer ' + datum.value", title=None, labelAngle=0,
                                                 labelAlign="right")),
        column=alt.Column("head:O", header=alt.Header(labelExpr="'head ' + datum.value", title=None)),
        spacing=GAP, title=alt.Title(title) if title else alt.Undefined)
    return theme.sized(chart, sizes)

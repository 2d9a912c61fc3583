"""Every layer's and head's map at once (the model view): a layers x heads grid of small heatmaps, meant for
picking a head. A click on a small map selects its (layer, head); the maps have no token labels (the tooltip names
the head), and a map larger than MAX_SIDE x MAX_SIDE cells is averaged down to it, which the subtitle says."""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from transformer.charts import theme
from transformer.charts.heatmap import WEIGHTS, Scale, message
from transformer.charts.theme import NORMAL, Sizes

MAX_SIDE = 24  # cells along a small map's side: 48 heads of a 160 x 100 map would be 768,000 marks


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
        spacing=4, title=alt.Title(title, subtitle=subtitle) if title else alt.Undefined)
    return theme.sized(chart, sizes)

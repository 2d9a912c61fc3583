"""Plotly figures for gold word alignments: link markers over an attention heatmap, and AER maps.

Pure functions of numbers and labels, no streamlit, like `ui/shared/heatmaps.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go


def add_gold_links(fig: go.Figure, cells: Sequence[tuple[int, int]]) -> go.Figure:
    """Mark gold (row, column) cells of a heatmap drawn over positions, with open squares."""
    if cells:
        rows, cols = zip(*cells)
        fig.add_trace(go.Scatter(
            x=list(cols), y=list(rows), mode="markers", name="gold link", showlegend=False,
            marker=dict(symbol="square-open", size=14, color="#e4572e", line=dict(width=2.5)),
            hovertemplate="gold link<extra></extra>",
        ))
    return fig


def aer_grid(heads: Sequence[Sequence[float]], layer_mean: Sequence[float], *, title: str = "") -> go.Figure:
    """Layers x (heads, mean of heads) of AER in percent; lower is better, the best head is ringed. Maps of one map
    per layer (a layer-level lens) have one column, the layer's map of all heads together."""
    heads = np.asarray(heads, dtype=float)
    if heads.shape[1] == 1:
        grid = 100.0 * heads
        columns = ["all heads"]
    else:
        grid = 100.0 * np.column_stack([heads, np.asarray(layer_mean, dtype=float)])
        columns = [f"head {h}" for h in range(heads.shape[1])] + ["mean of heads"]  # numbered from 0, as elsewhere
    n_layers, n_heads = grid.shape[0], heads.shape[1]
    rows = [f"layer {i}" for i in range(n_layers)]
    best_layer, best_head = np.unravel_index(np.argmin(grid[:, :n_heads]), (n_layers, n_heads))
    fig = go.Figure(go.Heatmap(
        z=grid, x=columns, y=rows, zmin=0.0, zmax=100.0, colorscale="RdYlGn_r",
        text=[[f"{v:.0f}" for v in row] for row in grid], texttemplate="%{text}",
        colorbar=dict(title="AER %", thickness=12),
        hovertemplate="%{y}, %{x}<br>AER %{z:.1f}%<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[columns[best_head]], y=[rows[best_layer]], mode="markers", showlegend=False,
        marker=dict(symbol="circle-open", size=34, color="black", line=dict(width=3)),
        hovertemplate=f"best {'layer' if n_heads == 1 else 'head'}: {rows[best_layer]}, {columns[best_head]}"
                      "<extra></extra>",
    ))
    # Short column labels ("h0", "mean"), upright: "mean of heads" was turned and cut at the figure's edge in a
    # half-width column; the hover keeps the full names.
    ticks = ["all heads"] if n_heads == 1 and len(columns) == 1 else [f"h{h}" for h in range(n_heads)] + ["mean"]
    fig.update_layout(title=title, height=130 + 48 * n_layers, margin=dict(l=70, r=10, t=40 if title else 10, b=50),
                      yaxis=dict(autorange="reversed", type="category"),
                      xaxis=dict(type="category", side="bottom", tickmode="array", tickvals=columns, ticktext=ticks,
                                 tickangle=0))
    return fig

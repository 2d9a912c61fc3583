"""Plotly figures of the explain views: heatmaps whose cells take clicks, layers x heads maps, differences of maps,
and a probe's attention across training as an animation. No streamlit.

Plotly reports no click on a heatmap cell, so `clickable` lays one invisible marker over every cell, carrying
(row, column) as customdata; `picked_cell` reads Streamlit's selection back (as `figures.model_view_pick` does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ui.shared.heatmaps import attention_heatmap, escape, label_texts

DIVERGING = "RdBu_r"  # red: more in the first map (or the head helps), blue: less


def clickable(fig: go.Figure, n_rows: int, n_cols: int, hover: str = "") -> go.Figure:
    """Overlay one invisible marker per cell of the figure's heatmap, carrying [row, column]; clicks select it."""
    rows, cols = np.divmod(np.arange(n_rows * n_cols), n_cols)
    fig.add_trace(go.Scatter(
        x=cols.tolist(), y=rows.tolist(), mode="markers", customdata=np.stack([rows, cols], 1).tolist(),
        marker=dict(size=12, opacity=0, color="black"), showlegend=False, hoverinfo="skip" if not hover else None,
        hovertemplate=hover or None))
    # hoverdistance -1: the marker nearest the pointer, i.e. the cell under it, takes the hover and the click
    fig.update_layout(clickmode="event+select", dragmode=False, hovermode="closest", hoverdistance=-1)
    return fig


def picked_cell(selection: Mapping) -> tuple[int, int] | None:
    """(row, column) of the marker a click selected on a `clickable` figure, or None."""
    for point in selection.get("points") or []:
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and len(custom) >= 2:
            return int(custom[0]), int(custom[1])
    return None


def clickable_heatmap(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str,
                      query_name: str, key_name: str, picked: tuple[int, int] | None = None) -> go.Figure:
    """An attention heatmap whose cells can be clicked; the picked cell is outlined."""
    fig = attention_heatmap(weights, query_labels, key_labels, title=title, query_name=query_name, key_name=key_name)
    weights = np.asarray(weights, dtype=np.float64)
    custom = fig.data[0].customdata
    fig.data[0].hoverinfo = "skip"  # the markers over it take the hover, with the same text
    clickable(fig, *weights.shape)
    marker = fig.data[1]
    marker.text = [f"{query_name}: {custom[r][c][0]}<br>{key_name}: {custom[r][c][1]}<br>weight: {weights[r, c]:.3f}"
                   "<br>click to open its arithmetic" for r, c in marker.customdata]
    marker.hovertemplate = "%{text}<extra></extra>"
    if picked is not None:
        r, c = picked
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, line=dict(color="#d62728", width=3))
    return fig


def heads_map(values: np.ndarray, *, title: str, hover: Sequence[Sequence[str]] | None = None,
              labels: Sequence[Sequence[str]] | None = None, diverging: bool = False, fmt: str = ".2f",
              zmax: float | None = None) -> go.Figure:
    """values (L, H): one number per head, layers as rows; labels (L, H) are written in the cells, hover (L, H) is
    HTML for each cell's hover. Clicking a cell selects it (customdata [layer, head])."""
    values = np.asarray(values, dtype=np.float64)
    n_layers, n_heads = values.shape
    finite = values[np.isfinite(values)]
    top = zmax if zmax is not None else (float(np.abs(finite).max()) if finite.size else 1.0) or 1.0
    text = [[f"{v:{fmt}}" if math.isfinite(v) else "—" for v in row] for row in values]
    if labels is not None:
        text = [[f"{t}<br><b>{escape(lab)}</b>" if lab else t for t, lab in zip(trow, lrow)]
                for trow, lrow in zip(text, labels)]
    fig = go.Figure(go.Heatmap(
        z=values, x=list(range(n_heads)), y=list(range(n_layers)), text=text, texttemplate="%{text}",
        colorscale=DIVERGING if diverging else "Blues", zmin=-top if diverging else min(0.0, finite.min(initial=0)),
        zmax=top, zmid=0 if diverging else None, xgap=2, ygap=2, hoverinfo="skip", colorbar=dict(thickness=12)))
    clickable(fig, n_layers, n_heads)
    marker = fig.data[1]
    marker.text = [hover[r][c] if hover is not None else f"layer {r}, head {c}: {text[r][c]}"
                   for r, c in marker.customdata]
    marker.hovertemplate = "%{text}<extra></extra>"
    fig.update_layout(title=title, height=110 + 70 * n_layers, margin=dict(l=70, r=10, t=50, b=40),
                      xaxis=dict(tickmode="array", tickvals=list(range(n_heads)),
                                 ticktext=[f"head {h}" for h in range(n_heads)]),
                      yaxis=dict(tickmode="array", tickvals=list(range(n_layers)),
                                 ticktext=[f"layer {i}" for i in range(n_layers)], autorange="reversed"))
    return fig


def difference_heatmap(a: np.ndarray, b: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *,
                       title: str, names: tuple[str, str], divergence: int | None = None) -> go.Figure:
    """a - b over the rows and columns both maps have (the first min(rows) and min(columns)); a dashed line marks
    the first row after a shared prefix (divergence)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    rows, cols = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    diff = a[:rows, :cols] - b[:rows, :cols]
    fig = attention_heatmap(np.clip(diff, 0, 1), query_labels[:rows], key_labels[:cols], title=title)
    fig.data[0].update(z=diff, zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING, colorbar=dict(title="difference"),
                       hovertemplate=(f"row %{{customdata[0]}}<br>column %{{customdata[1]}}<br>{escape(names[0])} − "
                                      f"{escape(names[1])}: %{{z:+.3f}}<extra></extra>"))
    if divergence is not None and divergence < rows:
        fig.add_hline(y=divergence - 0.5, line=dict(color="black", dash="dash", width=2))
    return fig


TOOLBAR = 30  # px: plotly's toolbar over the top right of a chart
SLIDER_PAD = 50  # px from the plot's bottom to the slider: below the Play / Pause row
CONTROLS = 150  # px under the plot: the buttons, then the slider with its label


def training_animation(frames: Sequence[tuple[int, np.ndarray, Sequence[str], Sequence[str]]], *, title: str,
                       query_name: str, key_name: str) -> go.Figure:
    """(step, weights (L_q, L_k), query labels, key labels) per snapshot: a heatmap with Play and a step slider.
    Each frame sets its own axis labels: the probe's translation, so its rows, change as the model learns."""
    step0, weights0, rows0, cols0 = frames[-1]
    fig = attention_heatmap(weights0, rows0, cols0, title=title, query_name=query_name, key_name=key_name)
    fig.data[0].hoverinfo = None
    fig.data[0].hovertemplate = "weight %{z:.3f}<extra></extra>"
    height = max(fig.layout.height, *(160 + 22 * len(r) for _, _, r, _ in frames))
    fig.frames = [go.Frame(
        name=str(step),
        data=[go.Heatmap(z=np.asarray(w, dtype=np.float64), x=list(range(len(c))), y=list(range(len(r))))],
        layout=dict(xaxis=dict(tickvals=list(range(len(c))), ticktext=label_texts(c)),
                    yaxis=dict(tickvals=list(range(len(r))), ticktext=label_texts(r), autorange="reversed"),
                    title=dict(text=f"{title}: step {step}")))
        for step, w, r, c in frames]
    slider_steps = [dict(method="animate", label=str(step), args=[[str(step)], dict(mode="immediate",
                    frame=dict(duration=0, redraw=True), transition=dict(duration=0))]) for step, *_ in frames]
    # The title drops below the chart's toolbar (TOOLBAR px at the top right); the step slider has a row of its own
    # under the Play / Pause buttons, so its "step N" label cannot sit on them.
    margin = fig.layout.margin.to_plotly_json()
    fig.update_layout(
        height=height + CONTROLS + TOOLBAR, margin=dict(margin, t=margin["t"] + TOOLBAR, b=CONTROLS),
        title=dict(pad=dict(t=TOOLBAR)),
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.02, yanchor="top", xanchor="left", buttons=[
            dict(label="▶ Play", method="animate", args=[None, dict(frame=dict(duration=700, redraw=True),
                                                                    fromcurrent=True, transition=dict(duration=0))]),
            dict(label="❚❚ Pause", method="animate", args=[[None], dict(mode="immediate",
                                                                        frame=dict(duration=0, redraw=False))])])],
        sliders=[dict(active=len(frames) - 1, steps=slider_steps, x=0, len=1, y=-0.02, yanchor="top",
                      pad=dict(t=SLIDER_PAD), currentvalue=dict(prefix="step ", xanchor="right"))])
    fig.layout.title.text = f"{title}: step {step0}"
    return fig

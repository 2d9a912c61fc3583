"""Plotly heatmaps of attention (one head, every layer and head, a mask), their token labels and the charts'
config: pure functions of arrays and labels, no streamlit.

Every attention heatmap is one `go.Heatmap` trace with rows = queries and columns = keys, drawn
top-down (the first query on top) on a fixed 0..1 colour scale, so that two heads can be compared
by colour alone. Axes are token positions with the tokens as tick text, because plotly would merge
equal category labels ("▁the" twice would become one row); the hover names both tokens.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer import bidi
from transformer.labels import HOVER_CHARS, LABEL_CHARS, shorten

COLORSCALE = "Blues"
ZWSP = "\u200b"  # invisible, makes repeated tokens distinct categories
PLOT_WIDTH = 700  # px of a heatmap's grid in the wide layout beside the sidebar (a 1280 px window)
LINE_HEIGHT = 1.2  # a text line, in font sizes


def _ticks(labels: Sequence[str], step: int = 1, *, sequence: bool = True, **extra) -> dict:
    """An axis of positions 0..n-1 labelled with the tokens (every step-th one), each shortened (the hover has it
    whole). A sequence's pieces of one Arabic word are shown joined; `sequence=False` for labels that are
    alternatives (next-token candidates)."""
    shown = range(0, len(labels), step)
    texts = label_texts(labels) if sequence else [label_text(t) for t in labels]
    return dict(tickmode="array", tickvals=list(shown), ticktext=[short(texts[i]) for i in shown], **extra)


def escape(label: str) -> str:
    """Plotly reads text as HTML: "<s>" would become a strikethrough tag and vanish."""
    return label.replace("<", "&lt;").replace(">", "&gt;")


def short(text: str, limit: int = LABEL_CHARS) -> str:
    """An escaped label (`label_text`) shortened to `limit` characters as shown, by the package's one rule
    (`transformer.labels.shorten`): what every chart draws on an axis or in a cell."""
    if len(text) <= limit:
        return text
    return escape(shorten(text.replace("&lt;", "<").replace("&gt;", ">"), limit))


def label_texts(pieces: Sequence[str]) -> list[str]:
    """A sequence of pieces as plotly should draw them: escaped, right-to-left pieces marked and joined."""
    return [escape(t) for t in bidi.piece_labels(pieces)]


def label_text(piece: str) -> str:
    return label_texts([piece])[0]


def _longest(labels: Sequence[str]) -> int:
    """Characters of the longest label as an axis shows it (shortened)."""
    return min(max((len(t) for t in labels), default=1), LABEL_CHARS)


def _margin(title: str) -> dict:
    return dict(l=10, r=10, t=40 if title else 10, b=10)


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Equal labels get a growing number of zero-width spaces, so each stays its own row or column."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        n = seen.get(label, 0)
        seen[label] = n + 1
        out.append(label + ZWSP * n)
    return out


def attention_heatmap(
    weights: np.ndarray,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    *,
    title: str = "",
    query_name: str = "query",
    key_name: str = "key",
    row_notes: Sequence[str] | None = None,
    height: int | None = None,
    row_px: int = 22,
) -> go.Figure:
    """weights (Lq, Lk), rows are queries. row_notes adds a line per row to the hover (e.g. what it predicts)."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (len(query_labels), len(key_labels)):
        raise ValueError(f"weights {weights.shape} do not match {len(query_labels)} x {len(key_labels)} labels")
    notes = list(row_notes) if row_notes is not None else [""] * len(query_labels)
    custom = np.empty((*weights.shape, 3), dtype=object)  # (Lq, Lk, [query, key, note])
    custom[..., 0] = np.asarray([short(t, HOVER_CHARS) for t in label_texts(query_labels)], dtype=object)[:, None]
    custom[..., 1] = np.asarray([short(t, HOVER_CHARS) for t in label_texts(key_labels)], dtype=object)[None, :]
    custom[..., 2] = np.asarray(notes, dtype=object)[:, None]
    trace = go.Heatmap(
        z=weights, x=list(range(len(key_labels))), y=list(range(len(query_labels))), zmin=0.0, zmax=1.0,
        colorscale=COLORSCALE, customdata=custom, colorbar=dict(title="weight", thickness=12),
        hovertemplate=(f"{query_name}: %{{customdata[0]}}<br>{key_name}: %{{customdata[1]}}<br>"
                       "weight: %{z:.3f}%{customdata[2]}<extra></extra>"),
    )
    fig = go.Figure(trace)
    # Fixed margins sized to the longest token: plotly's automargin keeps growing inside Streamlit's resizing
    # container. Column labels stand rotated above the grid: about 0.6 font sizes of height per character.
    font, angle, step = column_font(len(key_labels))
    top = 50 + math.ceil(0.6 * font * abs(math.sin(math.radians(angle))) * _longest(key_labels)) + (35 if title else 0)
    rows = max(row_px * len(query_labels), 180)  # a few rows stay rows, not slivers
    fig.update_layout(
        title=dict(text=title, y=1, yanchor="top", pad=dict(t=8)) if title else None, height=height or top + rows + 10,
        margin=dict(l=min(40 + 7 * _longest(query_labels), 220), r=10, t=top, b=10),
        xaxis=_ticks(key_labels, step, title=key_name, side="top", tickangle=angle, tickfont=dict(size=font)),
        yaxis=_ticks(query_labels, title=query_name, autorange="reversed"),
    )
    return fig


def without_zero_lines(fig: go.Figure) -> go.Figure:
    """fig without plotly's zero lines on a heatmap's axes (they cross the first row and column and run past the
    grid); every chart of the app passes here (`ui.shared.charts.show.chart`). Changes fig in place and returns it."""
    if any(trace.type == "heatmap" for trace in fig.data):
        fig.update_xaxes(zeroline=False)
        fig.update_yaxes(zeroline=False)
    return fig


CELL_FONT = 11  # px of the numbers written in cells (plotly would shrink them to fit, down to unreadable)
PAGE_PX = 900  # the page's width beside the open sidebar at 1280 px
COLOUR_BAR_PX = 70


def _cell_lines(trace) -> list[str]:
    """The lines written in the cells as they show: no tags (<b>), no invisible marks (a piece's bidi isolates)."""
    texts = np.asarray(trace.text, dtype=object).ravel() if trace.text is not None else ["+0.00"]
    lines = [re.sub(r"<[^>]*>", "", line) for t in texts for line in re.split(r"<br\s*/?>", str(t))]
    return ["".join(c for c in line if unicodedata.category(c) != "Cf") for line in lines] or [""]


def fit_cell_numbers(fig: go.Figure, font_px: int = CELL_FONT, page_px: float = PAGE_PX, share: float = 1.0,
                     bar_px: float = COLOUR_BAR_PX) -> go.Figure:
    """Every heatmap's cell numbers at font_px where they fit their cells, and left out where they would not (the
    hover still gives each one): never shrunk to a size no one can read, never running into the next cell.
    share: the part of the page's width the figure has. Changes fig in place and returns it."""
    layout = fig.layout
    margin = layout.margin
    for trace in fig.data:
        if trace.type != "heatmap" or not trace.texttemplate or trace.z is None:
            continue
        rows, cols = np.shape(trace.z)[:2]
        xaxis = layout["xaxis" + (trace.xaxis or "x")[1:]]
        yaxis = layout["yaxis" + (trace.yaxis or "y")[1:]]
        x_part = xaxis.domain[1] - xaxis.domain[0] if xaxis.domain else 1.0
        y_part = yaxis.domain[1] - yaxis.domain[0] if yaxis.domain else 1.0
        right = 80 if margin.r is None else margin.r
        bar = max(bar_px - right, 0) if trace.showscale is not False else 0  # what the right margin does not hold
        cell_w = (page_px * share - (margin.l or 80) - right - bar) * x_part / max(cols, 1)
        cell_h = ((layout.height or 450) - (margin.t or 100) - (margin.b or 80)) * y_part / max(rows, 1)
        lines = _cell_lines(trace)
        wide = max(len(line) for line in lines)
        per_cell = max(1, round(len(lines) / max(rows * cols, 1)))
        if 0.62 * font_px * wide + 4 > cell_w or LINE_HEIGHT * font_px * per_cell > cell_h:
            trace.texttemplate = None  # the hover keeps every number
        else:
            trace.textfont.size = font_px
    return fig


MIN_FONT = 10  # px: the smallest column label; below it a projected or printed token cannot be read


def column_font(n_columns: int) -> tuple[int, int, int]:
    """(font size, angle, step) of column labels that do not overlap on a plot about PLOT_WIDTH px wide: turned
    60 degrees while there is room, upright and smaller for long sentences, never below MIN_FONT; past about 58
    columns only every step-th label (the hover names every token)."""
    spacing = PLOT_WIDTH / max(n_columns, 1)  # px between two column labels
    for font in range(12, MIN_FONT - 1, -1):
        for angle in (-60, -90):
            if LINE_HEIGHT * font / abs(math.sin(math.radians(angle))) <= spacing:
                return font, angle, 1
    return MIN_FONT, -90, math.ceil(LINE_HEIGHT * MIN_FONT / spacing)


def model_view(maps: np.ndarray, *, title: str = "", height_per_row: int = 110) -> go.Figure:
    """maps (L, H, Lq, Lk): a layer x head grid of small heatmaps (no tick labels), meant for picking a head.

    Heatmap cells cannot be selected in plotly (a click on one reports nothing, a box over one no point), so
    each small map also has one invisible marker that takes every hover and click of its subplot
    (hoverdistance -1) and carries customdata [layer, head]; `model_view_pick` reads it back. Drag does
    nothing in plotly (its toolbar's Box Select works); the SVG chart (`ui.shared.svg_chart`) selects with a drag.
    """
    maps = np.asarray(maps, dtype=np.float64)
    n_layers, n_heads, n_queries, n_keys = maps.shape
    fig = make_subplots(rows=n_layers, cols=n_heads, horizontal_spacing=0.01, vertical_spacing=0.02,
                        row_titles=[f"layer {i}" for i in range(n_layers)],
                        column_titles=["all heads"] if n_heads == 1 else [f"head {h}" for h in range(n_heads)])
    for layer in range(n_layers):
        for head in range(n_heads):
            fig.add_trace(go.Heatmap(z=maps[layer, head], zmin=0.0, zmax=1.0, colorscale=COLORSCALE, showscale=False,
                                     hoverinfo="skip"), row=layer + 1, col=head + 1)
            fig.add_trace(go.Scatter(
                x=[(n_keys - 1) / 2], y=[(n_queries - 1) / 2], mode="markers", marker=dict(size=1, opacity=0),
                customdata=[[layer, head]], showlegend=False,
                hovertemplate=f"layer {layer}, head {head}: click to open it above<extra></extra>",
            ), row=layer + 1, col=head + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, ticks="", zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, ticks="", zeroline=False, autorange="reversed")
    fig.update_layout(title=title or None, height=height_per_row * n_layers + 60, hoverdistance=-1,
                      margin=dict(l=10, r=40, t=60, b=10), clickmode="event+select", dragmode=False)
    return fig


def model_view_pick(selection: Mapping, n_heads: int) -> tuple[int, int] | None:
    """(layer, head) that a click or box selection on `model_view` points at, or None.

    selection is Streamlit's {"points": [...], "box": [{"xref": "x6", ...}], ...}: a point carries its
    [layer, head]; a box without points names its subplot's axis, numbered row by row from 1 ("x" is 1).
    """
    for point in selection.get("points") or []:
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and len(custom) >= 2:
            return int(custom[0]), int(custom[1])
    for box in selection.get("box") or []:
        match = re.fullmatch(r"x(\d*)", str(box.get("xref", "")))
        if match:
            return divmod(int(match.group(1) or 1) - 1, n_heads)
    return None


LAYER_ROW = "layer level"  # the name of a layer's own row under its heads' rows


@dataclass(frozen=True)
class QueryRows:
    """One query's attention rows in one layer: heads (H', Lk), a row per head (H' = 1 for a lens that reads all
    heads together), and layer (Lk,), the layer's own row where the lens defines one apart from its heads (the
    norm-weighted lens's ||Σ_h alpha^h_ij f^h(x_j)||), else None."""

    heads: np.ndarray
    layer: np.ndarray | None = None


def head_rows(rows: np.ndarray | QueryRows, key_labels: Sequence[str], *, title: str = "") -> go.Figure:
    """rows (H, Lk): one query's attention row per head (the newest token in step-by-step decoding), or QueryRows,
    whose layer row is drawn last, named LAYER_ROW."""
    if not isinstance(rows, QueryRows):
        rows = QueryRows(np.asarray(rows))
    heads = np.asarray(rows.heads, dtype=np.float64)
    names = ["all heads"] if heads.shape[0] == 1 else [f"head {h}" for h in range(heads.shape[0])]  # a layer-level lens
    if rows.layer is not None:
        heads, names = np.vstack([heads, np.asarray(rows.layer, dtype=np.float64)[None]]), [*names, LAYER_ROW]
    fig = attention_heatmap(heads, names, key_labels, title=title, query_name="row", row_px=40)
    # the rows name themselves ("head 0"): no axis title, and its room goes to the grid (half a page at most)
    fig.update_layout(yaxis_title=None, margin_l=10 + 7 * _longest(names))
    return fig


def mask_heatmap(mask: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *,
                 title: str = "") -> go.Figure:
    """A boolean mask (True = may attend) as a two-colour grid."""
    mask = np.asarray(mask, dtype=np.float64)
    fig = go.Figure(go.Heatmap(
        z=mask, zmin=0, zmax=1, showscale=False, colorscale=[[0, "#e6e6e6"], [1, "#2c7a3f"]], xgap=1, ygap=1,
        hovertemplate="query position %{y}<br>key position %{x}<br>may attend: %{z}<extra></extra>"))
    longest_key = _longest(key_labels)
    top = 20 + 6 * longest_key + (30 if title else 0)  # the key labels stand rotated above the grid
    fig.update_layout(title=dict(text=title, y=1, yanchor="top", pad=dict(t=8)) if title else None,
                      height=min(max(24 * len(query_labels) + top + 20, 260), 760),
                      margin=dict(l=20 + 7 * _longest(query_labels), r=10, t=top, b=10),
                      xaxis=_ticks(key_labels, side="top", tickangle=-60),
                      yaxis=_ticks(query_labels, autorange="reversed"))
    return fig


def chart_config(filename: str, image_format: str = "png") -> dict:
    """Plotly's config for st.plotly_chart: the camera icon saves `filename`.png or .svg (a vector, for slides)."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", filename).strip("-").lower() or "chart"
    options = {"format": image_format, "filename": name}
    if image_format == "png":
        options["scale"] = 2  # sharp on a projector
    return {"toImageButtonOptions": options, "displaylogo": False}

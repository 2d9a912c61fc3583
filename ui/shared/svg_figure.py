"""Plotly figures drawn as one SVG on the server, without plotly.js: heatmaps (cells in the colour scale's colours,
cell text, the colour bar), bars, lines, tick labels, axis titles, the title, a legend, subplot grids
(`make_subplots`), rectangles and lines (`add_shape`, `add_hline`), text notes and marker rings. Pure functions of a
`go.Figure`, no streamlit.

`draw(fig, width)` lays the figure out as plotly would at that width (margins grown to hold the labels, axis
domains, autorange over the data, reversed axes, a colour bar or legend in the right margin) and returns the SVG
with, per subplot, what its hover and clicks need (`Area`): the cells' hover texts, and the points that take hovers
and clicks with what plotly would report for them. A figure with anything else (other traces, animation frames, a
colour axis, a log axis, HTML it cannot draw) raises `Unsupported`: the caller draws it with plotly instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ui.shared import svg_traces
from ui.shared.svg_axes import (
    Axis,
    axis_key,
    edge,
    margins,
    positions,
    side_overflow,
    span_across,
    tick_room,
    title_font,
)
from ui.shared.svg_parts import (
    TICK_GAP,
    colour_bar,
    grid_parts,
    marker_parts,
    note_parts,
    shape_parts,
    tick_parts,
    title_parts,
    z_ticks,
)
from ui.shared.svg_text import FONT, Unsupported, label_width
from ui.shared.svg_traces import MAX_RECTS, colour_scale_of, z_range

CELL_TRACE = "heatmap"
SYMBOLS = {"circle", "square", "circle-open", "square-open"}
LINES = {"lines", "lines+markers"}


@dataclass(frozen=True)
class Area:
    """One subplot's plot area in px (x0, y0, x1, y1) with the data values at its edges, for the browser's hover and
    clicks: `cells` (rows x columns of hover text, None where the cells take no hover) and `marks` (px x, px y,
    hover text, point index into `Drawing.points`) of the markers that take hovers and clicks."""

    box: tuple[float, float, float, float]
    x_range: tuple[float, float]  # data values at x0 and x1
    y_range: tuple[float, float]  # data values at y0 (top) and y1 (bottom)
    xref: str
    yref: str
    cells: dict[str, Any] | None
    marks: list[tuple[float, float, str, int]]
    reach: float  # px: how far from a marker the pointer takes it (inf: the nearest anywhere in the area)

    def as_json(self) -> dict[str, Any]:
        return {"box": [round(v, 1) for v in self.box], "x": list(self.x_range), "y": list(self.y_range),
                "xref": self.xref, "yref": self.yref, "cells": self.cells, "reach": min(self.reach, 1e6),
                "marks": [[round(x, 1), round(y, 1), text, point] for x, y, text, point in self.marks]}


@dataclass(frozen=True)
class Drawing:
    """The SVG of a figure, its size in px, its subplots' areas and the points a click or a box selects (each as
    Streamlit's plotly selection reports it: curve_number, point_index, x, y, customdata)."""

    svg: str
    width: int
    height: int
    areas: list[Area] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)


def _check(fig: go.Figure) -> None:
    layout = fig.layout
    if fig.frames or layout.updatemenus or layout.sliders or layout.images or not (fig.data or layout.annotations):
        raise Unsupported("frames, buttons, sliders, images, or nothing to draw")
    if layout.barmode not in (None, "group") or layout.coloraxis.colorscale is not None:
        raise Unsupported("stacked bars or a colour axis")
    for name in [n for n in layout if n.startswith(("xaxis", "yaxis"))]:
        if layout[name].type not in (None, "linear", "category", "-") or layout[name].overlaying:
            raise Unsupported(f"a {layout[name].type} or overlaying axis")
    heatmap = any(t.type == CELL_TRACE for t in fig.data)
    for trace in fig.data:
        if trace.type == CELL_TRACE:
            if trace.coloraxis is not None or np.ndim(trace.z) != 2:
                raise Unsupported("a colour axis, or z not a matrix")
        elif trace.type == "scatter":
            if trace.fill not in (None, "none") or trace.stackgroup or trace.error_y.visible:
                raise Unsupported("a filled, stacked or error-bar scatter")
            if trace.mode == "markers":
                if not heatmap or (trace.marker.symbol or "circle") not in SYMBOLS:
                    raise Unsupported("markers other than on a heatmap")
            elif trace.mode not in LINES:
                raise Unsupported(f"scatter mode {trace.mode}")
        elif trace.type == "bar":
            if trace.base is not None or trace.offset is not None or trace.width is not None:
                raise Unsupported("bars with a base, offset or width")
        else:
            raise Unsupported(f"{trace.type} trace")
        if trace.type != CELL_TRACE and (trace.x is None or trace.y is None):
            raise Unsupported("a trace without x or y")
    for shape in layout.shapes or ():
        if shape.type not in ("rect", "line"):
            raise Unsupported(f"{shape.type} shape")
    for note in layout.annotations or ():
        if note.showarrow is not False:
            raise Unsupported("an arrow note")


def _colour_bars(fig: go.Figure) -> list[Any]:
    shown = [t for t in fig.data if t.type == CELL_TRACE and t.showscale is not False]
    if len(shown) > 1:
        raise Unsupported("several colour bars")
    return shown


def _bar_width(trace: Any, lo: float, hi: float, base: float) -> tuple[float, list[tuple[float, str]]]:
    """px the colour bar with its numbers and title takes, and its ticks."""
    bar = trace.colorbar
    ticks = z_ticks(lo, hi)
    font = bar.tickfont.size or base
    width = (bar.thickness or 30) + 10 + TICK_GAP + max(label_width(t, font) for _, t in ticks)
    title = bar.title.text or ""
    title_font = bar.title.font.size or base
    if title and bar.title.side == "right":
        width += 1.3 * title_font
    elif title:
        width = max(width, label_width(title, title_font) + 10)
    return width, ticks


def _extend(fig: go.Figure, axis) -> list[tuple]:
    """Each axis's data extent and categories from the traces; returns the heatmaps' cells (trace index, trace,
    x axis, y axis, x positions, y positions, z)."""
    cells = []
    for i, trace in enumerate(fig.data):
        ax, ay = axis(trace.xaxis, "x"), axis(trace.yaxis, "y")
        if trace.type == CELL_TRACE:
            z = np.asarray(trace.z, dtype=np.float64)  # (rows, columns)
            xs = positions(trace.x, z.shape[1], ax.categories)
            ys = positions(trace.y, z.shape[0], ay.categories)
            ax.lo, ax.hi = min(ax.lo, xs[0] - 0.5), max(ax.hi, xs[-1] + 0.5)
            ay.lo, ay.hi = min(ay.lo, ys[0] - 0.5), max(ay.hi, ys[-1] + 0.5)
            ax.cells = ay.cells = True
            cells.append((i, trace, ax, ay, xs, ys, z))
        elif trace.type == "bar":
            horizontal = trace.orientation == "h"
            places, values = (trace.y, trace.x) if horizontal else (trace.x, trace.y)
            axis_p, axis_v = (ay, ax) if horizontal else (ax, ay)
            for p in places:
                if isinstance(p, str):
                    axis_p.categories.setdefault(p, len(axis_p.categories))
            spots = [axis_p.position(p) for p in places]
            numbers = [float(v) for v in values]
            if not spots:
                continue
            axis_p.lo, axis_p.hi = min(axis_p.lo, min(spots) - 0.5), max(axis_p.hi, max(spots) + 0.5)
            axis_v.lo, axis_v.hi = min(axis_v.lo, 0.0, *numbers), max(axis_v.hi, 0.0, *numbers)
            axis_p.cells, axis_v.pad = True, True
        elif trace.mode in LINES:
            for a, values in ((ax, trace.x), (ay, trace.y)):
                for v in values:
                    if isinstance(v, str):
                        a.categories.setdefault(v, len(a.categories))
                numbers = [a.position(v) for v in values if v is not None and v == v]
                if numbers:
                    a.lo, a.hi = min(a.lo, *numbers), max(a.hi, *numbers)
    for trace in fig.data:
        if trace.type == "scatter" and trace.mode == "markers":
            ax, ay = axis(trace.xaxis, "x"), axis(trace.yaxis, "y")
            if not (ax.cells and ay.cells):
                raise Unsupported("markers outside every heatmap's axes")
    return cells


def draw(fig: go.Figure, width: float, colours: list[str] | None = None) -> Drawing:
    """The figure as SVG at `width` px (its layout's width when it has one), laid out as plotly lays it out;
    colours: the traces' colours by default (the layout's colorway first). Unsupported when it holds anything this
    renderer does not draw."""
    _check(fig)
    layout = fig.layout
    W, H = float(layout.width or width), float(layout.height or 450)
    base = float(layout.font.size or 12)
    colour = layout.font.color or "#31333f"
    palette = list(layout.colorway or colours or svg_traces.STREAMLIT_COLOURS)
    m = margins(layout)
    axes: dict[str, Axis] = {}

    def axis(ref: str, letter: str) -> Axis:
        name = (ref or letter)
        if name not in axes:
            axis_layout = layout[axis_key(name, letter)]
            axes[name] = Axis(name, axis_layout, font=axis_layout.tickfont.size or base)
        return axes[name]

    cells = _extend(fig, axis)
    bars = _colour_bars(fig)
    bar_ticks: list[tuple[float, str]] = []
    bar_w = 0.0
    if bars:
        bar_w, bar_ticks = _bar_width(bars[0], *z_range(bars[0], np.asarray(bars[0].z, dtype=np.float64)), base)
    entries = svg_traces.legend_entries(fig, palette)
    legend_font = layout.legend.font.size or base
    horizontal_legend = layout.legend.orientation == "h"

    def place() -> None:  # the axes' px from the margins and their domains
        pw, ph = W - m["l"] - m["r"], H - m["t"] - m["b"]
        for a in axes.values():
            d = a.layout.domain or (0.0, 1.0)
            if a.name.startswith("x"):
                a.p0, a.p1 = m["l"] + d[0] * pw, m["l"] + d[1] * pw
            else:
                a.p0, a.p1 = m["t"] + (1 - d[1]) * ph, m["t"] + (1 - d[0]) * ph

    place()
    # plotly's automargin: the margins grow to hold the tick labels, the axis titles, the colour bar and a legend
    for _ in range(2):
        for a in axes.values():
            horizontal = a.name.startswith("x")
            room, _angle = tick_room(a, a.layout.tickfont.size or base, horizontal)
            title = a.layout.title.text
            if title:
                room += 1.3 * title_font(a.layout, base) + 6
            if horizontal:
                side = "t" if a.layout.side == "top" else "b"
                m[side] = max(m[side], room + 4)
                left, right = side_overflow(a, a.layout.tickfont.size or base, W)
                m["l"], m["r"] = m["l"] + left, m["r"] + right
            else:
                m["l"] = max(m["l"], room + 4)
        if bars:
            m["r"] = max(m["r"], bar_w + 0.02 * (W - m["l"] - m["r"]))
        if entries and not horizontal_legend:
            m["r"] = max(m["r"], svg_traces.legend_size(entries, legend_font, False, W)[0]
                         + 0.02 * (W - m["l"] - m["r"]))
        place()
    if W - m["l"] - m["r"] < 20 or H - m["t"] - m["b"] < 20:
        raise Unsupported("no room left for the plot")
    paper_x, paper_y = (m["l"], W - m["r"]), (H - m["b"], m["t"])
    parts = [f'<rect class="bg" width="{W:g}" height="{H:g}" fill="white"/>']
    for a in axes.values():
        if not a.cells:
            parts.append(grid_parts(a, span_across(a, axes, m, W, H)))
    areas: dict[tuple[str, str], dict[str, Any]] = {}

    def area_of(ax: Axis, ay: Axis) -> dict[str, Any]:
        return areas.setdefault((ax.name, ay.name), {"cells": None, "marks": [], "bars": False})

    many = sum(z.size for *_, z in cells) > MAX_RECTS
    for _, trace, ax, ay, xs, ys, z in cells:
        parts.append(svg_traces.heatmap_parts(trace, ax, ay, xs, ys, z, many, base))
        if trace.hoverinfo not in ("skip", "none"):
            area_of(ax, ay)["cells"] = {"x0": xs[0], "y0": ys[0], **svg_traces.heatmap_hovers(trace, xs, ys, z)}
    parts += shape_parts(layout.shapes, axes, paper_x, paper_y)
    points: list[dict[str, Any]] = []
    groups: dict[tuple[str, str], list[int]] = {}  # the bar traces of each subplot: a group at each position
    for i, t in enumerate(fig.data):
        if t.type == "bar":
            groups.setdefault((t.xaxis or "x", t.yaxis or "y"), []).append(i)
    for i, trace in enumerate(fig.data):
        if trace.type == CELL_TRACE:
            continue
        ax, ay = axes[trace.xaxis or "x"], axes[trace.yaxis or "y"]
        own = palette[i % len(palette)]
        if trace.type == "bar":
            group = groups[(ax.name, ay.name)]
            slot = (group.index(i), len(group))
            gap = 0.2 if layout.bargap is None else layout.bargap
            drawn, marks = svg_traces.bar_parts(i, trace, slot, gap, ax, ay, own, base, points)
            area_of(ax, ay)["bars"] = True
        elif trace.mode in LINES:
            drawn, marks = svg_traces.line_parts(i, trace, ax, ay, own, points)
        else:
            drawn, marks = marker_parts(i, trace, ax, ay, points)
        parts.append(drawn)
        area_of(ax, ay)["marks"] += marks
    for a in axes.values():
        parts.append(tick_parts(a, edge(a, axes, m, W, H), base, colour))
    if bars:
        parts.append(colour_bar(bars[0], colour_scale_of(bars[0]),
                                z_range(bars[0], np.asarray(bars[0].z, dtype=np.float64)), bar_ticks,
                                (m["l"], m["t"], W - m["r"], H - m["b"]), base, colour))
    if entries:
        parts.append(_legend(layout.legend, entries, legend_font, horizontal_legend, paper_x, paper_y, colour))
    parts += note_parts(layout.annotations, axes, paper_x, paper_y, base, colour)
    parts += title_parts(layout.title, W, H, paper_x, m["t"], base, colour)
    out = []
    for (xn, yn), area in areas.items():
        ax, ay = axes[xn], axes[yn]
        reach = math.inf if layout.hoverdistance == -1 or area["bars"] else float(layout.hoverdistance or 20)
        out.append(Area((ax.p0, ay.p0, ax.p1, ay.p1), ax.span(), ay.span(), xn, yn, area["cells"], area["marks"],
                        reach))
        parts.append(f'<rect class="area" data-xref="{xn}" data-yref="{yn}" x="{ax.p0:.1f}" y="{ay.p0:.1f}" '
                     f'width="{ax.p1 - ax.p0:.1f}" height="{ay.p1 - ay.p0:.1f}" fill="none"/>')  # a subplot's box
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" class="lc-svg" viewBox="0 0 {W:g} {H:g}" width="{W:g}" '
           f'height="{H:g}" font-family=\'{FONT}\'>{"".join(parts)}</svg>')
    return Drawing(svg, round(W), round(H), out, points)


def _legend(legend: Any, entries: list, font: float, horizontal: bool, paper_x: tuple[float, float],
            paper_y: tuple[float, float], colour: str) -> str:
    """The legend where plotly puts it: right of the plot (x 1.02, top), or a row at the layout's x and y."""
    room = paper_x[1] - paper_x[0]
    w, h = svg_traces.legend_size(entries, font, horizontal, room)
    x = legend.x if legend.x is not None else (0.0 if horizontal else 1.02)
    y = legend.y if legend.y is not None else (-0.1 if horizontal else 1.0)
    left = paper_x[0] + x * room
    yanchor = legend.yanchor or ("top" if y >= 0.67 or not horizontal else "bottom" if y <= 0.33 else "middle")
    if horizontal and legend.y is not None and y < 0:
        yanchor = "top"
    top = paper_y[0] + y * (paper_y[1] - paper_y[0])
    top -= {"top": 0.0, "bottom": h, "middle": h / 2}[yanchor]
    return svg_traces.legend_parts(entries, left, top, font, horizontal, room, colour)

"""Plotly heatmap figures drawn as one SVG on the server, without plotly.js: the cells in the colour scale's colours,
cell text, the colour bar, tick labels, axis titles, the title, subplot grids (`make_subplots`), rectangles and lines
(`add_shape`, `add_hline`), text notes and marker rings. Pure functions of a `go.Figure`, no streamlit.

`draw(fig, width)` lays the figure out as plotly would at that width (margins, axis domains, autorange over the
cells, reversed axes, a colour bar in the right margin) and returns the SVG with, per subplot, what its hover and
clicks need (`Area`): the cells' hover texts, and the markers that take clicks with the point plotly would report.
A figure with anything else (other traces, animation frames, a legend, a colour axis, HTML it cannot draw) raises
`Unsupported`: the caller draws it with plotly instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ui.shared.svg_parts import (
    TICK_GAP,
    colour_at,
    colour_bar,
    colour_scale,
    dark,
    marker_parts,
    nice_step,
    note_parts,
    number_label,
    png_cells,
    shape_parts,
    tick_parts,
    title_parts,
    z_ticks,
)
from ui.shared.svg_text import FONT, Unsupported, fill_template, label_width, plain, rotated_extent, text_svg

CELL_TRACE = "heatmap"
SYMBOLS = {"circle", "square", "circle-open", "square-open"}


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


def _z_range(trace: Any, z: np.ndarray) -> tuple[float, float]:
    finite = z[np.isfinite(z)]
    lo = trace.zmin if trace.zmin is not None else float(finite.min(initial=0.0))
    hi = trace.zmax if trace.zmax is not None else float(finite.max(initial=1.0))
    if trace.zmid is not None and trace.zmin is None and trace.zmax is None:
        half = max(abs(hi - trace.zmid), abs(trace.zmid - lo))
        lo, hi = trace.zmid - half, trace.zmid + half
    return float(lo), float(hi) if hi != lo else float(lo) + 1.0


def _positions(values: Any, n: int, categories: dict[str, int]) -> list[float]:
    """A heatmap's x or y as positions: 0..n-1 when absent, numbers as they are (equally spaced by 1), strings as
    categories in order of first appearance (the axis's category order)."""
    if values is None:
        return [float(i) for i in range(n)]
    values = list(values)
    if len(values) != n:
        raise Unsupported("x or y not one per cell")
    if all(isinstance(v, str) for v in values):
        for v in values:
            categories.setdefault(v, len(categories))
        return [float(categories[v]) for v in values]
    numbers = [float(v) for v in values]
    if any(abs(b - a - 1) > 1e-9 for a, b in zip(numbers, numbers[1:])):
        raise Unsupported("cells not one unit apart")
    return numbers


def _position(value: Any, categories: dict[str, int]) -> float:
    if isinstance(value, str):
        if value not in categories:
            raise Unsupported(f"category {value!r} of no heatmap")
        return float(categories[value])
    return float(value)


@dataclass
class _Axis:
    name: str  # "x", "x2", ...
    layout: Any
    lo: float = math.inf
    hi: float = -math.inf
    categories: dict[str, int] = field(default_factory=dict)
    p0: float = 0.0  # px of its domain's start (left, or bottom for y)
    p1: float = 0.0

    def span(self) -> tuple[float, float]:
        """Data values at the start and end of its px span (left to right; top to bottom for y)."""
        if self.layout.range is not None:
            lo, hi = (float(v) for v in self.layout.range)
        else:
            lo, hi = self.lo, self.hi
        reversed_ = self.layout.autorange == "reversed"
        if self.name.startswith("y"):
            return (lo, hi) if reversed_ else (hi, lo)  # top first
        return (hi, lo) if reversed_ else (lo, hi)

    def position(self, value: Any) -> float:
        return _position(value, self.categories)

    def tick_angle(self, ticks: list[tuple[float, str]], spacing: float, font: float) -> float:
        return _tick_angle(self.layout, ticks, spacing, font)

    def px(self, value: float) -> float:
        a, b = self.span()
        return self.p0 + (value - a) / (b - a) * (self.p1 - self.p0)

    def ticks(self) -> list[tuple[float, str]]:
        if self.layout.showticklabels is False:
            return []
        vals, texts = self.layout.tickvals, self.layout.ticktext
        if vals is not None:
            texts = list(texts) if texts is not None else [str(v) for v in vals]
            return [(_position(v, self.categories), str(t)) for v, t in zip(vals, texts)]
        if self.categories:
            return [(float(i), name) for name, i in self.categories.items()]
        lo, hi = sorted(self.span())
        count = max(2, int(abs(self.p1 - self.p0) / (70 if self.name.startswith("x") else 40)))
        step = nice_step((hi - lo) / count, integer=True)
        first = math.ceil(lo / step) * step
        return [(v, number_label(v, step)) for v in np.arange(first, hi + 1e-9, step)]


def _axis_key(ref: str, letter: str) -> str:
    return f"{letter}axis{ref[1:]}"


def colour_scale_of(trace: Any) -> list[tuple[float, tuple[float, float, float]]]:
    scale = colour_scale(trace.colorscale or "Plasma")
    return [(1 - p, c) for p, c in reversed(scale)] if trace.reversescale else scale


def _edge(a: _Axis, axes: dict[str, _Axis], m: dict[str, float], W: float, H: float) -> float:
    """px of the plot side an axis's labels stand on: its anchor axis's top or bottom (x), left (y)."""
    letter = "y" if a.name.startswith("x") else "x"
    anchor = axes.get(a.layout.anchor or letter)
    if a.name.startswith("x"):
        top, bottom = (anchor.p0, anchor.p1) if anchor else (m["t"], H - m["b"])
        return top if a.layout.side == "top" else bottom
    if a.layout.side == "right":
        raise Unsupported("labels on the right")
    return anchor.p0 if anchor else m["l"]


def _check(fig: go.Figure) -> None:
    layout = fig.layout
    if fig.frames or layout.updatemenus or layout.sliders or layout.images:
        raise Unsupported("frames, buttons, sliders or images")
    if not any(t.type == CELL_TRACE for t in fig.data):
        raise Unsupported("no heatmap")
    for trace in fig.data:
        if trace.type == CELL_TRACE:
            if trace.coloraxis is not None:
                raise Unsupported("colour axis")
            if np.ndim(trace.z) != 2:
                raise Unsupported("z not a matrix")
        elif trace.type == "scatter":
            if trace.mode != "markers" or (trace.marker.symbol or "circle") not in SYMBOLS:
                raise Unsupported("scatter other than markers")
            if trace.showlegend is not False and layout.showlegend is not False:
                raise Unsupported("a legend")
        else:
            raise Unsupported(f"{trace.type} trace")
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


def _margins(layout: Any) -> dict[str, float]:
    m = layout.margin
    return {"l": 80 if m.l is None else m.l, "r": 80 if m.r is None else m.r,
            "t": 100 if m.t is None else m.t, "b": 80 if m.b is None else m.b}


def _tick_angle(axis: Any, ticks: list[tuple[float, str]], spacing: float, font: float) -> float:
    if isinstance(axis.tickangle, (int, float)):
        return float(axis.tickangle)
    widest = max((label_width(t, font) for _, t in ticks), default=0.0)
    return 0.0 if widest + 4 <= spacing else -90.0


def _tick_room(axis: _Axis, font: float, horizontal: bool) -> tuple[float, float]:
    """(px the tick labels take away from the plot, the labels' angle)."""
    ticks = axis.ticks()
    if not ticks:
        return 0.0, 0.0
    if not horizontal:
        return max(label_width(t, font) for _, t in ticks) + TICK_GAP, 0.0
    spacing = abs(axis.p1 - axis.p0) / max(len(ticks), 1)
    angle = _tick_angle(axis.layout, ticks, spacing, font)
    return max(rotated_extent(label_width(t, font), font, angle)[1] for _, t in ticks) + TICK_GAP, angle


def _title_font(axis_layout: Any, base: float) -> float:
    return axis_layout.title.font.size or round(base * 14 / 12)


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


def draw(fig: go.Figure, width: float) -> Drawing:
    """The figure as SVG at `width` px (its layout's width when it has one), laid out as plotly lays it out;
    Unsupported when it holds anything this renderer does not draw."""
    _check(fig)
    layout = fig.layout
    W, H = float(layout.width or width), float(layout.height or 450)
    base = float(layout.font.size or 12)
    colour = layout.font.color or "#31333f"
    m = _margins(layout)
    axes: dict[str, _Axis] = {}

    def axis(ref: str, letter: str) -> _Axis:
        name = (ref or letter)
        if name not in axes:
            axes[name] = _Axis(name, layout[_axis_key(name, letter)])
        return axes[name]

    cells = []  # (trace index, trace, x axis, y axis, x positions, y positions, z)
    for i, trace in enumerate(fig.data):
        if trace.type != CELL_TRACE:
            continue
        z = np.asarray(trace.z, dtype=np.float64)  # (rows, columns)
        ax, ay = axis(trace.xaxis, "x"), axis(trace.yaxis, "y")
        xs = _positions(trace.x, z.shape[1], ax.categories)
        ys = _positions(trace.y, z.shape[0], ay.categories)
        ax.lo, ax.hi = min(ax.lo, xs[0] - 0.5), max(ax.hi, xs[-1] + 0.5)
        ay.lo, ay.hi = min(ay.lo, ys[0] - 0.5), max(ay.hi, ys[-1] + 0.5)
        cells.append((i, trace, ax, ay, xs, ys, z))
    for trace in fig.data:
        if trace.type == "scatter":
            ax, ay = axis(trace.xaxis, "x"), axis(trace.yaxis, "y")
            if not math.isfinite(ax.lo) or not math.isfinite(ay.lo):
                raise Unsupported("markers outside every heatmap's axes")
    bars = _colour_bars(fig)
    bar_ticks: list[tuple[float, str]] = []
    bar_w = 0.0
    if bars:
        bar_w, bar_ticks = _bar_width(bars[0], *_z_range(bars[0], np.asarray(bars[0].z, dtype=np.float64)), base)

    def place() -> None:  # the axes' px from the margins and their domains
        pw, ph = W - m["l"] - m["r"], H - m["t"] - m["b"]
        for a in axes.values():
            d = a.layout.domain or (0.0, 1.0)
            if a.name.startswith("x"):
                a.p0, a.p1 = m["l"] + d[0] * pw, m["l"] + d[1] * pw
            else:
                a.p0, a.p1 = m["t"] + (1 - d[1]) * ph, m["t"] + (1 - d[0]) * ph

    place()
    # plotly's automargin: the margins grow to hold the tick labels, the axis titles and the colour bar
    for _ in range(2):
        for a in axes.values():
            horizontal = a.name.startswith("x")
            room, _angle = _tick_room(a, a.layout.tickfont.size or base, horizontal)
            title = a.layout.title.text
            if title:
                room += 1.3 * _title_font(a.layout, base) + 6
            if horizontal:
                side = "t" if a.layout.side == "top" else "b"
                m[side] = max(m[side], room + 4)
            else:
                m["l"] = max(m["l"], room + 4)
        if bars:
            m["r"] = max(m["r"], bar_w + 0.02 * (W - m["l"] - m["r"]))
        place()
    if W - m["l"] - m["r"] < 20 or H - m["t"] - m["b"] < 20:
        raise Unsupported("no room left for the plot")
    parts = [f'<rect class="bg" width="{W:g}" height="{H:g}" fill="white"/>']
    areas: dict[tuple[str, str], dict[str, Any]] = {}
    many = sum(z.size for *_, z in cells) > MAX_RECTS
    for _, trace, ax, ay, xs, ys, z in cells:
        parts.append(_cells_svg(trace, ax, ay, xs, ys, z, many, base))
        area = areas.setdefault((ax.name, ay.name), {"cells": None, "marks": []})
        if trace.hoverinfo not in ("skip", "none"):
            area["cells"] = {"x0": xs[0], "y0": ys[0], "text": _cell_hovers(trace, xs, ys, z)}
    paper_x, paper_y = (m["l"], W - m["r"]), (H - m["b"], m["t"])
    parts += shape_parts(layout.shapes, axes, paper_x, paper_y)
    points: list[dict[str, Any]] = []
    for i, trace in enumerate(fig.data):
        if trace.type == "scatter":
            ax, ay = axes[trace.xaxis or "x"], axes[trace.yaxis or "y"]
            drawn, marks = marker_parts(i, trace, ax, ay, points)
            parts.append(drawn)
            areas.setdefault((ax.name, ay.name), {"cells": None, "marks": []})["marks"] += marks
    for a in axes.values():
        parts.append(tick_parts(a, _edge(a, axes, m, W, H), base, colour))
    if bars:
        parts.append(colour_bar(bars[0], colour_scale_of(bars[0]),
                                _z_range(bars[0], np.asarray(bars[0].z, dtype=np.float64)), bar_ticks,
                                (m["l"], m["t"], W - m["r"], H - m["b"]), base, colour))
    parts += note_parts(layout.annotations, axes, paper_x, paper_y, base, colour)
    parts += title_parts(layout.title, W, H, paper_x, m["t"], base, colour)
    reach = math.inf if layout.hoverdistance == -1 else float(layout.hoverdistance or 20)
    out = []
    for (xn, yn), area in areas.items():
        ax, ay = axes[xn], axes[yn]
        out.append(Area((ax.p0, ay.p0, ax.p1, ay.p1), ax.span(), ay.span(), xn, yn, area["cells"], area["marks"],
                        reach))
        parts.append(f'<rect class="area" data-xref="{xn}" data-yref="{yn}" x="{ax.p0:.1f}" y="{ay.p0:.1f}" '
                     f'width="{ax.p1 - ax.p0:.1f}" height="{ay.p1 - ay.p0:.1f}" fill="none"/>')  # a subplot's box
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" class="lc-svg" viewBox="0 0 {W:g} {H:g}" width="{W:g}" '
           f'height="{H:g}" font-family=\'{FONT}\'>{"".join(parts)}</svg>')
    return Drawing(svg, round(W), round(H), out, points)


MAX_RECTS = 2500  # cells drawn one <rect> each; more, and each heatmap is one pixelated image (as plotly does)


def _cells_svg(trace: Any, ax: _Axis, ay: _Axis, xs: list[float], ys: list[float], z: np.ndarray, image: bool,
               base: float) -> str:
    scale = colour_scale_of(trace)
    lo, hi = _z_range(trace, z)
    gap_x, gap_y = (trace.xgap or 0) / 2, (trace.ygap or 0) / 2
    left, right = sorted((ax.px(xs[0] - 0.5), ax.px(xs[-1] + 0.5)))
    top, bottom = sorted((ay.px(ys[0] - 0.5), ay.px(ys[-1] + 0.5)))
    colours = [[colour_at(scale, (v - lo) / (hi - lo)) if math.isfinite(v) else None for v in row] for row in z]
    out = []
    if image and not gap_x and not gap_y:
        flip_x, flip_y = ax.px(xs[0]) > ax.px(xs[-1]), ay.px(ys[0]) > ay.px(ys[-1])
        out.append(png_cells(colours, left, top, right - left, bottom - top, flip_x, flip_y))
    else:
        for r, y in enumerate(ys):
            y0, y1 = sorted((ay.px(y - 0.5), ay.px(y + 0.5)))
            for c, x in enumerate(xs):
                if colours[r][c] is None:
                    continue
                x0, x1 = sorted((ax.px(x - 0.5), ax.px(x + 0.5)))
                out.append(f'<rect class="cell" x="{x0 + gap_x:.1f}" y="{y0 + gap_y:.1f}" '
                           f'width="{max(x1 - x0 - 2 * gap_x, 0.5):.1f}" height="{max(y1 - y0 - 2 * gap_y, 0.5):.1f}" '
                           f'fill="{colours[r][c]}" data-r="{r}" data-c="{c}"/>')
    if trace.texttemplate:
        font = trace.textfont.size or base
        texts = np.asarray(trace.text, dtype=object) if trace.text is not None else None
        for r, y in enumerate(ys):
            for c, x in enumerate(xs):
                values = {"z": z[r, c], "x": trace.x[c] if trace.x is not None else c,
                          "y": trace.y[r] if trace.y is not None else r,
                          "text": "" if texts is None else texts[r][c]}
                label = fill_template(trace.texttemplate, values)
                fill = "white" if colours[r][c] and dark(colours[r][c]) else "#262730"
                out.append(text_svg(ax.px(x), ay.px(y), label, font, anchor="middle", colour=fill, cls="ct"))
    return "".join(out)


def _cell_hovers(trace: Any, xs: list[float], ys: list[float], z: np.ndarray) -> list[list[str]]:
    template = trace.hovertemplate or "x: %{x}<br>y: %{y}<br>z: %{z}"
    custom = trace.customdata
    texts = trace.text
    out = []
    for r in range(len(ys)):
        row = []
        for c in range(len(xs)):
            values = {"z": z[r, c], "x": trace.x[c] if trace.x is not None else c,
                      "y": trace.y[r] if trace.y is not None else r}
            if custom is not None:
                values["customdata"] = _item(custom[r][c])
            if texts is not None and not isinstance(texts, str):
                values["text"] = texts[r][c]
            row.append(plain(fill_template(template, values)))
        out.append(row)
    return out


def _item(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [v.item() if hasattr(v, "item") else v for v in value.tolist()]
    return value.item() if hasattr(value, "item") else value

"""The axes of an SVG figure (`ui.shared.svg_figure`): where a value lands in px, category positions, the tick
labels plotly would write (given, or whole or round numbers at a spacing that fits), the room the labels and titles
take (plotly's automargin), and the side of the plot each axis stands on. Pure functions, no streamlit."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ui.shared.svg_parts import TICK_GAP, nice_step, number_label
from ui.shared.svg_text import Unsupported, label_width, rotated_extent


def positions(values: Any, n: int, categories: dict[str, int]) -> list[float]:
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


def position(value: Any, categories: dict[str, int]) -> float:
    if isinstance(value, str):
        if value not in categories:
            raise Unsupported(f"category {value!r} of no trace")
        return float(categories[value])
    return float(value)


@dataclass
class Axis:
    name: str  # "x", "x2", ...
    layout: Any
    lo: float = math.inf
    hi: float = -math.inf
    categories: dict[str, int] = field(default_factory=dict)
    font: float = 12.0  # px of its tick labels
    cells: bool = False  # holds heatmap cells or bars' positions: whole-number ticks
    pad: bool = False  # autorange pads 5% beyond the data's far end (a bar's value axis)
    p0: float = 0.0  # px of its domain's start (left, or bottom for y)
    p1: float = 0.0
    # read from the layout once: plotly checks every attribute it is asked for (~10 µs), and px() runs for every
    # point and tick drawn
    fixed: tuple[float, float] | None = field(init=False)
    reversed: bool = field(init=False)

    def __post_init__(self) -> None:
        given = self.layout.range
        self.fixed = None if given is None else (float(given[0]), float(given[1]))
        self.reversed = self.layout.autorange == "reversed"

    def span(self) -> tuple[float, float]:
        """Data values at the start and end of its px span (left to right; top to bottom for y)."""
        if self.fixed is not None:
            lo, hi = self.fixed
        else:
            lo, hi = self.lo, self.hi
            if not math.isfinite(lo):
                lo, hi = -1.0, 1.0  # an axis with nothing on it (plotly's default range)
            if hi - lo < 1e-12:
                lo, hi = lo - 1, hi + 1
            if self.pad:
                lo, hi = (lo - 0.05 * (hi - lo) if lo < 0 else lo), (hi + 0.05 * (hi - lo) if hi > 0 else hi)
        if self.name.startswith("y"):
            return (lo, hi) if self.reversed else (hi, lo)  # top first
        return (hi, lo) if self.reversed else (lo, hi)

    def position(self, value: Any) -> float:
        return position(value, self.categories)

    def tick_angle(self, ticks: list[tuple[float, str]], spacing: float, font: float) -> float:
        return tick_angle(self.layout, ticks, spacing, font)

    def px(self, value: float) -> float:
        a, b = self.span()
        return self.p0 + (value - a) / (b - a) * (self.p1 - self.p0)

    def ticks(self) -> list[tuple[float, str]]:
        """The tick labels it draws: every step-th of them where more would run into each other at its length
        (plotly draws a tick array whole; the hover still names every cell)."""
        ticks = self._ticks()
        if len(ticks) < 2:
            return ticks
        spacing = abs(self.px(ticks[1][0]) - self.px(ticks[0][0]))
        if spacing <= 0:
            return ticks
        if self.name.startswith("x"):
            angle = tick_angle(self.layout, ticks, spacing, self.font)
            need = (1.25 * self.font / abs(math.sin(math.radians(angle))) if angle else
                    max(label_width(t, self.font) for _, t in ticks) + 4)
        else:
            need = 1.1 * self.font
        return ticks[::max(1, math.ceil(need / spacing - 1e-6))]

    def _ticks(self) -> list[tuple[float, str]]:
        if self.layout.showticklabels is False:
            return []
        vals, texts = self.layout.tickvals, self.layout.ticktext
        if vals is not None:
            texts = list(texts) if texts is not None else [number_label(v, 1e-6) if isinstance(v, float) else str(v)
                                                           for v in vals]
            return [(position(v, self.categories), str(t)) for v, t in zip(vals, texts)]
        if self.categories:
            return [(float(i), name) for name, i in self.categories.items()]
        lo, hi = sorted(self.span())
        count = max(2, int(abs(self.p1 - self.p0) / (80 if self.name.startswith("x") else 32)))
        step = nice_step((hi - lo) / count, integer=self.cells)
        first = math.ceil(lo / step - 1e-9) * step
        return [(float(v), number_label(float(v), step)) for v in np.arange(first, hi + step * 1e-6, step)]


def axis_key(ref: str, letter: str) -> str:
    return f"{letter}axis{ref[1:]}"


def edge(a: Axis, axes: dict[str, Axis], m: dict[str, float], W: float, H: float) -> float:
    """px of the plot side an axis's labels stand on: its anchor axis's top or bottom (x), left (y)."""
    letter = "y" if a.name.startswith("x") else "x"
    anchor = axes.get(a.layout.anchor or letter)
    if a.name.startswith("x"):
        top, bottom = (anchor.p0, anchor.p1) if anchor else (m["t"], H - m["b"])
        return top if a.layout.side == "top" else bottom
    if a.layout.side == "right":
        raise Unsupported("labels on the right")
    return anchor.p0 if anchor else m["l"]


def margins(layout: Any) -> dict[str, float]:
    m = layout.margin
    return {"l": 80 if m.l is None else m.l, "r": 80 if m.r is None else m.r,
            "t": 100 if m.t is None else m.t, "b": 80 if m.b is None else m.b}


def tick_angle(axis: Any, ticks: list[tuple[float, str]], spacing: float, font: float) -> float:
    if isinstance(axis.tickangle, (int, float)):
        return float(axis.tickangle)
    widest = max((label_width(t, font) for _, t in ticks), default=0.0)
    return 0.0 if widest + 4 <= spacing else -90.0


def tick_room(axis: Axis, font: float, horizontal: bool) -> tuple[float, float]:
    """(px the tick labels take away from the plot, the labels' angle)."""
    ticks = axis.ticks()
    if not ticks:
        return 0.0, 0.0
    if not horizontal:
        return max(label_width(t, font) for _, t in ticks) + TICK_GAP, 0.0
    spacing = abs(axis.p1 - axis.p0) / max(len(ticks), 1)
    angle = tick_angle(axis.layout, ticks, spacing, font)
    return max(rotated_extent(label_width(t, font), font, angle)[1] for _, t in ticks) + TICK_GAP, angle


def title_font(axis_layout: Any, base: float) -> float:
    return axis_layout.title.font.size or round(base * 14 / 12)


def span_across(a: Axis, axes: dict[str, Axis], m: dict[str, float], W: float, H: float) -> tuple[float, float]:
    """px from and to which an axis's grid lines run: across its anchor axis's extent."""
    letter = "y" if a.name.startswith("x") else "x"
    anchor = axes.get(a.layout.anchor or letter)
    if anchor is not None:
        return anchor.p0, anchor.p1
    return (m["t"], H - m["b"]) if a.name.startswith("x") else (m["l"], W - m["r"])


def side_overflow(axis: Axis, font: float, width: float) -> tuple[float, float]:
    """px by which an x axis's tick labels run past the figure's left and right edges (a turned label at the last
    column reaches out to the right): plotly's automargin grows those margins by as much."""
    ticks = axis.ticks()
    if not ticks or not axis.name.startswith("x"):
        return 0.0, 0.0
    spacing = abs(axis.p1 - axis.p0) / max(len(ticks), 1)
    angle = tick_angle(axis.layout, ticks, spacing, font)
    starts = (angle < 0) == (axis.layout.side == "top")  # how tick_parts anchors a turned label
    left, right = 0.0, width
    for value, text in ticks:
        x, w = axis.px(value), label_width(text, font)
        across = rotated_extent(w, font, angle)[0]
        if angle == 0:
            left, right = min(left, x - w / 2), max(right, x + w / 2)
        elif starts:
            right = max(right, x + across)
        else:
            left = min(left, x - across)
    return max(0.0, -left), max(0.0, right - width)

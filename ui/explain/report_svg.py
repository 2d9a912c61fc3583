"""The HTML report's charts as inline SVG: drawn by vl-convert (`transformer.charts.render`, Vega's own renderer),
then made compact for a file of dozens of maps. No streamlit.

Vega writes an accessibility description on every mark (`aria-label`, built from the chart's encodings: a cell's
row, column and value) and ARIA roles on every group. The report keeps each mark's description as an SVG `<title>`,
which any browser shows on hover with no script, and drops the rest; coordinates keep one decimal (a tenth of a
pixel), and the font is written once in the report's style instead of on every text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import altair as alt

from transformer.charts.render import to_svg
from transformer.charts.theme import NORMAL

MAP_WIDTH = 330  # px of a small map's grid: two side by side (with their labels and legends) in the report's 1100 px
SMALL = dataclasses.replace(NORMAL, page=MAP_WIDTH + 120)  # what a small map's labels are laid out for
# The font the charts are laid out with (vl-convert measures every label with it) and read with: Arial's metrics,
# which Liberation Sans shares, so that a label measured on a Linux server fits the same room in a reader's browser
# (the app's Source Sans Pro is a web font the report does not carry).
FONT = "Arial, 'Liberation Sans', Helvetica, 'Noto Sans Arabic', sans-serif"
STYLE = (".map{display:inline-block;vertical-align:top}.map svg{max-width:100%;height:auto}"
         f".map text{{font-family:{FONT}}}")
WORKERS = 4  # charts drawn at once (vl-convert runs each in its own JavaScript worker)

_MARK = re.compile(r'<(path|rect)([^<>]*?) aria-label="([^"]*)"([^<>]*?)/>')  # a mark: a cell, a bar
_ARIA = re.compile(r' (?:aria-label|aria-roledescription|aria-hidden|role)="[^"]*"')
_NUMBER = re.compile(r"-?\d+\.\d{2,}")
_GEOMETRY = re.compile(r' (d|transform|points)="([^"]*)"')
_RGB = re.compile(r'"rgb\((\d+), (\d+), (\d+)\)"')
HOVER_NUMBERS = ".3~f"  # a number the hover says without a format of its own (a cell's value): as the maps print


def _round(value: re.Match) -> str:
    shown = f"{float(value.group()):.1f}".removesuffix(".0")
    return "0" if shown == "-0" else shown


def compact(svg: str) -> str:
    """svg with each mark's aria-label as its hover title, the other ARIA attributes dropped, coordinates to a tenth
    of a pixel, colours in hex and the font left to the report's style."""
    svg = _MARK.sub(lambda m: f"<{m[1]}{m[2]}{m[4]}><title>{m[3]}</title></{m[1]}>", svg)
    svg = _ARIA.sub("", svg)
    svg = _GEOMETRY.sub(lambda m: f' {m[1]}="{_NUMBER.sub(_round, m[2])}"', svg)
    svg = _RGB.sub(lambda m: '"#{:02x}{:02x}{:02x}"'.format(*map(int, m.groups())), svg)
    return svg.replace(f' font-family="{FONT}"', "")


def figures(charts: Sequence[tuple[alt.TopLevelMixin, int | None]]) -> list[str]:
    """(chart, width) pairs as the report's figures, in order: each a compact SVG in a `map` block, its container
    width drawn at `width` px (None: the renderer's), several drawn at once."""
    def one(item: tuple[alt.TopLevelMixin, int | None]) -> str:
        chart, width = item
        spec = chart.to_dict(validate=False)  # their tests validate the builders: half its time
        spec["config"] = {**spec.get("config", {}), "font": FONT, "tooltipFormat": {"numberFormat": HOVER_NUMBERS}}
        return f'<div class="map">{compact(to_svg(spec) if width is None else to_svg(spec, width))}</div>'

    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(one, charts))


def figure(chart: alt.TopLevelMixin, width: int | None = None) -> str:
    """One chart as a report figure (`figures`)."""
    return figures([(chart, width)])[0]

"""Charts as static pictures, drawn by vl-convert (Vega's own renderer, what Altair's `chart.save` uses): SVG for
the HTML report and the app's SVG downloads, PNG for exports. Offline: vl-convert carries Vega and Vega-Lite."""

from __future__ import annotations

import altair as alt
import vl_convert

VEGA_LITE = "6.1"  # vl-convert's Vega-Lite closest to Altair's schema (v6.x)
WIDTH = 760  # px a chart laid out for its container (width "container") is drawn at outside a page


def spec(chart: alt.TopLevelMixin | dict, width: int = WIDTH) -> dict:
    """The chart's Vega-Lite spec with the theme applied and container widths fixed (no container outside a page)."""
    if isinstance(chart, dict):
        return _fixed(chart, width)
    with alt.data_transformers.enable(max_rows=None):  # Altair refuses over 5,000 rows; a map or projector has more
        return _fixed(chart.to_dict(), width)


def _fixed(node, width: int):
    if isinstance(node, dict):
        return {k: (width if k == "width" and v == "container" else _fixed(v, width)) for k, v in node.items()}
    if isinstance(node, list):
        return [_fixed(v, width) for v in node]
    return node


def to_svg(chart: alt.TopLevelMixin | dict, width: int = WIDTH) -> str:
    """The chart as a self-contained SVG document (its text as text: searchable, selectable)."""
    return vl_convert.vegalite_to_svg(spec(chart, width), vl_version=VEGA_LITE)


def to_png(chart: alt.TopLevelMixin | dict, width: int = WIDTH, scale: float = 2.0) -> bytes:
    """The chart as PNG at `scale` pixels per px (2: sharp on a projector)."""
    return vl_convert.vegalite_to_png(spec(chart, width), vl_version=VEGA_LITE, scale=scale)

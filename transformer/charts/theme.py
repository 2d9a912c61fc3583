"""One visual language for every chart and view: the font, the sizes (everyday and class mode), the colours.

Registered once as the Altair theme "attention-explorer" (enabled on import), so that every chart of the app, the
notebook and the HTML report reads the same; the package's HTML views (head view, model view, Eq. 1, beam tree,
token flow: `transformer.explain.views`) take their font, sizes and colours from here too.

Class mode (a projector at 1280x720, read from the back of a room) is `CLASS`: a chart built with it carries its
larger sizes in its own config, which Altair lays over the theme's.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt

NAME = "attention-explorer"
# Streamlit's font first (the app loads it); the rest for a notebook or a saved report, Arabic included.
FONT = "'Source Sans Pro', system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'Noto Sans Arabic', sans-serif"
TEXT = "#262730"  # Streamlit's text colour
MUTED = "#888888"
GRID = "#e6e6e6"

# Colour schemes (Vega's names): attention weights light to dark blue, signed values red (more) to blue (less).
WEIGHTS = "blues"
DIVERGING = "redblue"  # reversed where it is used: red is positive
WEIGHT_DARK = "#08306b"  # the darkest blue of WEIGHTS: one weight drawn alone (the views' cells and lines)
POSITIVE, NEGATIVE = "#c0392b", "#2e6da4"  # a bar that raises f, one that lowers it; a view's numbers above, below 0
MAY_ATTEND, MASKED = "#2c7a3f", "#e6e6e6"  # a mask's two colours
NO_VALUE = "#d9d9d9"  # a cell whose value is missing (NaN)
GOLD = "#e4572e"  # a gold word link's square
PICKED = "#d62728"  # the picked cell's outline; the cursor on the training curves; the views' clicked key or stage
BEST = "black"  # the best head's outline; the beam tree's winning path
FORCED = "#7b3fa0"  # a piece forced into the output (violet, everywhere it is marked)
HIGHLIGHT = "#fff3c4"  # a highlighted row or stage in the views
# One colour per head or series (Tableau 10, as BertViz uses a categorical scale): distinct on a projector, in print.
CATEGORIES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
              "#17becf")


@dataclass(frozen=True)
class Sizes:
    """px of a chart's (and an HTML view's) text and cells."""

    label: int  # axis labels (the tokens), legends, tooltips
    title: int  # a chart's title
    cell: int  # numbers written in cells and on bars
    row: int  # a heatmap row's height
    view: int  # the smallest text of an HTML view (`View.zoomed` brings it to `label`): the beam tree's pieces
    body: int  # an HTML view's own text: its token columns, headings and captions (its notes are at `label`)
    page: int  # the page's width beside the open sidebar at 1280 px: what a full-width chart is laid out for


# px around every chart: the browser's glyph boxes run a third of a font size past the text heights Vega lays out
# with (a rotated axis title, the last label of a legend), and Streamlit pads only the bottom of a chart it draws
PADDING = {"left": 8, "top": 6, "right": 8, "bottom": 8}
NORMAL = Sizes(label=12, title=15, cell=11, row=22, view=11, body=13, page=820)
CLASS = Sizes(label=18, title=22, cell=18, row=34, view=18, body=21, page=770)  # class mode: 18 px at the least


def config(sizes: Sizes = NORMAL) -> dict:
    """The Vega-Lite config of every chart at these sizes."""
    return {
        "font": FONT,
        "background": "white",
        "view": {"stroke": None, "continuousWidth": sizes.page - 120, "continuousHeight": 260},
        "axis": {"labelFontSize": sizes.label, "titleFontSize": sizes.label, "labelColor": TEXT, "titleColor": TEXT,
                 "titleFontWeight": "normal", "gridColor": GRID, "domainColor": MUTED, "tickColor": MUTED,
                 # Vega leaves out a label that would overlap another; it estimates a line as one font size tall,
                 # the browser's glyphs take about 1.3: the separation keeps the shown ones apart on screen too
                 "labelLimit": 40 * sizes.label, "labelOverlap": "greedy",
                 "labelSeparation": round(0.35 * sizes.label)},
        "header": {"labelFontSize": sizes.label, "titleFontSize": sizes.label, "labelColor": TEXT},
        "legend": {"labelFontSize": sizes.label, "titleFontSize": sizes.label, "titleFontWeight": "normal",
                   "gradientThickness": 12, "labelColor": TEXT, "titleColor": TEXT},
        # frame "bounds": a title starts at the chart's left edge and may run as wide as the whole chart (axis labels
        # and legend included), not only its plot: a map in a third of the page keeps its title whole
        "title": {"fontSize": sizes.title, "subtitleFontSize": sizes.label, "anchor": "start", "frame": "bounds",
                  "color": TEXT, "subtitleColor": TEXT, "fontWeight": 600, "offset": 8},
        "text": {"fontSize": sizes.cell, "color": TEXT},
        "range": {"category": list(CATEGORIES)},
        "scale": {"bandPaddingInner": 0.08},
    }


def sized(chart: alt.TopLevelMixin, sizes: Sizes) -> alt.TopLevelMixin:
    """chart at sizes: NORMAL is the theme's own; any other is laid over it in the chart's config."""
    return chart if sizes == NORMAL else chart.configure(**config(sizes))


# Altair refuses data of more than 5,000 rows by default; the builders bound their own data (a heatmap's MAX_CELLS,
# the model view's pooled maps, the projector's points) and say so on the chart.
alt.data_transformers.disable_max_rows()


@alt.theme.register(NAME, enable=True)
def _theme() -> alt.theme.ThemeConfig:
    return {"config": config(NORMAL), "padding": PADDING}

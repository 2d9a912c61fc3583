"""Class mode: a projector-friendly layout a teacher switches on in the sidebar, kept in the link (`?class=1`).

Larger text everywhere (Streamlit sizes its text in rem, so one root font size scales it), chart labels and
cell numbers at a size read from the back of a room at 1280x720 (`enlarge`, applied by `ui.shared.charts.show.chart` to
every plotly figure; `view` and `zoom` for the package's SVG views, applied by `ui.shared.attention.svg_views`), and
tables
drawn whole rather than in a grid that scrolls inside itself (`table`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui.shared import heatmaps

if TYPE_CHECKING:  # the views load torch: a page without a model never needs them
    from transformer.explain.views import View

PARAM = "class"  # its query parameter, on every page: class=1
KEY = "class_mode"  # session state: on or off, across pages
TOGGLE = "_class_mode_toggle"  # the sidebar widget (its state is dropped on a page switch; KEY is not)
ROOT_PX = 21  # the page's root font size in class mode (Streamlit's default is 16)
LABEL_PX = 18  # tick labels of every chart, the heatmaps' token labels included
CELL_PX = 18  # numbers written in heatmap cells
TITLE_PX = 22
LINE_HEIGHT = 1.25  # a label's height in font sizes, rotated labels included
PAGE_PX = 770  # the page's width at 1280x720 in class mode, beside the open sidebar
COLOUR_BAR_PX = 100  # a heatmap's colour bar with its numbers at LABEL_PX
CSS = f"""<style>
html {{ font-size: {ROOT_PX}px; }}
.prob-table td, .prob-table th {{ font-size: 1.05rem; padding: 4px 10px; }}
[data-testid="stTable"] table, [data-testid="stTable"] th, [data-testid="stTable"] td {{ font-size: 1rem; }}
[data-testid="stCaptionContainer"] {{ font-size: 0.95rem; }}
</style>"""


def is_on() -> bool:
    return bool(st.session_state.get(KEY, False))


def _toggled() -> None:
    if (on := st.session_state.get(TOGGLE)) is not None:
        st.session_state[KEY] = on


def seed(params: dict[str, str]) -> None:
    """Class mode on or off as the link says, before anything of the page is drawn at its size."""
    if PARAM in params:
        st.session_state[KEY] = params[PARAM] == "1"


def sidebar_toggle(params: dict[str, str]) -> None:
    """The sidebar's switch, seeded from the link's `class` (params: the query parameters the page was opened with)
    and written back into it; in class mode, the page's larger fonts."""
    seed(params)
    st.session_state[TOGGLE] = is_on()
    st.sidebar.toggle("Class mode (projector)", key=TOGGLE, on_change=_toggled,
                      help="Larger text, chart labels and cell numbers, readable from the back of a room; tables "
                           "drawn whole. Kept in the link: share it with `class=1`.")
    if is_on():
        st.query_params[PARAM] = "1"
        st.html(CSS)
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def zoom(font_px: float) -> float:
    """The factor that brings a drawing whose smallest text is font_px to LABEL_PX in class mode (1 otherwise)."""
    return max(1.0, LABEL_PX / font_px) if is_on() else 1.0


def view(drawn: View) -> View:
    """An SVG view of `transformer.explain.views` at class mode's size: magnified whole, so that its smallest text
    is LABEL_PX and nothing that was apart runs together."""
    return drawn.zoomed(LABEL_PX) if is_on() else drawn


def map_columns(n: int) -> tuple[list[Any], float]:
    """Places for n heatmaps side by side, and each one's share of the page's width (`ui.shared.charts.show.chart`). In
    class mode they stand one under another at the page's width: beside 18 px token labels and a colour bar, half
    the page or less leaves a map's grid a sliver (55 px for two bible sentences' maps, 16 px for a third)."""
    if is_on():
        return [st.container() for _ in range(n)], 1.0
    return list(st.columns(n)), 1 / n


def table(container: Any, data: pd.DataFrame, **kwargs: Any) -> Any:
    """st.dataframe, or in class mode st.table: every row and column on the page, no scrolling inside a grid."""
    if is_on():
        return container.table(data)
    return container.dataframe(data, **kwargs)


def _label_room(axis: Any, horizontal: bool, font: int) -> float:
    """px a tick label of this font needs along its axis: a line for rows and turned column labels, the text's
    width for upright column labels."""
    angle = axis.tickangle if isinstance(axis.tickangle, (int, float)) else 0
    if not horizontal:
        return LINE_HEIGHT * font
    if abs(angle) >= 30:
        return LINE_HEIGHT * font / abs(math.sin(math.radians(angle)))
    longest = max((len(str(t)) for t in axis.ticktext or ()), default=1)
    return 0.6 * font * longest + 8


def _thinned(axis: Any, spacing_px: float, horizontal: bool, font: int = LABEL_PX) -> None:
    """Keep every k-th label of an array axis so that labels of `font` do not overlap (the hover still names
    every token)."""
    values, texts = axis.tickvals, axis.ticktext
    if axis.tickmode != "array" or not values or not texts or spacing_px <= 0:
        return
    step = max(1, math.ceil(_label_room(axis, horizontal, font) / spacing_px))
    if step > 1:
        axis.tickvals, axis.ticktext = list(values)[::step], list(texts)[::step]


def thin_columns(fig: go.Figure, share: float) -> go.Figure:
    """Outside class mode: a heatmap's column labels, at their own size, thinned to the width of the page's column
    the figure has (share: 0.5 in one of two; heatmaps size them for the page's whole width). Changes fig in place
    and returns it."""
    if share >= 1:
        return fig
    layout = fig.layout
    bar = any(t.type == "heatmap" and t.showscale is not False for t in fig.data)
    grid_px = max(heatmaps.PAGE_PX * share - (layout.margin.l or 80) - (layout.margin.r or 80)
                  - heatmaps.COLOUR_BAR_PX * bar, 60)
    for name in [n for n in layout if n.startswith("xaxis")]:
        axis = layout[name]
        count = len(axis.tickvals) if axis.tickvals is not None else 0
        part = axis.domain[1] - axis.domain[0] if axis.domain else 1.0
        if count:
            _thinned(axis, grid_px * part / count, True, axis.tickfont.size or 12)
    return fig


def enlarge(fig: go.Figure, share: float = 1.0) -> go.Figure:
    """fig with class mode's sizes: labels at LABEL_PX (thinned where they would overlap), cell numbers at CELL_PX,
    titles at TITLE_PX, and margins and height grown to hold them; share: the part of the page's width the figure
    has (0.5 in one of two columns). Changes fig in place and returns it."""
    layout = fig.layout
    scale = LABEL_PX / 12  # plotly's default label size
    top_labels = layout.xaxis.side == "top"  # the heatmaps' column labels: the top margin holds them
    top_scale = LABEL_PX / (layout.xaxis.tickfont.size or 12) if top_labels else scale
    left, top, bottom = (layout.margin.l or 0), (layout.margin.t or 0), (layout.margin.b or 0)
    plot_height = math.ceil(((layout.height or 450) - top - bottom) * scale)  # rows grow with their labels
    top, bottom = math.ceil(top * top_scale), math.ceil(bottom * scale)
    fig.update_layout(font=dict(size=LABEL_PX), title_font=dict(size=TITLE_PX), hoverlabel=dict(font_size=LABEL_PX),
                      legend=dict(font=dict(size=LABEL_PX)),
                      margin=dict(l=math.ceil(left * scale), t=top, r=layout.margin.r, b=bottom))
    title = layout.title.text or ""
    if "<br>" not in title and " " in title and 0.6 * TITLE_PX * len(title) > PAGE_PX * share - 20:
        middle = min((i for i, c in enumerate(title) if c == " "), key=lambda i: abs(i - len(title) / 2))
        # two lines rather than cut at the edges; plotly sets the first line above the anchor, so the pad
        layout.title.update(text=title[:middle] + "<br>" + title[middle + 1:], y=1, yref="container", yanchor="top",
                            pad=dict(t=6 + TITLE_PX))
        top += math.ceil(LINE_HEIGHT * TITLE_PX) + TITLE_PX
        layout.margin.t = top
    if layout.height:
        fig.update_layout(height=top + bottom + plot_height)
    bar = any(t.type == "heatmap" and t.showscale is not False for t in fig.data)
    if bar:  # the colour bar, its numbers and its title along it stand in the right margin (plotly's own room for
        # a colour bar leaves the title out)
        layout.margin.r = max(layout.margin.r or 0, COLOUR_BAR_PX + math.ceil(LINE_HEIGHT * LABEL_PX))
    grid_px = max(PAGE_PX * share - layout.margin.l - (layout.margin.r or 0), 30)
    for name in [n for n in layout if n.startswith(("xaxis", "yaxis"))]:
        axis = layout[name]
        axis.tickfont.size = max(axis.tickfont.size or 0, LABEL_PX)
        count = len(axis.tickvals) if axis.tickvals is not None else 0
        horizontal = name.startswith("xaxis")
        part = axis.domain[1] - axis.domain[0] if axis.domain else 1.0  # of a figure of several maps
        if count:
            _thinned(axis, (grid_px if horizontal else plot_height) * part / count, horizontal)
    for trace in fig.data:
        if getattr(trace, "texttemplate", None) or (trace.type in ("scatter", "bar") and trace.text is not None):
            trace.textfont.size = CELL_PX
        if trace.type == "bar":
            trace.constraintext = "none"  # plotly would shrink a bar's number to the bar's thickness
        if trace.type == "heatmap":
            trace.colorbar.tickfont.size = LABEL_PX
            trace.colorbar.title.side = "right"  # along the bar: above it, the title runs into the top number
    for note in layout.annotations or ():
        note.font.size = max(note.font.size or 0, LABEL_PX)
    return fig

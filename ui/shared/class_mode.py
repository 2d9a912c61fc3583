"""Class mode: a projector-friendly layout a teacher switches on in the sidebar, kept in the link (`?class=1`).

Larger text everywhere (Streamlit sizes its text in rem, so one root font size scales it), chart labels and
cell numbers at a size read from the back of a room at 1280x720 (`enlarge`, applied by `ui.shared.widgets.chart` to
every plotly figure), and tables drawn whole rather than in a grid that scrolls inside itself (`table`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

PARAM = "class"  # its query parameter, on every page: class=1
KEY = "class_mode"  # session state: on or off, across pages
TOGGLE = "_class_mode_toggle"  # the sidebar widget (its state is dropped on a page switch; KEY is not)
ROOT_PX = 21  # the page's root font size in class mode (Streamlit's default is 16)
LABEL_PX = 18  # tick labels of every chart, the heatmaps' token labels included
CELL_PX = 18  # numbers written in heatmap cells
TITLE_PX = 22
LINE_HEIGHT = 1.25  # a label's height in font sizes, rotated labels included
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


def sidebar_toggle(params: dict[str, str]) -> None:
    """The sidebar's switch, seeded from the link's `class` (params: the query parameters the page was opened with)
    and written back into it; in class mode, the page's larger fonts."""
    if PARAM in params:
        st.session_state[KEY] = params[PARAM] == "1"
    st.session_state[TOGGLE] = is_on()
    st.sidebar.toggle("Class mode (projector)", key=TOGGLE, on_change=_toggled,
                      help="Larger text, chart labels and cell numbers, readable from the back of a room; tables "
                           "drawn whole. Kept in the link: share it with `class=1`.")
    if is_on():
        st.query_params[PARAM] = "1"
        st.html(CSS)
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


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


def _thinned(axis: Any, spacing_px: float, horizontal: bool) -> None:
    """Keep every k-th label of an array axis so that labels of LABEL_PX do not overlap (the hover still names
    every token)."""
    values, texts = axis.tickvals, axis.ticktext
    if axis.tickmode != "array" or not values or not texts or spacing_px <= 0:
        return
    step = max(1, math.ceil(_label_room(axis, horizontal, LABEL_PX) / spacing_px))
    if step > 1:
        axis.tickvals, axis.ticktext = list(values)[::step], list(texts)[::step]


def enlarge(fig: go.Figure) -> go.Figure:
    """fig with class mode's sizes: labels at LABEL_PX (thinned where they would overlap), cell numbers at CELL_PX,
    titles at TITLE_PX, and margins and height grown to hold them. Changes fig in place and returns it."""
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
    if layout.height:
        fig.update_layout(height=top + bottom + plot_height)
    for name in [n for n in layout if n.startswith(("xaxis", "yaxis"))]:
        axis = layout[name]
        axis.tickfont.size = max(axis.tickfont.size or 0, LABEL_PX)
        count = len(axis.tickvals) if axis.tickvals is not None else 0
        horizontal = name.startswith("xaxis")
        if count:  # 700: ui.shared.heatmaps.PLOT_WIDTH, a heatmap's grid in the wide layout
            _thinned(axis, (700 if horizontal else plot_height) / count, horizontal)
    for trace in fig.data:
        if getattr(trace, "texttemplate", None) or (trace.type == "scatter" and trace.text is not None):
            trace.textfont.size = CELL_PX
        if trace.type == "heatmap":
            trace.colorbar.tickfont.size = LABEL_PX
    for note in layout.annotations or ():
        note.font.size = max(note.font.size or 0, LABEL_PX)
    return fig

"""Class mode: a projector-friendly layout a teacher switches on in the sidebar, kept in the link (`?class=1`).

Larger text everywhere (Streamlit sizes its text in rem, so one root font size scales it), charts built at the
theme's class sizes (`sizes`: labels and cell numbers read from the back of a room at 1280x720), the package's HTML
views magnified to the same smallest text (`view`, `zoom`), and tables drawn whole rather than in a grid that
scrolls inside itself (`table`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from transformer.charts.theme import CLASS, NORMAL, Sizes

if TYPE_CHECKING:  # the views load torch: a page without a model never needs them
    from transformer.explain.views import View

PARAM = "class"  # its query parameter, on every page: class=1
KEY = "class_mode"  # session state: on or off, across pages
TOGGLE = "_class_mode_toggle"  # the sidebar widget (its state is dropped on a page switch; KEY is not)
ROOT_PX = 21  # the page's root font size in class mode (Streamlit's default is 16)
LABEL_PX = CLASS.label  # the smallest text of every chart and view in class mode (the charts' theme owns it)
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


def sizes(share: float = 1.0) -> Sizes:
    """The charts' sizes on this page (class mode's or the everyday ones) for a chart given `share` of the page's
    width (0.5 in one of two columns): what every chart builder takes."""
    chosen = CLASS if is_on() else NORMAL
    return chosen if share >= 1 else dataclasses.replace(chosen, page=round(chosen.page * share))


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

"""Every page starts here: the wide layout, the navigation, the model picker, the class-mode switch, the charts'
download format, and the page's link read once."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from transformer.memory import start_trimming
from ui.shared.charts.show import FORMAT_KEY
from ui.shared.models import language_choice
from ui.shared.models.loading import MODEL_KEY, model_picker
from ui.shared.state import class_mode, links
from ui.shared.state.page_state import LINK_KEY, link

ICON = Path(__file__).resolve().parent / "assets" / "icon.png"  # bundled: a font server's icon fails offline


PAGES = [("app.py", "Home", ":material/home:"),
         ("pages/1_Translate.py", "Translate & Attention", ":material/translate:"),
         ("pages/2_Step_by_step.py", "Decode step by step", ":material/step:"),
         ("pages/3_Train.py", "Train", ":material/model_training:"), ("pages/4_Learn.py", "Learn", ":material/school:"),
         ("pages/5_Teaching_guide.py", "Teacher's guide", ":material/menu_book:"),
         ("pages/6_Explain_heads.py", "Explain heads", ":material/psychology:"),
         ("pages/7_Dataset.py", "Dataset", ":material/table_chart:")]


def page_setup(page: str) -> None:
    """Every page starts here: the wide layout, the navigation, the model picker and the page's link.

    The query parameters are read on the page's first run in a session only (a link opens a new session);
    afterwards the page writes its state into them, so that the address bar is always a shareable link.
    """
    st.set_page_config(page_title="Attention Explorer", page_icon=str(ICON), layout="wide")
    start_trimming()
    opened = st.session_state.setdefault("_opened_pages", set())
    st.session_state[LINK_KEY] = {} if page in opened else {k: st.query_params[k] for k in st.query_params}
    opened.add(page)
    kept = (*links.PAGE_PARAMS[page], class_mode.PARAM)
    if any(name not in kept for name in st.query_params):  # another page's state, or a parameter nobody reads:
        # dropped in one message (one per parameter, a thousand of them held the browser for half a minute)
        st.query_params.from_dict({name: st.query_params.get_all(name) for name in st.query_params if name in kept})
    for path, label, icon in PAGES:
        st.sidebar.page_link(path, label=label, icon=icon)
    st.sidebar.divider()
    class_mode.seed(link())  # the model picker's labels follow it
    model_picker()
    language_choice.sidebar(st.session_state.get(MODEL_KEY))  # a many-to-many model's languages
    class_mode.sidebar_toggle(link())
    st.sidebar.radio("Charts download as", ["png", "svg"], horizontal=True, key=FORMAT_KEY,
                     format_func=str.upper, help="PNG: every chart's toolbar (top right, on hover) has Download as "
                     "PNG. SVG: a button under each chart saves it as a vector drawing, for slides and papers.")

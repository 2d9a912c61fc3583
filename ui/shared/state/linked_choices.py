"""Choices of a view seeded from the page's link and shared back into it, for views whose choices are plain indexes
(the Learn page's layer, head and query token). The readers, which check every value, are in ui.shared.state.links."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from ui.shared.state import links
from ui.shared.state.page_state import link, link_problems, share


def seed_indexes(choices: Mapping[str, tuple[str, int]]) -> None:
    """Before the widgets are drawn: each link parameter (name -> (session key, number of options)) that names an
    existing index becomes that widget's value; a bad one is said and left out."""
    for name, (key, count) in choices.items():
        value, problems = links.read_index(link(), name, count)
        link_problems(problems)
        if value is not None:
            st.session_state[key] = value


def share_indexes(**values: int) -> None:
    share(**{name: str(value) for name, value in values.items()})


def seed_text(key: str, name: str) -> bool:
    """The link's text parameter `name` into the box `key` before it is drawn; True when the link had one."""
    text, problems = links.read_text(link(), name)
    link_problems(problems)
    if text is not None:
        st.session_state[key] = text
    return text is not None

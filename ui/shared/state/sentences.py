"""A page's sentence box: the right sentence in it before it is drawn, kept while the page shows views without it.

A box that still holds the default sentence (ui.shared.state.defaults) follows the model when another is
picked; a sentence
the user typed (or a link gave) is never replaced. Streamlit forgets a widget's value on a run that does not draw it
(the Explain page's whole-model views), so the value is also kept under a key of its own.
"""

from __future__ import annotations

import streamlit as st

_SEEDED = "_sentence_seeded"  # session state: {box key: the default last put in it}
_KEPT = "_sentence_kept"  # session state: {box key: its value}, which outlives a view that does not draw the box


def typed_sentence(key: str) -> str | None:
    """The sentence of another page's box when the user typed or picked it there (not the default put in it)."""
    value = st.session_state.get(key, st.session_state.get(_KEPT, {}).get(key))
    if not value or not value.strip() or value == st.session_state.get(_SEEDED, {}).get(key):
        return None
    return value


def seed_box(key: str, default: str, linked: str | None) -> None:
    """Put the right sentence in the box `key` before it is drawn: the link's, else what it held (also after a view
    that did not draw it, when Streamlit forgets a widget's value), else the default; a box that holds the default
    of the model picked before gets this model's."""
    seeded = st.session_state.setdefault(_SEEDED, {})
    if linked is not None:
        st.session_state[key] = linked
        seeded.pop(key, None)
        return
    current = st.session_state.get(key, st.session_state.get(_KEPT, {}).get(key))
    if current is None or (current == seeded.get(key) and current != default):
        current = seeded[key] = default
    st.session_state[key] = current


def keep(key: str, value: str) -> None:
    st.session_state.setdefault(_KEPT, {})[key] = value

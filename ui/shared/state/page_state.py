"""A page's state in its link and in its widgets: the query parameters the page was opened with, changes written
back into the address bar (so that it is always a shareable link), problems with a link said once, the sentence box,
and select boxes that follow their options."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

from ui.shared.state import links, sentences
from ui.shared.text.plain import plain

T = TypeVar("T")


LINK_KEY = "_link"  # session state: the query parameters the page was opened with


def link() -> dict[str, str]:
    """The query parameters this page was opened with (empty after the page's first run)."""
    return st.session_state.get(LINK_KEY, {})


def link_problems(problems: Sequence[str]) -> None:
    for problem in problems:
        st.warning(plain(problem), icon=":material/link_off:")  # they quote the link, which anyone can write


def share(**params: object) -> None:
    """Write params into the address bar (None removes one; numbers as `links.as_param` writes them); only changed
    ones, each change is a message."""
    for name, value in params.items():
        if value is None:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != links.as_param(value):
            st.query_params[name] = links.as_param(value)


def sentence_input(label: str, key: str, default: str) -> str:
    """A text box for the sentence, seeded from the link's `text` (else ui.shared.state.sentences.seed_box)
    and shared back
    into it."""
    text, problems = links.read_text(link())
    link_problems(problems)
    sentences.seed_box(key, default, text)
    value = st.text_input(label, key=key)
    sentences.keep(key, value)
    if len(value) <= links.MAX_TEXT:  # a refused text stays out of the link, which keeps the last one taken
        share(text=value or None)
    return value


def choice_box(container: Any, label: str, options: Sequence[T], *, key: str, format_func: Callable[[T], str] = str,
               follow: Callable[[Any, Sequence[T]], int] | None = None, help: str | None = None) -> T:
    """A select box whose browser state is tied to the text of its options, and the pick kept by value.

    The browser keeps showing the text of the option picked last, even after the options change under the
    same key. Here the widget's key includes a digest of the option texts, so new options make a new widget,
    opened at the option equal to the pick (st.session_state[key], which code may also set), else at
    follow(pick, options), else at the first.
    """
    texts = [format_func(o) for o in options]
    widget = f"_{key}_{hashlib.blake2s(chr(10).join(texts).encode(), digest_size=6).hexdigest()}"
    pick = st.session_state.get(key)
    index = list(options).index(pick) if pick in options else (follow(pick, options) if follow else 0)
    index = max(0, min(index, len(options) - 1))
    if st.session_state.get(widget) != index:
        st.session_state[widget] = index  # a new widget, or the pick was set by code (a link, the model view)
    container.selectbox(label, range(len(options)), format_func=texts.__getitem__, key=widget, help=help,
                        on_change=_chosen, args=(key, widget, list(options)))
    st.session_state[key] = options[st.session_state[widget]]
    return st.session_state[key]


def _chosen(key: str, widget: str, options: list) -> None:
    if (index := st.session_state.get(widget)) is not None:
        st.session_state[key] = options[index]

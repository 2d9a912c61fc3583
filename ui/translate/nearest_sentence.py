"""The teaching model's help for a sentence outside its grammar: the nearest sentence the grammar has, one click
away (transformer.data.corpora.teaching.suggest does the search)."""

from __future__ import annotations

import streamlit as st

from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from transformer.data.corpora.teaching.suggest import nearest_sentence


@st.cache_data(max_entries=64, show_spinner=False)
def _nearest(text: str, candidates: tuple[str, ...]) -> str | None:
    return nearest_sentence(text, candidates)


def suggest_nearest(text: str, examples: list[str], text_key: str) -> None:
    """Under the "outside the grammar" message: the nearest grammar sentence and a button that puts it in the box."""
    text = normalize_text(text)
    if not text or align(text) is not None:
        return
    nearest = _nearest(text, tuple(examples))
    if nearest is None:
        return

    def use() -> None:
        st.session_state[text_key] = nearest

    st.markdown(f"Nearest sentence the grammar has: **{nearest}**")
    st.button("Translate this one instead", key=f"{text_key}_nearest", on_click=use,
              help="The sentence with its misspelt or unknown words repaired, or the test sentence sharing most words.")

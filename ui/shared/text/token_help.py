"""What the token pieces' marks mean (▁, <s>, </s>, <unk>, <pad>): said next to every view of token pieces."""

from __future__ import annotations

import streamlit as st

TOKENS_HELP = ("**Reading the tokens.** The model reads and writes *subword pieces*: a rare word is cut into "
               "pieces it knows (`▁congreg` `ation`). `▁` marks a piece that starts a new word (it stands for the "
               "space before it); a piece without it continues the word before. `<s>` starts the output (the "
               "decoder's first input; `<pad>` in a Marian model such as opus-mt), `</s>` ends a sentence, `<unk>` "
               "is a character the vocabulary never saw and `<pad>` fills a short sentence up to its batch's "
               "length.")


def tokens_help() -> None:
    """What ▁, <s>, </s>, <unk>, <pad> and subword pieces mean: said next to every view of token pieces."""
    with st.expander("What do ▁, <s>, </s> and <unk> mean?", icon=":material/help:"):
        st.markdown(TOKENS_HELP)

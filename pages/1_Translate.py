"""Translate & Attention: translate a sentence, then inspect every attention map of the output."""

import pandas as pd
import streamlit as st

from transformer.decoding import SearchSettings
from transformer.tokenizer import EOS_ID
from transformer.translate import Translation, TranslationError
from ui.figures import unique_labels
from ui.translation import translate
from ui.widgets import (
    apply_pending_head,
    attention_explorer,
    current_translator,
    example_sentences,
    page_setup,
    search_settings,
)


def _use_example() -> None:
    if st.session_state.tr_example:
        st.session_state.tr_text = st.session_state.tr_example


def main() -> None:
    page_setup()
    st.title("Translate & Attention")
    translator = current_translator()
    if translator is None:
        return
    examples = example_sentences(translator.checkpoint.metadata)
    if "tr_text" not in st.session_state:
        st.session_state.tr_text = examples[0] if examples else ""
    if examples:
        st.selectbox("Pick an example (test split)", [""] + examples, key="tr_example", on_change=_use_example,
                     format_func=lambda s: s or "—")
    text = st.text_input("English sentence (press Enter to translate)", key="tr_text")
    settings: SearchSettings = search_settings("tr")
    if not text.strip():
        st.info("Type an English sentence above, or pick an example.")
        return
    request = (str(translator.checkpoint.path), text, settings)
    if st.session_state.get("tr_request") != request:
        try:
            with st.spinner("Translating…"):
                st.session_state.tr_result = translate(translator, text, settings)
        except TranslationError as e:
            st.warning(str(e))
            return
        st.session_state.tr_request = request
    result: Translation = st.session_state.tr_result
    st.subheader("Translation")
    st.markdown(f"### {result.text or '∅'}")
    for warning in result.warnings:
        st.warning(warning)
    probs = pd.DataFrame([[f"{p:.3f}" for p in result.token_probs]], index=["probability"],
                         columns=unique_labels(result.target_pieces))
    st.dataframe(probs, key="tr_probs")
    if result.alternatives:
        nbest = [result, *result.alternatives]
        with st.expander(f"{len(nbest)} best hypotheses"):
            st.dataframe(pd.DataFrame({"translation": [h.text for h in nbest],
                                       "normalised score": [h.normalized_score for h in nbest],
                                       "finished": [h.token_ids[-1:] == [EOS_ID] for h in nbest]}), key="tr_nbest")
    st.subheader("Attention")
    apply_pending_head("tr")
    attention_explorer(result.attention, key="tr")


main()

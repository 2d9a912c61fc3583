"""Translate & Attention: translate a sentence, then inspect every attention map of the output."""

import pandas as pd
import streamlit as st

from transformer.bidi import is_rtl, isolate
from transformer.data.tokenizer import SpecialIds
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translation, TranslationError
from ui.shared.attention.explorer import attention_explorer
from ui.shared.attention.lens_switch import split_note, translation_view
from ui.shared.models.catalog import no_corpus, source_language
from ui.shared.models.example_sentences import example_sentences
from ui.shared.models.loading import current_translator, decode_turn
from ui.shared.models.teaching_model import is_teaching
from ui.shared.models.translation_gate import translate
from ui.shared.page import page_setup
from ui.shared.state import class_mode
from ui.shared.state.defaults import default_sentence
from ui.shared.state.page_state import sentence_input
from ui.shared.state.search import search_settings
from ui.shared.text.plain import plain, rtl_html, score
from ui.shared.text.token_help import tokens_help
from ui.translate.nearest_sentence import suggest_nearest
from ui.translate.probability_table import probability_table
from ui.translate.teaching_panels import (
    alignment_panel,
    contraction_warning,
    gold_links,
    random_sentence_button,
    words_known,
)


def _use_example() -> None:
    if example := st.session_state.get("tr_example"):
        st.session_state.tr_text = example


def result(translation: Translation, specials: SpecialIds) -> None:
    """The translation, each output token's probability and the n-best list."""
    st.subheader("Translation")
    rtl = rtl_html(translation.text, "h3")
    if rtl:
        st.markdown(rtl, unsafe_allow_html=True)
    else:
        st.markdown(f"### {plain(translation.text) or '∅'}")
    for warning in translation.warnings:
        st.warning(plain(warning))
    right_to_left = is_rtl(translation.text)
    st.markdown(probability_table(translation.target_pieces, translation.token_probs, rtl=right_to_left),
                unsafe_allow_html=True)
    st.caption("The output's pieces, each with the probability the model gave it when it chose it"
               + (", first piece on the right." if right_to_left else "."))
    if translation.alternatives:
        nbest = [translation, *translation.alternatives]
        with st.expander(f"{len(nbest)} best hypotheses"):
            class_mode.table(st, pd.DataFrame({"translation": [isolate(h.text) for h in nbest],
                                               "normalised score": [score(h.normalized_score) for h in nbest],
                                               "finished": [h.token_ids[-1:] == [specials.eos] for h in nbest]}),
                             key="tr_nbest")


def main() -> None:
    page_setup("translate")
    st.title("Translate & Attention")
    translator = current_translator()
    if translator is None:
        return
    metadata = translator.checkpoint.metadata
    examples = example_sentences(metadata)
    teaching = is_teaching(metadata)
    if teaching:
        words_known(metadata)
        random_sentence_button(examples, "tr_text")
    if examples:
        st.selectbox("Pick an example (test split)", [""] + examples, key="tr_example", on_change=_use_example,
                     format_func=lambda s: s or "—")
    elif metadata.get("source_model"):
        st.caption(no_corpus(metadata))
    language = source_language(metadata)
    text = sentence_input(f"{language} sentence (press Enter to translate)", "tr_text", default_sentence(metadata))
    if teaching:
        contraction_warning(text)
    settings: SearchSettings = search_settings("tr")
    if not text.strip():
        st.info(f"Type a sentence in {language} above, or pick an example.")
        return
    request = (str(translator.checkpoint.path), text, settings)
    if st.session_state.get("tr_request") != request:
        try:
            with st.spinner("Translating…"), decode_turn() as on_wait:
                st.session_state.tr_result = translate(translator, text, settings, on_wait)
        except TranslationError as e:
            st.warning(str(e))
            return
        st.session_state.tr_request = request
    translation: Translation = st.session_state.tr_result
    result(translation, translator.specials)
    tokens_help()
    st.subheader("Attention")
    gold, why_not = gold_links(text, translation) if teaching else (None, "")
    seen = translation_view(translator, translation, key="tr")  # the maps as the chosen lens reads them
    attention_explorer(seen.attention, key="tr", gold=gold)
    if gold is not None:
        alignment_panel(translator, seen, gold, key="tr")
        split_note("tr")
    elif why_not:
        st.info(why_not)
        suggest_nearest(text, examples, "tr_text")


main()

"""Dataset: a whole split as a table (which sentences fail), slices with their metrics and head statistics, the
projector of token states, and links that open one sentence on the other pages (after LIT, Tenney et al., 2020)."""

import streamlit as st

from ui.dataset.background import table_in_background
from ui.dataset.per_slice import choose_slices, rows_of, slice_view
from ui.dataset.projector import projector_view
from ui.dataset.sentence_table import sentence_table
from ui.dataset.split_choice import choose_split
from ui.shared.models.loading import current_translator
from ui.shared.page import page_setup
from ui.shared.text.plain import plain


def main() -> None:
    page_setup("dataset")
    st.title("Dataset")
    st.caption("Every sentence of a split, translated (greedy) and scored: find where the model fails, slice by "
               "kind of sentence, then open one sentence on another page.")
    translator = current_translator()
    if translator is None:
        return
    split, lenses = choose_split(translator.checkpoint.metadata)
    if split is None:
        return
    result = table_in_background(translator, split, lenses)
    if result is None:
        return
    for note in result.notes:
        st.info(plain(note[0].upper() + note[1:]))
    scores = result.corpus_scores
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Sentences", f"{len(result.table):,}")
    c2.metric("BLEU (corpus)", f"{scores['bleu']:.2f}")
    c3.metric("chrF (corpus)", f"{scores['chrf']:.2f}")
    if "exact" in result.table:
        c4.metric("Exact match", f"{100 * result.table['exact'].mean():.1f}%")
    st.caption(f"{plain(result.split.description)}. sacreBLEU as `transformer-evaluate` computes it: "
               f"`{scores['bleu_signature']}`, `{scores['chrf_signature']}`.")
    st.subheader("Slices")
    groups, shown = choose_slices(result)
    slice_view(result, groups)
    st.subheader("Sentences")
    model_key = st.query_params.get("model")  # the picker shares the model's key into the link
    sentence_table(result, model_key, rows_of(result, groups, shown), shown)
    st.subheader("Projector")
    projector_view(result, groups)


main()

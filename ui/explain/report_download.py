"""The Explain page's Report view: one self-contained HTML file of the sentence (`ui.explain.html_report` writes it)."""

from __future__ import annotations

import streamlit as st

from transformer.decoding.search import DEFAULT_SETTINGS, SearchSettings
from transformer.decoding.translate import Translation, Translator
from transformer.explain import StatisticsAccumulator
from transformer.explain.lenses import LABELS
from ui.explain import attribution, html_report
from ui.shared import lens_switch
from ui.shared.attention_maps import FAMILIES


def report_view(translator: Translator, translation: Translation, settings: SearchSettings = DEFAULT_SETTINGS) -> None:
    st.markdown("One file with this sentence's translation, its hypotheses, every attention map (hover for the "
                "tokens and weights) and the statistics of every head on this sentence, then the Attribution, Logit "
                "lens and Patching views with their current picks, and the cross-attention through the lenses chosen "
                "below, and the output token the model was least sure of followed through the whole model. It opens "
                "in any browser, without the app: for a course page or a paper's supplement.")
    picks = attribution.report_picks(translation)
    att = translation.attention
    accumulator = StatisticsAccumulator()
    accumulator.add({f: getattr(att, f) for f in FAMILIES}, {"enc_self": att.source_pieces, "cross": att.source_pieces,
                                                             "dec_self": att.target_input_pieces})
    model = translator.checkpoint.path.name if translator.checkpoint.path else "model"
    chosen = st.multiselect("Lenses in the report", [n for n in LABELS if n != "raw"], ["norm", "alti"],
                            format_func=LABELS.get, key="ex_report_lenses")
    st.download_button("Download the report (.html)",
                       lambda: html_report.sentence_report(translation, model=model, stats=accumulator.result(), extra=(
                           *attribution.report_sections(translator, translation, settings, picks),
                           *html_report.lens_sections(translation, *lens_switch.report_maps(
                               translator.model, translation, chosen, translator.specials)),
                           *html_report.flow_sections(translator, translation))),
                       "attention-report.html", "text/html", key="ex_report", on_click="ignore",
                       icon=":material/download:")

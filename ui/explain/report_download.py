"""The Explain page's Report view: one self-contained HTML file of the sentence (`ui.explain.html_report` writes it)."""

from __future__ import annotations

import functools
import html

import streamlit as st

from transformer.decoding.search import DEFAULT_SETTINGS, SearchSettings
from transformer.decoding.translate import Translation, Translator
from transformer.explain import StatisticsAccumulator
from transformer.explain.contrast import contrast
from transformer.explain.foil import FoilWord, foil_word
from transformer.explain.forced_comparison import compare_forced
from transformer.explain.lenses import LABELS
from ui.explain import attribution, html_report
from ui.shared.attention import lens_switch
from ui.shared.attention.families import FAMILIES
from ui.shared.models.translation_gate import bounded, decode_slot
from ui.shared.text.plain import plain


def report_view(translator: Translator, translation: Translation, settings: SearchSettings = DEFAULT_SETTINGS) -> None:
    st.markdown("One file with this sentence's translation, its hypotheses, every attention map (hover a cell for "
                "its weight) and the statistics of every head on this sentence, then the Attribution, Logit "
                "lens and Patching views with their current picks, and the cross-attention through the lenses chosen "
                "below, and the output token the model was least sure of followed through the whole model; with the "
                "fields below, the model's own translation beside one forced to start with your words, and why an "
                "output token rather than a word you type. It opens in any browser, without the app or a network (its "
                "charts are drawn into the file): for a course page or a paper's supplement.")
    picks = attribution.report_picks(translation)
    att = translation.attention
    accumulator = StatisticsAccumulator()
    accumulator.add({f: getattr(att, f) for f in FAMILIES}, {"enc_self": att.source_pieces, "cross": att.source_pieces,
                                                             "dec_self": att.target_input_pieces})
    model = translator.checkpoint.path.name if translator.checkpoint.path else "model"
    chosen = st.multiselect("Lenses in the report", [n for n in LABELS if n != "raw"], ["norm", "alti"],
                            format_func=LABELS.get, key="ex_report_lenses")
    asked = _asked(translator, translation, settings)
    st.download_button("Download the report (.html)",
                       lambda: html_report.sentence_report(translation, model=model, stats=accumulator.result(), extra=(
                           *attribution.report_sections(translator, translation, settings, picks),
                           *html_report.lens_sections(translation, *lens_switch.report_maps(
                               translator.model, translation, chosen, translator.specials)),
                           *html_report.flow_sections(translator, translation), *asked())),
                       "attention-report.html", "text/html", key="ex_report", on_click="ignore",
                       icon=":material/download:")


def _asked(translator: Translator, translation: Translation, settings: SearchSettings):
    """The optional sections the fields below ask for: a forced prefix (own and forced side by side) and a typed foil
    (why this token rather than that word), checked now, built later with the report (on the download's thread)."""
    c1, c2, c3 = st.columns(3)
    prefix = c1.text_input("Forced prefix (optional)", key="ex_report_prefix",
                           help="A target text the model is made to start with: the report compares its translation "
                                "with the model's own.").strip()
    word = c2.text_input("Foil word (optional)", key="ex_report_foil",
                         help="Why the output token picked beside it rather than this word? (Its first piece.)").strip()
    pieces = translation.target_pieces
    position = c3.selectbox("Its output token", range(len(pieces)), key="ex_report_foil_pos",
                            index=min(1, len(pieces) - 1), format_func=lambda i: f"{i}: {pieces[i]}")
    ids = foil = None
    try:
        ids = translator.prefix_ids(prefix) if prefix else None
    except ValueError as e:  # a prefix the model cannot emit: said, and left out of the report
        st.warning(plain(str(e)))
    try:
        foil = foil_word(translator.tokenizer, word) if word else None
    except ValueError as e:
        st.warning(plain(str(e)))
    if foil is not None and foil.several:
        st.caption(plain(foil.note))
    return functools.partial(asked_sections, translator, translation, bounded(settings), ids, foil, position)


def asked_sections(translator: Translator, translation: Translation, settings: SearchSettings,
                   prefix: list[int] | None, foil: FoilWord | None, position: int) -> list[str]:
    """The report's forced-decoding section (own beside forced from the prefix ids) and contrastive attribution
    (output token `position` against the foil), each when asked for (not None); no streamlit."""
    out = []
    with decode_slot():
        if prefix is not None:
            try:
                out += html_report.forced_sections(compare_forced(translator, translation.source_ids, prefix, settings))
            except ValueError as e:  # too long for this source's output limit
                out.append(f"<p class='note'>No forced decoding: {html.escape(str(e))}</p>")
        if foil is not None:
            out += html_report.contrast_sections(contrast(translator.model, translator.tokenizer,
                                                          translation.source_ids, translation.token_ids, position,
                                                          foil.word), translation.target_pieces)
    return out

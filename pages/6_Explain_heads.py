"""Explain heads: what a head does. Switch heads off, open the arithmetic behind any cell, flip what-if switches,
compare searches and models, measure every head over a dev sample, and watch a head form during training."""

import streamlit as st

from transformer.bidi import isolate
from transformer.decoding.translate import Translation
from ui.explain import attribution, every_head, one_sentence, report_download
from ui.shared.models.loading import current_translator
from ui.shared.page import page_setup
from ui.shared.state.defaults import default_sentence
from ui.shared.state.links import VIEW_ONLY
from ui.shared.state.page_state import link, sentence_input, share
from ui.shared.state.search import search_settings
from ui.shared.text.plain import plain

VIEWS = {"ablate": "Switch heads off", "cell": "Arithmetic of a cell", "whatif": "What if…",
         "search": "Greedy, beam, reference", "compare": "Compare models", "report": "Report",
         "stats": "Head statistics", "importance": "Head importance", "training": "Across training"}
VIEWS.update(attribution.VIEWS)  # attribution, logit lens and DecoderLens, activation patching
WHOLE_MODEL = ("stats", "importance", "training")  # views of every head, not of one sentence


def sentence_translation(translator, settings) -> tuple[str, Translation | None]:
    text = sentence_input("Sentence (press Enter)", "ex_text", default_sentence(translator.checkpoint.metadata))
    if not text.strip():
        st.info("Type a sentence above.")
        return text, None
    request = (str(translator.checkpoint.path), text, settings)
    if st.session_state.get("ex_request") != request:
        with st.spinner("Translating…"):
            st.session_state.ex_result = one_sentence.translated(translator, text, settings)
        st.session_state.ex_request = request
    return text, st.session_state.ex_result


def main() -> None:
    page_setup("explain")
    st.title("Explain heads")
    translator = current_translator()
    if translator is None:
        return
    if link().get("view") in VIEWS:
        st.session_state.ex_view = link()["view"]
    view = st.radio("View", list(VIEWS), format_func=VIEWS.get, horizontal=True, key="ex_view")
    mine = VIEW_ONLY.get(view, ())  # two views may share a name (pos): it stays for the view that has it
    share(view=view, **{name: None for other, names in VIEW_ONLY.items() if other != view for name in names
                        if name not in mine})
    if view == "stats":
        return every_head.statistics_view(translator)
    if view == "importance":
        return every_head.importance_view(translator)
    if view == "training":
        return every_head.training_view()
    settings = search_settings("ex")
    text, translation = sentence_translation(translator, settings)
    if translation is None:
        return
    st.markdown(f"**Translation:** {plain(isolate(translation.text)) or '∅'}")
    if view == "ablate":
        one_sentence.ablation_view(translator, text, translation, settings)
    elif view == "cell":
        one_sentence.cell_view(translator, translation)
    elif view == "whatif":
        one_sentence.what_if_view(translator, text, translation, settings)
    elif view == "search":
        one_sentence.search_view(translator, text, every_head.reference_of(translator, translation.source))
    elif view == "compare":
        one_sentence.compare_view(translator, text, translation, settings)
    elif view in attribution.VIEWS:
        attribution.show(view, translator, text, translation, settings)
    else:
        report_download.report_view(translator, translation, settings)


main()

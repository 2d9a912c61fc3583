"""Explain heads: what a head does. Switch heads off, open the arithmetic behind any cell, flip what-if switches,
compare searches and models, measure every head over a dev sample, and watch a head form during training."""

import streamlit as st

from transformer.decoding.translate import Translation
from ui import attribution_views, explain_views, head_views, report_view
from ui.bidi import isolate
from ui.defaults import default_sentence
from ui.links import VIEW_ONLY
from ui.text import plain
from ui.widgets import current_translator, link, page_setup, search_settings, sentence_input, share

VIEWS = {"ablate": "Switch heads off", "cell": "Arithmetic of a cell", "whatif": "What if…",
         "search": "Greedy, beam, reference", "compare": "Compare models", "report": "Report",
         "stats": "Head statistics", "importance": "Head importance", "training": "Across training"}
VIEWS.update(attribution_views.VIEWS)  # attribution, logit lens and DecoderLens, activation patching
WHOLE_MODEL = ("stats", "importance", "training")  # views of every head, not of one sentence


def sentence_translation(translator, settings) -> tuple[str, Translation | None]:
    text = sentence_input("Sentence (press Enter)", "ex_text", default_sentence(translator.checkpoint.metadata))
    if not text.strip():
        st.info("Type a sentence above.")
        return text, None
    request = (str(translator.checkpoint.path), text, settings)
    if st.session_state.get("ex_request") != request:
        with st.spinner("Translating…"):
            st.session_state.ex_result = explain_views.translated(translator, text, settings)
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
    share(view=view, **{name: None for other, names in VIEW_ONLY.items() if other != view for name in names})
    if view == "stats":
        return head_views.statistics_view(translator)
    if view == "importance":
        return head_views.importance_view(translator)
    if view == "training":
        return head_views.training_view()
    settings = search_settings("ex")
    text, translation = sentence_translation(translator, settings)
    if translation is None:
        return
    st.markdown(f"**Translation:** {plain(isolate(translation.text)) or '∅'}")
    if view == "ablate":
        explain_views.ablation_view(translator, text, translation, settings)
    elif view == "cell":
        explain_views.cell_view(translator, translation)
    elif view == "whatif":
        explain_views.what_if_view(translator, text, translation, settings)
    elif view == "search":
        explain_views.search_view(translator, text, head_views.reference_of(translator, translation.source))
    elif view == "compare":
        explain_views.compare_view(translator, text, translation, settings)
    elif view in attribution_views.VIEWS:
        attribution_views.show(view, translator, text, translation, settings)
    else:
        report_view.report_view(translator, translation, settings)


main()

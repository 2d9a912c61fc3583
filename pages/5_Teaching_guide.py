"""Teacher's guide: docs/teaching-guide.md, shown in the app so that a classroom without the repository has it, with
the model cards and corpus notes it links to opened on this page (`?doc=teaching-corpus`)."""

import streamlit as st

from ui.shared.page import page_setup
from ui.shared.state.links import quoted
from ui.shared.state.page_state import link, share
from ui.shared.text.plain import plain
from ui.teaching.guide_documents import GUIDE, documents, in_app_links, without_images


def main() -> None:
    page_setup("guide")
    docs = documents()
    if "doc" in link():
        st.session_state.guide_doc = link()["doc"]
    key = st.session_state.get("guide_doc", GUIDE)
    if key not in docs and key != GUIDE:
        st.warning(f"The link's document {plain(quoted(key))} is not one this page shows; here is the guide.")
        key = GUIDE
    share(doc=None if key == GUIDE else key)
    if key != GUIDE:
        st.markdown("[← Back to the teacher's guide](?doc=guide)")
    if key not in docs:
        st.error("The guide cannot be read: docs/teaching-guide.md is missing.")
        return
    try:
        st.markdown(without_images(in_app_links(docs[key].path.read_text(encoding="utf-8"), docs[key], docs)))
    except OSError as e:
        st.error(f"The guide cannot be read: {e}")


main()

"""Teacher's guide: docs/teaching-guide.md, shown in the app so that a classroom without the repository has it."""

import streamlit as st

from ui.models import REPO
from ui.widgets import page_setup

GUIDE = REPO / "docs" / "teaching-guide.md"


def main() -> None:
    page_setup("guide")
    try:
        st.markdown(GUIDE.read_text(encoding="utf-8"))
    except OSError as e:
        st.error(f"The guide cannot be read: {e}")


main()

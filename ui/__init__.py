"""The Streamlit explorer's pieces, one folder per page (translate, step, learn, explain, train, teaching) and
shared/ for what more than one page uses. A page imports its own folder and shared/ only; a page folder imports
itself and shared/; shared/ imports no page folder (docs/layout.md; tests/project/test_structure.py checks it)."""

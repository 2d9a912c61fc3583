"""What more than one page draws or decides: links, class mode, right-to-left text, widgets, the models and the
translation gate, the attention explorer and its figures. Imports no page folder (tests/test_structure.py)."""

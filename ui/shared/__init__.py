"""What more than one page draws or decides, a folder per concern: `page` (every page's setup), `state/` (the link,
page state, class mode, the search controls, the sentence a page opens on), `models/` (finding, loading and caching
models, the translation gate), `attention/` (the attention explorer and its maps), `charts/` (every chart),
`training/` (training jobs), `text/` (right-to-left text, user text kept plain). Imports no page folder
(tests/project/test_structure.py)."""

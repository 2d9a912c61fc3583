"""Pieces a crafted vocabulary may hold (issue 41 items 1 and 2): markup that would end or comment out an inline
script, and pieces thousands of characters long. Every view keeps its script whole and every label short (the
full piece in its title or hover), and shortening runs in linear time. The browser's side:
tests/test_views_browser.py."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from tests.app_fixtures import make_checkpoint
from transformer.data.tokenizer import BOS_ID
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain import cell_arithmetic, views
from transformer.explain.views import svg
from transformer.model.checkpoint import load_checkpoint

HOSTILE = "<!--<script>"
SCRIPT = re.compile(r"<script>(.*?)</script>", flags=re.S)


@pytest.fixture(scope="module")
def translator(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")))


def hostile_views(translator: Translator, piece: str) -> dict[str, views.View]:
    """Every view of the package, drawn with `piece` in place of every token label."""
    t = translator.translate("the woman reads a book .", attention=True)
    att = t.attention
    crafted = type(att)(**{**att.__dict__, "source_pieces": [piece] * len(att.source_pieces),
                           "target_pieces": [piece] * len(att.target_pieces),
                           "target_input_pieces": [piece] * len(att.target_input_pieces)})
    cell = cell_arithmetic(translator.model, t.source_ids, [BOS_ID, *t.token_ids[:-1]], "cross", 0, 1, 1)
    session = translator.session("the cat sleeps .", SearchSettings(beam_size=3, max_len_a=0, max_len_b=4))
    session.run_to_end()
    return {"cell_flow": views.cell_flow(cell, piece, [piece] * len(t.source_ids)),
            "head_view": views.head_view(crafted), "model_view": views.model_view(crafted),
            "heatmaps": views.heatmaps(crafted),
            "beam_tree": views.beam_tree(session.history, lambda ids: [piece] * len(ids), session.finished[0].tokens)}


def test_data_in_an_inline_script_never_holds_a_less_than_sign():
    text = svg.data_json({"label": HOSTILE + "</script><b>", "n": 1})
    assert "<" not in text and ">" not in text and "&" not in text.replace("\\u0026", "")
    assert json.loads(text) == {"label": HOSTILE + "</script><b>", "n": 1}  # the same value, read back


def test_every_views_scripts_stay_whole_with_a_piece_that_opens_a_comment_and_a_script(translator):
    for name, view in hostile_views(translator, HOSTILE).items():
        bodies = SCRIPT.findall(view.html)
        assert view.html.count("<script>") == len(bodies) == view.html.count("</script>"), name
        for body in bodies:  # inside a script "<!--" then "<script" would swallow its closing tag
            assert "<!--" not in body and "<script" not in body, name
    flow = hostile_views(translator, HOSTILE)["cell_flow"].html
    data = json.loads(re.search(r",(\{.*\})\);</script>", flow).group(1))
    assert data["query"] == HOSTILE and {k["label"] for k in data["keys"]} == {HOSTILE}


def test_the_html_reports_scripts_stay_whole_with_such_pieces(translator):
    from ui.explain.html_report import sentence_report

    t = translator.translate("the cat sleeps .", attention=True)
    att = t.attention
    crafted = type(att)(**{**att.__dict__, "source_pieces": [HOSTILE] * len(att.source_pieces),
                           "target_pieces": [HOSTILE] * len(att.target_pieces),
                           "target_input_pieces": [HOSTILE] * len(att.target_input_pieces)})
    report = sentence_report(dataclasses.replace(t, attention=crafted, target_pieces=crafted.target_pieces),
                             model=HOSTILE)
    bodies = re.findall(r"<script[^>]*>(.*?)</script>", report, flags=re.S)[1:]  # after plotly.js itself
    assert len(bodies) > 9  # the head views' and every map's
    assert not [b for b in bodies if "<!--" in b or "<script" in b]

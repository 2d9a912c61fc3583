"""The Learn page's "one token through the whole model" (AppTest, no browser): the link's token and stage open the
flow view at that token and stage, the page writes both back into the link, and a stage this model lacks is said."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.test_svg_views import iframes

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TEACHING = "en-fr-teaching"
SENTENCE = "The young man buys a green bicycle."


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def opened(at, **params):
    at.query_params.update(params)
    at.switch_page("pages/4_Learn.py").run()
    assert not at.exception, at.exception
    return at


def flow_frame(app) -> str:
    (frame,) = [h for h in iframes(app) if 'class="tf"' in h]
    return frame


def test_the_link_opens_the_flow_at_its_token_and_stage(at):
    opened(at, model=TEACHING, text=SENTENCE, token="2", stage="enc.1.feed_forward")
    assert at.session_state["learn_flow_token"] == 2 and at.session_state["learn_flow_stage"] == "enc.1.feed_forward"
    frame = flow_frame(at)
    assert re.search(r'class="stage on" data-key="enc.1.feed_forward"', frame)
    assert '<details open data-group="enc.1">' in frame
    assert "Predicting the token after" in frame and "(output position 2;" in frame
    data = json.loads(re.search(r"\),(\{.*\})\);</script>", frame).group(1))
    assert len(data["temps"]) == 60 and abs(sum(data["temps"][19]["p"]) + data["temps"][19]["rest"] - 1) < 1e-6
    assert (at.query_params["token"], at.query_params["stage"]) == ("2", "enc.1.feed_forward")
    at.session_state["learn_flow_stage"] = "output"
    at.session_state["learn_flow_token"] = 4
    at.run()
    assert (at.query_params["token"], at.query_params["stage"]) == ("4", "output")
    again = opened(AppTest.from_file(APP, default_timeout=120), **dict(at.query_params))
    assert again.session_state["learn_flow_token"] == 4
    assert re.search(r'class="stage on" data-key="output"', flow_frame(again))


def test_a_stage_or_token_this_model_lacks_is_said(at):
    opened(at, model=TEACHING, text=SENTENCE, token="99", stage="dec.7.cross_attn")
    said = " ".join(w.value.replace("\\", "") for w in at.warning)
    assert "Token '99' in the link does not exist" in said and "Stage 'dec.7.cross_attn' in the link does not" in said
    assert at.session_state["learn_flow_stage"] == "dec.1.feed_forward"  # the decoder's last sublayer
    assert at.session_state["learn_flow_token"] == 0


def test_the_report_follows_the_token_the_model_was_least_sure_of():
    from transformer.decoding.translate import Translator
    from ui.explain import html_report

    translator = Translator(ROOT / "checkpoints" / TEACHING)
    translation = translator.translate("My sister does not eat bread.", attention=True)
    sections = html_report.flow_sections(translator, translation)
    html = html_report.sentence_report(translation, model=TEACHING, extra=sections)
    least = min(range(len(translation.token_probs)), key=translation.token_probs.__getitem__)
    assert html.count('<div class="tf"') == 1 and f"Output token {least}, " in sections[0]
    assert f"(output position {least};" in html


def test_the_neurons_pieces_come_from_test_sentences_on_demand(at):
    opened(at, model=TEACHING, text=SENTENCE, token="10", stage="dec.1.feed_forward")
    assert "fires most on" not in flow_frame(at)  # nothing loaded until asked
    at.checkbox(key="learn_flow_neurons").check().run()
    assert not at.exception, at.exception
    frame = flow_frame(at)
    stage = frame[frame.index('data-key="dec.1.feed_forward"'):]
    stage = stage[:stage.index("</div></div>") if "</div></div>" in stage else len(stage)]
    assert stage.count("fires most on") == 5  # each of the five busiest neurons, with its pieces

"""Issue 37 (class-ready, third pass), AppTest and figure checks, the item number in each test's comment; the
browser-only ones are in tests/test_class_pass3_e2e.py."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import make_checkpoint
from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from transformer.runs import RunFiles, write_status
from ui.shared import class_mode

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
SHIPPED = ROOT / "checkpoints"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    make_checkpoint(root / "other", seed=1)
    return root


def app(monkeypatch, tmp_path, checkpoints) -> AppTest:
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def opened(at: AppTest, page: str, **params) -> AppTest:
    at.query_params.update(params)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


# ----------------------------------------------------------------------------- 3. widget keys read before they exist


def test_open_in_the_explorer_then_another_model_picks_it_without_a_key_error(monkeypatch, tmp_path, tiny):  # item 3
    at = app(monkeypatch, tmp_path, tiny)
    root = tmp_path / "runs" / "stopped-run"
    make_checkpoint(RunFiles(root).checkpoint("latest"))
    write_status(RunFiles(root), "stopped", step=370, max_steps=1500)
    opened(at, "pages/3_Train.py")
    at.button(key="train_open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["model_path"] == str(RunFiles(root).checkpoint("latest"))
    at.sidebar.selectbox(key="_model_select").set_value(str(tiny / "other")).run()
    assert not at.exception, at.exception
    assert at.session_state["model_path"] == str(tiny / "other")


@pytest.mark.parametrize("key", ["_model_select", class_mode.TOGGLE])
def test_a_widget_callback_after_its_key_was_dropped_keeps_the_page_up(monkeypatch, tmp_path, tiny, key):  # item 3
    at = opened(app(monkeypatch, tmp_path, tiny), "pages/1_Translate.py")
    widget = at.sidebar.selectbox(key=key) if key == "_model_select" else at.sidebar.toggle(key=key)
    del at.session_state[key]  # as open_model does, between the browser's widget state and its rerun
    widget.set_value(str(tiny / "other") if key == "_model_select" else True).run()
    assert not at.exception, at.exception


# ----------------------------------------------------------------------------- 17, 25. the first screen of a model


def shipped(monkeypatch, tmp_path) -> AppTest:
    if not (SHIPPED / "en-fr-teaching").is_dir():
        pytest.skip("needs the shipped models")
    return app(monkeypatch, tmp_path, SHIPPED)


def test_the_arabic_model_opens_on_a_sentence_of_its_cards_samples_and_translates_it(monkeypatch, tmp_path):  # 17
    at = opened(shipped(monkeypatch, tmp_path), "pages/1_Translate.py", model="en-ar-bible")
    text = at.text_input(key="tr_text").value
    card = (SHIPPED / "en-ar-bible" / "MODEL_CARD.md").read_text(encoding="utf-8")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in card.splitlines()]
    samples = {row[0]: row[1] for row in rows if len(row) == 4 and row[3] == "100.0"}
    assert text in samples  # a test verse the card shows it translates with chrF 100
    translation = at.session_state["tr_result"]
    assert translation.text == samples[text] and min(translation.token_probs) > 0.5


def test_the_teaching_model_opens_on_a_short_everyday_sentence_it_translates_exactly(monkeypatch, tmp_path):  # 25
    at = opened(shipped(monkeypatch, tmp_path), "pages/1_Translate.py", model="en-fr-teaching")
    text = at.text_input(key="tr_text").value
    gold = align(normalize_text(text))
    assert gold is not None and len(text.split()) <= 8, text
    assert at.session_state["tr_result"].text == gold.tgt

"""Issue 23, part A (AppTest): class-ready defaults and honest views on the shipped models.

The default sentence follows the model on every page, Explain heads keeps its sentence across views, Compare models
compares like with like, ties in head importance are said, the step page's messages and scores are honest, and the
views a person sets up are kept in the link.
"""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
CHECKPOINTS = ROOT / "checkpoints"
BIBLE_DEFAULT = "In the beginning God created the heaven and the earth."
SENTENCE_PAGES = {"pages/2_Step_by_step.py": "step_text", "pages/4_Learn.py": "learn_sentence",
                  "pages/6_Explain_heads.py": "ex_text", "pages/1_Translate.py": "tr_text"}


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(CHECKPOINTS))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def opened(at, page, **params):
    at.query_params.update(params)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def pick_model(at, name):
    at.sidebar.selectbox(key="_model_select").set_value(str(CHECKPOINTS / name)).run()
    assert not at.exception, at.exception


def in_grammar(text: str) -> bool:
    return align(normalize_text(text)) is not None


@pytest.mark.parametrize("page", list(SENTENCE_PAGES))
def test_the_teaching_model_opens_every_page_on_a_sentence_of_its_grammar(at, page):
    key = SENTENCE_PAGES[page]
    opened(at, page, model="en-fr-teaching")
    text = at.text_input(key=key).value
    assert text != BIBLE_DEFAULT and in_grammar(text), text


def test_switching_model_changes_the_default_sentence_but_never_a_typed_one(at):
    opened(at, "pages/2_Step_by_step.py", model="en-fr-bible")
    bible = at.text_input(key="step_text").value
    assert not in_grammar(bible)
    pick_model(at, "en-fr-teaching")
    teaching = at.text_input(key="step_text").value
    assert teaching != bible and in_grammar(teaching)
    assert at.query_params["text"] == teaching
    at.text_input(key="step_text").input("The old woman reads a book.").run()
    pick_model(at, "en-fr-bible")
    assert at.text_input(key="step_text").value == "The old woman reads a book."


def test_explain_heads_keeps_the_typed_sentence_and_its_link_across_views(at):
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching")
    typed = "The young man buys a green bicycle."
    at.text_input(key="ex_text").input(typed).run()
    for view in ("stats", "ablate", "importance", "ablate"):
        at.radio(key="ex_view").set_value(view).run()
        assert not at.exception, at.exception
    assert at.text_input(key="ex_text").value == typed
    assert at.query_params["text"] == typed


def test_switch_it_off_in_head_importance_lands_on_the_current_sentence(at):
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching")
    typed = "The young man buys a green bicycle."
    at.text_input(key="ex_text").input(typed).run()
    at.radio(key="ex_view").set_value("importance").run()
    at.session_state["ex_off"] = [("cross", 1, 2)]  # what "Switch it off" (head_views._open_in_ablation) sets,
    at.session_state["ex_view"] = "ablate"  # without computing every head's importance first
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key="ex_text").value == typed and at.query_params["text"] == typed

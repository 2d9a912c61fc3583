"""The Home page and the sidebar every page shares (AppTest): the model's facts, the model picker, what a
missing or broken model says, and sidebar widgets whose keys were dropped."""

import pytest

from tests.app_fixtures import ROOT, SHIPPED, app, home_facts, markdown_table, opened, page, shipped
from ui.shared.state import class_mode
from ui.shared.text.plain import table


def test_home_describes_the_model(at):
    at.run()
    assert not at.exception
    assert at.title[0].value == "Attention Explorer"
    facts = home_facts(at)
    assert facts["heads"] == "4" and facts["test BLEU"] == "1.5" and facts["languages"] == "en → fr"
    description = facts["training data"]
    assert not any(description in c.value for c in at.caption)  # said once, in the table
    assert not at.table  # a Markdown table: st.table would load ~1 MB of Arrow's JavaScript into Home


def test_no_model_explains_how_to_train_one(at, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "none"))
    for path in ("pages/1_Translate.py", "pages/2_Step_by_step.py"):
        page(at, path)
        assert any("Train" in i.value for i in at.info)


def test_broken_checkpoint_shows_its_error(at, tmp_path, monkeypatch):
    broken = tmp_path / "ckpts" / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{not json")
    (broken / "model.safetensors").write_text("garbage")
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(broken.parent))
    at.run()
    assert not at.exception
    assert "cannot be loaded" in at.error[0].value and "config.json" in at.error[0].value


def test_model_picker_names_each_models_language_pair(at):
    at.run()
    (picker,) = [b for b in at.sidebar.selectbox if b.label == "Model"]
    assert picker.options == ["tiny · English → French", "tiny-ar · Arabic → French"]
    assert at.sidebar.caption[0].value.startswith("English → French")


def test_the_facts_table_shows_each_cell_as_typed():
    rows = {"training data": "a | b *bold* [link](x) www.example.org", "layers": "2 encoder + 2 decoder"}
    assert markdown_table(table(rows, ("", "value"))) == rows


def test_readme_home_and_examples_say_what_ships(monkeypatch, tmp_path):
    shipped = [p for p in SHIPPED.iterdir() if (p / "config.json").is_file()]
    numbers = {3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    assert f"{numbers[len(shipped)]} trained models ship" in (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    at = app(monkeypatch, tmp_path, SHIPPED)
    at.run()
    intro = at.markdown[0].value
    assert "translating English to French, Arabic and Italian" in intro, intro
    opened(at, "pages/1_Translate.py", model="en-fr-bible-debian")
    examples = at.selectbox(key="tr_example").options
    assert "The file could not be opened." in examples  # modern sentences ...
    assert any("God" in e or "LORD" in e for e in examples[:4])  # ... and verses, in turn


@pytest.mark.parametrize("key", ["_model_select", class_mode.TOGGLE])
def test_a_widget_callback_after_its_key_was_dropped_keeps_the_page_up(monkeypatch, tmp_path, tiny_and_other, key):
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/1_Translate.py")
    widget = at.sidebar.selectbox(key=key) if key == "_model_select" else at.sidebar.toggle(key=key)
    del at.session_state[key]  # as open_model does, between the browser's widget state and its rerun
    widget.set_value(str(tiny_and_other / "other") if key == "_model_select" else True).run()
    assert not at.exception, at.exception


def test_the_home_page_says_the_teaching_models_vocabulary_is_shared(monkeypatch, tmp_path):
    at = shipped(monkeypatch, tmp_path)
    at.query_params["model"] = "en-fr-teaching"
    at.run()
    assert not at.exception, at.exception
    facts = home_facts(at)  # the loaded model's facts
    assert "shared by both languages" in facts["vocabulary"] and "source / " not in facts["vocabulary"]

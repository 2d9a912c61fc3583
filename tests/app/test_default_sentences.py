"""The sentence each page opens on (AppTest): one the chosen model translates well, from its own corpus (a sentence of
the teaching grammar, a test verse its card shows, the examples of its corpus), following the model the sidebar picks
but never replacing a sentence the user typed; a newcomer's first screen is the one the teacher's guide quotes."""

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, ROOT, SHIPPED, app, make_checkpoint, opened, shipped, write_tsv
from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from ui.shared.models import catalog
from ui.shared.models.offline_examples import offline_examples

BIBLE_DEFAULT = "In the beginning God created the heaven and the earth."
SENTENCE_PAGES = {"pages/2_Step_by_step.py": "step_text", "pages/4_Learn.py": "learn_sentence",
                  "pages/6_Explain_heads.py": "ex_text", "pages/1_Translate.py": "tr_text"}


@pytest.fixture
def at(tmp_path, monkeypatch):
    """The app over the shipped models."""
    return app(monkeypatch, tmp_path, SHIPPED)


def pick_model(at, name):
    at.sidebar.selectbox(key="_model_select").set_value(str(SHIPPED / name)).run()
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


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    (root / "data").mkdir()  # inside checkpoints/: a folder the pages may read a metadata's corpus from
    tsv = write_tsv(root / "data" / "pairs.tsv", copies=4)
    for name, seed in (("tiny", 0), ("tiny-b", 1)):  # the same vocabulary, other weights: another output
        path = make_checkpoint(root / name, seed=seed)
        metadata = json.loads((path / "metadata.json").read_text())
        metadata["corpus"] = {"kind": "tsv", "src": "en", "tgt": "fr", "path": str(tsv), "dev_fraction": 0.1,
                              "test_fraction": 0.1}  # a corpus the app can load: a dev sample for importance
        (path / "metadata.json").write_text(json.dumps(metadata))
    return root


def test_example_sentences_follow_the_chosen_model(tmp_path, monkeypatch):
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec, MixPart

    own = CorpusSpec(kind="tsv", path=str(write_tsv(tmp_path / "own.tsv")), test_fraction=0.2)
    corpora = {"bible-ar": CorpusSpec(kind="bible", src="en", tgt="ar"), "tsv-own": own,
               "mix": CorpusSpec.mix([MixPart(CorpusSpec(kind="bible")), MixPart(own)]),
               "mix-gone": CorpusSpec.mix([MixPart(CorpusSpec(kind="bible")),
                                           MixPart(CorpusSpec(kind="debian", path=str(tmp_path / "not-built")))])}
    for name, spec in corpora.items():
        path = make_checkpoint(tmp_path / "ckpts" / name, tgt=spec.tgt)
        metadata = json.loads((path / "metadata.json").read_text())
        (path / "metadata.json").write_text(json.dumps(metadata | {"corpus": spec.to_dict()}))
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "ckpts"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path))  # own.tsv is in the data folder: the page may read it
    for name, spec in corpora.items():
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["model"] = name
        at.switch_page("pages/1_Translate.py").run()
        assert not at.exception, at.exception
        if spec.kind == "mix":  # the parts' test sentences in turn; a Debian part not built here: offline ones
            verses = [s for s, _ in load_corpus(CorpusSpec(kind="bible")).test]
            other = [s for s, _ in load_corpus(own).test] if name == "mix" else offline_examples("debian")
            expected = ([v for pair in zip(verses, other) for v in pair] + verses[len(other):])[:300]
        else:
            expected = [s for s, _ in load_corpus(spec).test][:300]
        assert at.selectbox(key="tr_example").options[1:] == expected, name
        assert at.text_input(key="tr_text").value == expected[0]


def _guide_first_screen() -> tuple[str, str]:
    text = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    match = re.search(r"starts with \*(.+?)\*\s+and writes \(greedy search, the default\) \*(.+?)\*,", text, flags=re.S)
    assert match, "the guide says what the app's first screen shows"
    return " ".join(match.group(1).split()), " ".join(match.group(2).split())


def test_a_newcomers_first_translation_is_right_and_the_guide_quotes_it(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    at.run()
    assert Path(at.session_state["model_path"]).name == catalog.APP_MODEL == "en-fr-teaching"
    opened(at, "pages/1_Translate.py")
    sentence, output = _guide_first_screen()
    translation = at.session_state["tr_result"]
    assert at.text_input(key="tr_text").value == sentence and at.radio(key="tr_method").value == "greedy"
    assert translation.text == output == align(sentence).tgt  # the grammar's French: a right translation


def test_the_arabic_model_opens_on_a_sentence_of_its_cards_samples_and_translates_it(monkeypatch, tmp_path):
    at = opened(shipped(monkeypatch, tmp_path), "pages/1_Translate.py", model="en-ar-bible")
    text = at.text_input(key="tr_text").value
    card = (SHIPPED / "en-ar-bible" / "MODEL_CARD.md").read_text(encoding="utf-8")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in card.splitlines()]
    samples = {row[0]: row[1] for row in rows if len(row) == 4 and row[3] == "100.0"}
    assert text in samples  # a test verse the card shows it translates with chrF 100
    translation = at.session_state["tr_result"]
    assert translation.text == samples[text] and min(translation.token_probs) > 0.5


def test_the_teaching_model_opens_on_a_short_everyday_sentence_it_translates_exactly(monkeypatch, tmp_path):
    at = opened(shipped(monkeypatch, tmp_path), "pages/1_Translate.py", model="en-fr-teaching")
    text = at.text_input(key="tr_text").value
    gold = align(normalize_text(text))
    assert gold is not None and len(text.split()) <= 8, text
    assert at.session_state["tr_result"].text == gold.tgt

"""The app against hostile models and fields: a malformed or blocking metadata.json or status.json, a
symlink out of checkpoints/ or the runs folder, a corpus path to any file, a 20,000-character reference. One bad
model is listed as unreadable with the reason; every page still opens; nothing is read from elsewhere."""

import json
import os
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, PAIRS, make_checkpoint
from ui.explain import one_sentence
from ui.shared.models import catalog
from ui.shared.models.corpus_access import corpus_readable, readable_parts
from ui.shared.models.translation_gate import MAX_CHARS, OUTPUT_LIMIT

PAGES = ["pages/1_Translate.py", "pages/2_Step_by_step.py", "pages/3_Train.py", "pages/4_Learn.py",
         "pages/5_Teaching_guide.py", "pages/6_Explain_heads.py", "pages/7_Dataset.py"]
BAD_METADATA = {"corpus-a-string": {"corpus": "bible"}, "n-params-many": {"n_params": "many"},
                "src-an-image": {"corpus": {"kind": "tsv", "src": "![x](https://evil.example/x.png)", "tgt": "fr"}},
                "parts-not-a-list": {"corpus": {"kind": "mix", "parts": 3}}}


def with_metadata(path: Path, **fields) -> Path:
    metadata = json.loads((path / "metadata.json").read_text())
    (path / "metadata.json").write_text(json.dumps({**metadata, **fields}))
    return path


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """checkpoints/ with one good model and one of each kind of bad one; a runs folder with a FIFO status.json and
    a run that is a symlink to a run elsewhere."""
    root, runs, outside = tmp_path / "checkpoints", tmp_path / "runs", tmp_path / "outside"
    make_checkpoint(root / "good")
    for name, fields in BAD_METADATA.items():
        with_metadata(make_checkpoint(root / name), **fields)
    os.mkfifo(make_checkpoint(root / "fifo-metadata") / "metadata.json.tmp")
    os.replace(root / "fifo-metadata" / "metadata.json.tmp", root / "fifo-metadata" / "metadata.json")
    make_checkpoint(outside / "elsewhere")
    (root / "linked-out").symlink_to(outside / "elsewhere")
    fifo_run = runs / "fifo-run"
    make_checkpoint(fifo_run / "checkpoints" / "best")
    os.mkfifo(fifo_run / "status.json")
    make_checkpoint(outside / "run" / "checkpoints" / "best")
    (runs / "linked-run").symlink_to(outside / "run")
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(root))
    monkeypatch.setenv("EXPLORER_RUNS", str(runs))
    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.timeout(60)  # a FIFO read would block forever
def test_discovery_lists_every_bad_model_as_unreadable_with_its_reason_and_the_good_one_as_usual(hostile):
    choices = {c.key: c for c in catalog.find_models()}
    assert choices["good"].problem == "" and choices["good"].summary.startswith("English → French")
    reasons = {"corpus-a-string": "corpus should be an object", "n-params-many": "n_params should be int",
               "src-an-image": "corpus.src should be a language code", "parts-not-a-list": "corpus.parts should be",
               "fifo-metadata": "not a regular file", "linked-out": "links outside its folder",
               "run/linked-run/best": "links outside its folder"}
    for key, reason in reasons.items():
        assert reason in choices[key].problem and "unreadable" in choices[key].label, (key, choices[key])
        assert choices[key].languages is None and "evil" not in choices[key].label
    assert choices["run/fifo-run/best"].problem == ""  # a FIFO status.json reads as no status
    assert not catalog.is_model_path(hostile / "checkpoints" / "linked-out")
    assert not catalog.is_model_path(hostile / "runs" / "linked-run" / "checkpoints" / "best")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("model", ["good", "corpus-a-string", "fifo-metadata", "linked-out", "run/linked-run/best"])
def test_every_page_opens_whatever_model_is_picked(hostile, model):
    for page in ["app.py", *PAGES]:
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["model"] = model
        if page != "app.py":
            at.switch_page(page)
        at.run()
        assert not at.exception, (model, page, at.exception)
        shown = " ".join(e.value for e in [*at.error, *at.sidebar.caption])
        if model != "good" and page in ("app.py", "pages/1_Translate.py"):
            assert "cannot be loaded" in shown or "opens models from" in shown, (model, page, shown)


def test_the_sidebar_shows_metadata_as_text_never_markdown(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "metadata_problem", lambda metadata: None)  # as if a bad value got through
    with_metadata(make_checkpoint(tmp_path / "checkpoints" / "good"),
                  corpus={"kind": "tsv", "src": "![x](https://evil.example/x.png)", "tgt": "[fr](https://evil.example)"})
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["model"] = "good"
    at.run()
    caption = at.sidebar.caption[0].value
    assert "![x](" not in caption and "](https" not in caption and "\\!\\[x\\]" in caption


@pytest.mark.timeout(120)
def test_a_corpus_path_in_the_metadata_never_makes_the_translate_page_read_a_file_elsewhere(hostile):
    secret = hostile / "secret.tsv"
    secret.write_text("".join(f"secret line {i}\tligne {i}\n" for i in range(60)))
    with_metadata(hostile / "checkpoints" / "good", corpus={"kind": "tsv", "src": "en", "tgt": "fr",
                                                            "path": str(secret), "test_fraction": 0.5})
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["model"] = "good"
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception
    assert not [s for s in at.selectbox if s.key == "tr_example"] and "secret" not in at.text_input(key="tr_text").value
    data = hostile / "data"
    data.mkdir()
    shutil.copy(secret, data / "pairs.tsv")
    assert corpus_readable({"kind": "tsv", "path": str(data / "pairs.tsv")})
    assert not corpus_readable({"kind": "tsv", "path": str(data / ".." / "secret.tsv")})
    (data / "link.tsv").symlink_to(secret)
    assert not corpus_readable({"kind": "tsv", "path": str(data / "link.tsv")})
    mix = {"kind": "mix", "parts": [{"corpus": {"kind": "bible"}}, {"corpus": {"kind": "tsv", "path": str(secret)}}]}
    assert not corpus_readable(mix) and readable_parts(mix)["parts"] == [{"corpus": {"kind": "bible"}}]


@pytest.fixture
def explain(tmp_path, monkeypatch):
    make_checkpoint(tmp_path / "checkpoints" / "tiny")
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/6_Explain_heads.py").run()
    at.radio(key="ex_view").set_value("search").run()
    at.text_input(key="ex_text").input(PAIRS[0][0]).run()
    assert not at.exception
    return at


@pytest.mark.timeout(120)
@pytest.mark.parametrize("reference, message", [
    ("la " * 6_667, f"at most {MAX_CHARS:,} at a time"),  # 20,000 characters
    ("x " * 400, f"the app scores at most {min(OUTPUT_LIMIT, 128)}"),  # 800 characters, 401 pieces
], ids=["20,000 characters", "401 pieces"])
def test_the_reference_translation_field_holds_the_apps_limits_before_any_mask_is_built(explain, monkeypatch,
                                                                                        reference, message):
    forced = []
    real = one_sentence.teacher_forced
    monkeypatch.setattr(one_sentence, "teacher_forced", lambda *a, **k: forced.append(a) or real(*a, **k))
    explain.text_input(key="ex_ref").input(reference).run()
    assert not explain.exception, explain.exception
    warnings = [w.value.replace("\\", "") for w in explain.warning]  # plain() escapes punctuation
    assert any(message in w for w in warnings), warnings
    assert not forced  # refused before the reference was scored
    assert len(explain.dataframe[0].value) == 2  # greedy and beam only

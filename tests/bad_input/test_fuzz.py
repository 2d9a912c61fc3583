"""The fuzz set (tests/fuzz_inputs.py, 232 inputs) through the Translator, the translate CLI and every text field of
the app (the Explain page's reference translation included): each gets a translation or a clear message, never
another exception, and no user text reaches the page as Markdown or HTML that could make a link, an image or a
script. The other entry points too: stdin line by line, hostile search and device flags, Windows-reserved run
names and every hostile checkpoint beside a good one (uploads: tests/bad_input/test_uploads.py)."""

from __future__ import annotations

import functools
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import make_checkpoint
from tests.fuzz_inputs import HOSTILE_CHECKPOINTS, LINK, RUN_NAMES, SEARCH_FLAGS, STDIN_LINES, fuzz_inputs
from transformer.decoding import translate
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translation, TranslationError, Translator
from ui.shared.models.catalog import find_models
from ui.shared.models.translation_gate import MAX_CHARS
from ui.shared.text.plain import code, plain
from ui.shared.training import jobs

INPUTS = fuzz_inputs()
TEXTS = [text for _, text in INPUTS]
APP = str(Path(__file__).resolve().parents[2] / "app.py")
ROOT = Path(__file__).resolve().parents[2]
MARKDOWN_ACTIVE = set("[]()<>*_`$:#!|~\\")
MARKDOWN_ELEMENTS = ("markdown", "caption", "info", "warning", "error", "success", "title", "header", "subheader",
                     "toast")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    return root


@pytest.fixture(scope="module")
def translator(checkpoints) -> Translator:
    return Translator(checkpoints / "tiny")


def test_the_fuzz_set_is_large_and_covers_every_category():
    categories = {category for category, _ in INPUTS}
    assert len(INPUTS) >= 200 and len(set(TEXTS)) == len(TEXTS)
    assert {"empty", "long", "emoji", "rtl and mixed scripts", "zero-width and control", "NUL", "invalid surrogates",
            "html and script", "markdown", "format strings", "long single token"} <= categories
    assert max(len(t) for t in TEXTS) >= 10_000


def test_translator_gives_a_translation_or_a_translation_error(translator):
    """Each answer's kind; how long the slowest input takes is bench/app_limits.py's (no timed assertion here)."""
    beam = SearchSettings(beam_size=3, nbest=2)
    for i, (category, text) in enumerate(INPUTS):
        for settings in (SearchSettings(), beam) if i % 4 == 0 else (SearchSettings(),):
            try:
                result = translator.translate(text, settings, attention=True)
            except TranslationError as e:
                assert str(e) and len(str(e)) < 300 and "\n" not in str(e), (category, text[:40], e)
                continue
            assert isinstance(result, Translation) and result.text.encode("utf-8")
            assert len(result.token_ids) <= translator.model.config.max_len
            assert all(0.0 <= p <= 1.0 for p in result.token_probs)


def test_a_lone_surrogate_is_a_translation_error_not_a_type_error(translator):
    with pytest.raises(TranslationError, match="lone surrogate '\\\\ud800' at character 1"):
        translator.translate("\ud800 x")
    with pytest.raises(TranslationError, match="input 2: the text is not valid Unicode"):
        translator.translate_batch(["the cat", "x \udfff"])
    with pytest.raises(TranslationError, match="expected text, got bytes"):
        translator.translate(b"the cat")  # type: ignore[arg-type]
    message = str(pytest.raises(TranslationError, translator.translate, " " * 10_000).value)
    assert len(message) < 120 and "10,000 characters" in message


def test_cli_answers_every_input_with_output_or_one_error_line(checkpoints, capsys, monkeypatch):
    # one load of the checkpoint for the 290 commands (loading it each time took 40% of this test): the Translator
    # holds no state between translations, and tests/decoding/test_translate.py loads it through the command
    loaded = functools.cache(translate.Translator)
    monkeypatch.setattr(translate, "Translator", lambda *args, **kwargs: loaded(*args, **kwargs))
    for i, (category, text) in enumerate(INPUTS):
        for argv in ([text], []) if i % 4 == 0 else ([text],):
            if not argv:  # the same text on stdin, as bytes: lone surrogates become invalid UTF-8
                data = text.replace("\n", " ").encode("utf-8", "surrogatepass")
                monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
            rc = translate.main(["--checkpoint", str(checkpoints / "tiny"), *argv])
            out, err = capsys.readouterr()
            if rc == 0:
                assert out.endswith("\n") and err.count("error:") == 0, (category, text[:40])
            else:
                assert rc == 2 and out == "", (category, text[:40], rc)
                assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, (category, text[:40], err)


def test_cli_process_refuses_undecodable_bytes_with_one_line(checkpoints, translate_cli):
    """Undecodable argv in a process of its own (the interpreter decodes argv); the same bytes on stdin through the
    command's main in this one (it reads sys.stdin.buffer as a process does: no torch import each)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "transformer.decoding.translate", "--checkpoint", str(checkpoints / "tiny")]
    try:
        done = subprocess.run(cmd + [os.fsdecode(b"the \xff cat")], capture_output=True, cwd=ROOT, env=env,
                              timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the translate command gave no answer to undecodable argv in 120 s: {e.stderr!r}")
    err = done.stderr.decode()
    assert done.returncode == 2 and "not valid Unicode" in err and len(err.strip().splitlines()) == 1, err
    for stdin in (b"the cat\n\xff\xfe sleeps\n", b"the \x00 cat\n"):
        done = translate_cli("--checkpoint", str(checkpoints / "tiny"), stdin=stdin)
        if b"\x00" in stdin:
            assert done.returncode == 0 and done.stdout, done.stderr
            continue
        assert done.returncode == 2 and "not valid Unicode" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# ----------------------------------------------------------------------------- the app

def active(body: str) -> str:
    """The part of a Markdown body that Markdown reads: without code spans and backslash-escaped characters."""
    return re.sub(r"\\.", "", re.sub(r"(`+)(.+?)\1", "", body, flags=re.S))


def unsafe_markdown(body: str) -> list[str]:
    """What in a Markdown body would render as more than text: HTML tags, links, images, bare URLs and e-mails.
    Code spans and backslash-escaped characters are literal, so they are removed first."""
    text = active(body)
    checks = {"html": r"<[A-Za-z/!?]", "link": r"\]\(|!\[|^\s*\[[^\]]*\]:", "url": r"(?i)(https?:|www\.|mailto:)",
              "e-mail": r"[\w.+-]@[\w-]+\.\w"}
    return [name for name, pattern in checks.items() if re.search(pattern, text, re.M)]


def bodies(at) -> list[str]:
    """The Markdown bodies on the page; an HTML block the app builds itself (allow_html: the probability table)
    counts by its text between the tags, where every typed `<` must have been escaped."""
    found = []
    for kind in MARKDOWN_ELEMENTS:
        for el in at.get(kind):
            body = el.proto.body if hasattr(el.proto, "body") else el.value
            found.append(re.sub(r"<[^>]*>", " ", body) if getattr(el.proto, "allow_html", False) else body)
    return found + [option for radio in at.radio for option in radio.options]


def assert_safe(at, text: str) -> None:
    assert not at.exception, (text[:60], at.exception)
    special = MARKDOWN_ACTIVE & set(text) and len(text.strip()) > 3
    typed = " ".join(text.split())
    for body in bodies(at):
        assert not unsafe_markdown(body), (text[:60], body[:200], unsafe_markdown(body))
        if special:
            assert typed not in active(body), (text[:60], body[:200])


def test_markdown_checker_catches_what_plain_and_code_prevent():
    for text in ("[click](" + LINK + ")", "<script>alert(1)</script>", "![x](y.png)", "www.evil.example",
                 "user@evil.example", LINK):
        assert unsafe_markdown(text), text
        assert not unsafe_markdown(plain(text)) and not unsafe_markdown(code(text)), text
    assert code("a `` b") == "```a `` b```" and code("`x") == "`` `x ``"


@pytest.fixture
def app(checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path / "data"))
    return AppTest.from_file(APP, default_timeout=60)  # each test opens its page straight away: no Home run first


def _typed(at, key: str, text: str):
    """Type text into a text box as a browser would send it (a lone surrogate cannot cross the websocket: the
    browser's UTF-8 encoder turns it into U+FFFD)."""
    at.text_input(key=key).input(text.encode("utf-8", "replace").decode("utf-8")).run()
    return at


FULL = pytest.mark.slow  # every input in every box: minutes on 2 cores; CI takes every sixth (each kind) in slow pages


@pytest.mark.parametrize("page, key, stride", [
    ("pages/1_Translate.py", "tr_text", 1), ("pages/2_Step_by_step.py", "step_text", 6),
    ("pages/4_Learn.py", "learn_sentence", 6), pytest.param("pages/2_Step_by_step.py", "step_text", 1, marks=FULL),
    pytest.param("pages/4_Learn.py", "learn_sentence", 1, marks=FULL)])
def test_every_input_in_each_sentence_box_translates_or_says_why(app, page, key, stride):
    app.switch_page(page).run()
    for category, text in INPUTS[::stride]:
        _typed(app, key, text)
        assert_safe(app, text)
        said = [el.value for kind in ("info", "warning") for el in app.get(kind)]
        if page.endswith("Translate.py"):
            translated = any(m.value.startswith("### ") for m in app.markdown)
            assert translated or said, (category, text[:40])
            if len(text) > MAX_CHARS:
                assert not translated and any(f"at most {MAX_CHARS:,}" in s for s in said), (category, text[:40])


@pytest.mark.parametrize("stride", [6, pytest.param(1, marks=FULL)])
def test_every_input_in_the_train_forms_text_boxes_is_refused_or_taken_quietly(app, monkeypatch, stride):
    monkeypatch.setenv("EXPLORER_ANY_TSV_PATH", "1")
    app.switch_page("pages/3_Train.py").run()
    app.radio(key="train_corpus").set_value("Hugging Face dataset").run()
    for key in ("train_name", "train_src", "train_tgt", "train_hf_name", "train_hf_config"):
        for _, text in INPUTS[::stride]:
            _typed(app, key, text)
            assert_safe(app, text)
        _typed(app, key, {"train_src": "en", "train_tgt": "fr", "train_hf_name": "opus_books",
                          "train_hf_config": "en-fr"}.get(key, "run-1"))
    app.radio(key="train_corpus").set_value("TSV file").run()
    for _, text in INPUTS[::stride]:
        _typed(app, "train_tsv_path", text)
        assert_safe(app, text)


def test_every_input_in_a_link_is_checked_before_it_is_used(checkpoints, monkeypatch, tmp_path):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    names = ("text", "model", "att", "layer", "head", "search", "beam", "alpha", "nbest", "hide")
    for i, (_, text) in enumerate(INPUTS[::4]):
        at = AppTest.from_file(APP, default_timeout=60)
        value = text.encode("utf-8", "replace").decode("utf-8")  # what a URL can carry
        at.query_params.update({names[i % len(names)]: value, names[(i + 3) % len(names)]: value})
        at.switch_page("pages/1_Translate.py").run()
        assert_safe(at, text)


def test_run_names_are_checked_before_anything_is_written(tmp_path, monkeypatch):
    launched: list[Path] = []
    monkeypatch.setattr(jobs, "_launch", lambda root, args: launched.append(root))
    runs = tmp_path / "runs"
    outside = tmp_path / "outside"
    for name in [*TEXTS, *RUN_NAMES, "../outside", "../../outside", "..", ".", "a/../../outside", "/tmp/x", "ok-name"]:
        try:
            jobs.start_run(runs, name, ["--corpus", "teaching"], corpus_tsv=b"a\tb\n" * 40)
        except ValueError as e:
            assert str(e)
    assert not outside.exists()
    assert launched and all(root.parent == runs and root.name == root.resolve().name for root in launched)
    assert {p.name for p in runs.iterdir()} == {root.name for root in launched}
    assert not {p.name.lower() for p in runs.iterdir()} & {name.lower() for name in RUN_NAMES}


# ----------------------------------------------------------------------------- the other entry points

@pytest.mark.parametrize("stride", [12, pytest.param(1, marks=[FULL, pytest.mark.timeout(1800)])])
def test_every_input_in_the_reference_translation_box_is_scored_or_refused_with_a_message(app, stride):
    app.switch_page("pages/6_Explain_heads.py").run()
    app.radio(key="ex_view").set_value("search").run()
    _typed(app, "ex_text", "the cat sleeps .")
    for category, text in INPUTS[::stride]:
        _typed(app, "ex_ref", text)
        assert_safe(app, text)
        if len(text) > MAX_CHARS:
            assert any(f"at most {MAX_CHARS:,}" in w.value.replace("\\", "") for w in app.warning), category


@pytest.mark.slow
def test_stdin_gives_one_output_line_per_input_line_for_every_input(checkpoints, capsys, monkeypatch):
    lines = [text for _, text in INPUTS if not any(0xD800 <= ord(c) <= 0xDFFF for c in text)]
    lines = [line.replace("\n", " ") for line in lines] + STDIN_LINES
    data = ("\ufeff" + "\n".join(lines) + "\n").encode("utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    assert translate.main(["--checkpoint", str(checkpoints / "tiny")]) == 0
    out = capsys.readouterr().out.split("\n")
    assert len(out) - 1 == len(lines)
    translator = Translator(checkpoints / "tiny")
    empty = [translate.blank(line.removesuffix("\r"), translator) for line in lines]
    assert all(not o for o, e in zip(out, empty) if e) and sum(empty) < len(lines) / 3


@pytest.mark.slow
@pytest.mark.parametrize("flags", SEARCH_FLAGS, ids=" ".join)
def test_every_hostile_search_flag_is_one_line_for_every_input_kind(checkpoints, capsys, flags):
    if flags[:2] == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    for _, text in INPUTS[::20]:
        rc = translate.main(["--checkpoint", str(checkpoints / "tiny"), *flags, text])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (flags, text[:20], err)


@pytest.mark.slow
def test_every_hostile_checkpoint_beside_a_good_one_is_listed_unreadable_or_refused_and_home_opens(tmp_path,
                                                                                                monkeypatch):
    root = tmp_path / "checkpoints"
    make_checkpoint(root / "good")
    for i, (damage, _) in enumerate(HOSTILE_CHECKPOINTS.values()):
        path = make_checkpoint(root / f"hostile-{i:02d}")
        (path / "checksums.json").unlink()
        damage(path)
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(root))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    choices = {c.key: c for c in find_models()}
    assert choices["good"].problem == ""
    for i, name in enumerate(HOSTILE_CHECKPOINTS):
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["model"] = f"hostile-{i:02d}"
        at.run()
        assert not at.exception, (name, at.exception)
        assert at.error or f"hostile-{i:02d}" not in choices or choices[f"hostile-{i:02d}"].problem, name


def test_the_ci_stride_still_types_every_kind_of_input():
    assert {c for c, _ in INPUTS[::6]} == {c for c, _ in INPUTS}

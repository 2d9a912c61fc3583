"""Bounded work per request and per server: input and output limits, the decode slots, downloads built only when
clicked, and the places the explorer opens models from. The many-users figures are in bench/many_users.py."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import PAIRS, SHIPPED, app, make_checkpoint, opened
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import TranslationError, Translator
from ui.shared.attention import families
from ui.shared.models import catalog, translation_gate
from ui.shared.models.translation_gate import MAX_CHARS, MAX_SOURCE_TOKENS, OUTPUT_LIMIT, DecodeLimiter, ServerBusy
from ui.shared.training import jobs

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    return root


@pytest.fixture(scope="module")
def translator(checkpoints) -> Translator:
    return Translator(checkpoints / "tiny")


@pytest.fixture
def at(checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=60)


# ----------------------------------------------------------------------------- the decode slots

@pytest.mark.timeout(30)
def test_limiter_runs_at_most_its_slots_at_once_and_the_rest_wait_their_turn():
    limiter = DecodeLimiter(2, timeout=20)
    lock, now, peak, waits = threading.Lock(), [0], [0], []

    def work(i: int) -> None:
        with limiter.slot(on_wait=lambda running, waiting: waits.append((running, waiting))):
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.05)
            with lock:
                now[0] -= 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert peak[0] == 2 and len(waits) >= 4  # 8 requests, 2 slots: most of them had to wait
    assert all(running <= 2 and waiting >= 1 for running, waiting in waits)
    assert limiter.running == 0 and limiter.waiting == 0


@pytest.mark.timeout(30)
def test_a_waiting_request_is_told_then_served_when_a_slot_frees_or_refused_after_the_timeout():
    limiter = DecodeLimiter(1, timeout=10)
    told: list[tuple[int, int]] = []
    with limiter.slot():
        threading.Timer(0.3, lambda: None).start()
        with pytest.raises(ServerBusy, match="The server is busy"):
            with limiter.slot(on_wait=lambda *a: told.append(a), timeout=0.2):
                pass
        assert told == [(1, 1)] and limiter.waiting == 0
        release = threading.Event()
        served: list[float] = []

        def later() -> None:
            start = time.monotonic()
            with limiter.slot(on_wait=lambda *a: told.append(a)):
                served.append(time.monotonic() - start)
            release.set()

        waiter = threading.Thread(target=later)
        waiter.start()
        time.sleep(0.3)
        assert not served  # still waiting while the slot is held
    assert release.wait(5) and served and served[0] >= 0.25 and told[-1] == (1, 1)
    waiter.join(5)
    with pytest.raises(ValueError):
        DecodeLimiter(0)


@pytest.mark.timeout(60)
def test_a_page_whose_request_finds_every_slot_taken_says_the_server_is_busy(at, monkeypatch):
    monkeypatch.setattr(translation_gate.LIMITER, "timeout", 0.3)
    translation_gate.RECENT.clear()  # a sentence another test translated would be shown without a decode
    holders = [translation_gate.LIMITER.slot() for _ in range(translation_gate.LIMITER.slots)]
    for holder in holders:
        holder.__enter__()
    try:
        at.run()
        at.switch_page("pages/1_Translate.py").run()
        at.text_input(key="tr_text").input(PAIRS[0][0]).run()
        assert not at.exception
        assert any("The server is busy" in w.value for w in at.warning), [w.value for w in at.warning]
        at.switch_page("pages/2_Step_by_step.py").run()
        assert any("The server is busy" in w.value for w in at.warning)
    finally:
        for holder in holders:
            holder.__exit__(None, None, None)
    at.switch_page("pages/1_Translate.py").run()
    at.text_input(key="tr_text").input(PAIRS[1][0]).run()
    assert not [w for w in at.warning if "busy" in w.value] and any(m.value.startswith("### ") for m in at.markdown)


# ----------------------------------------------------------------------------- limits per request

def test_input_beyond_the_limits_is_refused_before_any_decoding(translator, monkeypatch):
    calls = []
    monkeypatch.setattr(translator, "translate", lambda *a, **k: calls.append(a))
    with pytest.raises(TranslationError, match=f"1,001 characters; the app translates at most {MAX_CHARS:,}"):
        translation_gate.translate(translator, "a" * (MAX_CHARS + 1), SearchSettings())
    words = " ".join(["the cat sleeps ."] * 30)  # 120 word-level pieces + </s>, under 1,000 characters
    assert len(words) <= MAX_CHARS
    with pytest.raises(TranslationError, match=f"121 pieces long for this model; the app reads at most "
                                               f"{MAX_SOURCE_TOKENS}"):
        translation_gate.translate(translator, words, SearchSettings())
    with pytest.raises(TranslationError, match="lone UTF-16 surrogate"):
        translation_gate.translate(translator, "\ud800 x", SearchSettings())
    assert not calls


def test_output_is_bounded_whatever_the_settings_ask(translator):
    assert OUTPUT_LIMIT == 160
    loose = SearchSettings(max_len_a=10.0, max_len_b=500)
    text = " ".join(["the cat sleeps ."] * 24)  # 97 pieces: at the limit
    result = translation_gate.translate(translator, text, loose)
    assert len(result.source_ids) == 97 and len(result.token_ids) <= OUTPUT_LIMIT
    assert translation_gate.bounded(loose).max_len_a == 1.5 and translation_gate.bounded(loose).max_len_b == 10


def test_downloads_are_built_only_when_clicked(at, monkeypatch):
    built = []
    for name in ("to_npz", "to_json", "to_csv"):
        monkeypatch.setattr(families, name, lambda att, name=name: built.append(name) or b"")
    at.run()
    at.switch_page("pages/1_Translate.py").run()
    at.text_input(key="tr_text").input(PAIRS[2][0]).run()
    at.selectbox(key="tr_head").set_value(1).run()
    assert len(at.get("download_button")) == 3 and not at.exception
    assert built == []  # three renders, no file made


# ----------------------------------------------------------------------------- where models come from

@pytest.mark.parametrize("path", ["/etc", "{runs}/../../etc", "{checkpoints}/../elsewhere", "{checkpoints}",
                                  "relative/path"])
def test_the_explorer_opens_models_only_under_checkpoints_and_runs(at, checkpoints, tmp_path, path):
    path = path.format(checkpoints=checkpoints, runs=tmp_path / "runs")
    assert not catalog.is_model_path(path)
    assert catalog.is_model_path(checkpoints / "tiny") and catalog.is_model_path(tmp_path / "runs" / "r" / "x")
    at.session_state["model_path"] = path  # as a bug or a stale session could leave it
    at.run()
    assert not at.exception
    assert at.session_state["model_path"] == str(checkpoints / "tiny")  # the picker fell back to a listed model


def test_train_page_opens_only_its_runs_checkpoint(at, tmp_path):
    run = tmp_path / "runs" / "r1"
    make_checkpoint(run / "checkpoints" / "best")
    (run / "status.json").write_text('{"state": "finished", "step": 5, "max_steps": 5, "updated": 1}')
    at.run()
    at.switch_page("pages/3_Train.py").run()
    at.button(key="train_open").click().run()
    assert not at.exception and at.session_state["model_path"] == str(run / "checkpoints" / "best")
    assert catalog.is_model_path(at.session_state["model_path"])


# ----------------------------------------------------------------------------- what the Train page takes

def test_uploaded_tsv_is_checked_for_encoding_columns_size_and_lines(monkeypatch):
    good = "".join(f"{s}\t{t}\n" for s, t in PAIRS).encode()
    assert jobs.check_tsv(good) == len(PAIRS) and jobs.check_tsv(b"\xef\xbb\xbf" + good) == len(PAIRS)
    for data, message in [
        (b"caf\xe9\tx\n" * 20, "not UTF-8 text (line 1"), (good + b"a\x00b\tc\n", "NUL character (line 31)"),
        (good + b"only one column\n", "Line 31 is not `source<TAB>target` (it has 1"),
        (good + b"a\tb\tc\td\n", "it has 4"), (good + b"\tmissing source\n", "an empty one"),
        (b"a\tb\n" * 3, "3 sentence pair(s): too few to hold out dev and test sentences (the dev and test splits "
                          "would be empty, at 2% each); at least 26 are needed"),
        (b"a\tb\n" * (jobs.MAX_TSV_LINES + 1), "lines; at most 1,000,000"),
        (b"x" * (jobs.MAX_TSV_BYTES + 1), "at most 20 MB"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            jobs.check_tsv(data)


def test_tsv_files_come_from_the_data_folder_unless_any_path_is_allowed(tmp_path, monkeypatch, at):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "pairs.tsv").write_text("a\tb\n")
    (data / "notes.md").write_text("x")
    (tmp_path / "secret.tsv").write_text("s\tt\n")
    (data / "link.tsv").symlink_to(tmp_path / "secret.tsv")
    monkeypatch.setenv("EXPLORER_DATA", str(data))
    assert jobs.data_files() == ["link.tsv", "sub/pairs.tsv"]
    assert jobs.data_file("sub/pairs.tsv") == (data / "sub" / "pairs.tsv").resolve()
    for name in ("../secret.tsv", "link.tsv", "/etc/passwd", "sub/../../secret.tsv", "notes.txt"):
        with pytest.raises(ValueError, match="is not a file of the data folder"):
            jobs.data_file(name)
    at.run()
    at.switch_page("pages/3_Train.py").run()
    at.radio(key="train_corpus").set_value("TSV file").run()
    assert not [t for t in at.text_input if t.key == "train_tsv_path"]  # no free path field by default
    assert at.selectbox(key="train_data_file").options == ["—", "link.tsv", "sub/pairs.tsv"]
    monkeypatch.setenv("EXPLORER_ANY_TSV_PATH", "1")
    at.run()
    assert [t for t in at.text_input if t.key == "train_tsv_path"]


@pytest.mark.parametrize("name, ok", [("opus_books", True), ("Helsinki-NLP/europarl", True), ("/etc", False),
                                      ("../x", False), ("data.json", False), ("a/b/c", False), ("tests", False)])
def test_hugging_face_names_are_hub_names_never_local_paths(name, ok):
    if ok:
        jobs.check_hf_name(name, "en-fr")
    else:
        with pytest.raises(ValueError, match="not a Hugging Face dataset name"):
            jobs.check_hf_name(name)


@pytest.mark.parametrize("name", ["../../somewhere", "..", "a/b", "x" * 65, "", ".hidden", "a..b"])
def test_an_upload_with_a_bad_run_name_writes_nothing(tmp_path, name):
    runs = tmp_path / "runs" / "inner"
    with pytest.raises(ValueError, match="A run name uses letters"):
        jobs.start_run(runs, name, ["--corpus", "tsv"], corpus_tsv=b"a\tb\n" * 20)
    assert not (tmp_path / "runs").exists() and list(tmp_path.iterdir()) == [] or not any(tmp_path.rglob("*.tsv"))


def test_a_run_started_by_the_app_yields_the_cores_to_the_server(tmp_path, monkeypatch):
    started = []

    class Started:
        pid = 4242

        def __init__(self, command, **kwargs):
            started.append(command)

        def poll(self) -> int:  # exited at once
            return 0

    monkeypatch.setattr(jobs.subprocess, "Popen", Started)
    jobs.start_run(tmp_path / "runs", "low", ["--corpus", "teaching"])
    (tmp_path / "runs" / "low" / "checkpoints" / "latest").mkdir(parents=True)
    jobs.resume_run(tmp_path / "runs" / "low", max_steps=10)
    assert [c[c.index("--nice") + 1] for c in started] == ["10", "10"]
    assert started[1][-4:] == ["--max-steps", "10", "--nice", "10"]


def test_the_server_defaults_take_effect_through_streamlits_own_config_parser(monkeypatch):
    """.streamlit/config.toml as `streamlit run` reads it: a misspelt option would be ignored with a warning, and the
    server would listen on every interface, report usage, take 200 MB uploads or collect garbage after every run."""
    from streamlit import config

    monkeypatch.chdir(Path(APP).parent)
    config.get_config_options(force_reparse=True)
    try:
        assert config.get_option("server.address") == "127.0.0.1"
        assert config.get_option("browser.gatherUsageStats") is False
        assert config.get_option("server.maxUploadSize") * 2**20 == jobs.MAX_TSV_BYTES
        assert config.get_option("server.disconnectedSessionTTL") == 30
        assert config.get_option("runner.postScriptGC") is False  # transformer/memory.py collects instead, every 30 s
        assert config.get_option("client.showErrorDetails") == "none"  # no traceback ever reaches a user
    finally:
        config.get_config_options(force_reparse=True)


SENTENCE_PAGES = {"pages/2_Step_by_step.py": "step_text", "pages/4_Learn.py": "learn_sentence",
                  "pages/6_Explain_heads.py": "ex_text", "pages/1_Translate.py": "tr_text"}


@pytest.mark.parametrize("page", list(SENTENCE_PAGES))
def test_an_over_long_text_is_refused_without_backticks_and_stays_out_of_the_link(page, monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    key = SENTENCE_PAGES[page]
    opened(at, page, model="en-fr-teaching", text="The young man buys a green bicycle.")
    at.text_input(key=key).input("The cat sleeps. " * 70).run()  # 1,120 characters
    assert not at.exception, at.exception
    said = [e.value.replace("\\", "") for e in [*at.info, *at.warning]]  # as read: Markdown escapes undone
    said = [s for s in said if "1,000" in s]
    assert said and not any("`" in s for s in said), said
    assert at.query_params["text"] == "The young man buys a green bicycle."



"""Background work ends cleanly: every page rendered in one process, then the process exits 0 with a
split's table and head importance still being computed; a server stopped with Ctrl+C (SIGINT) during a table exits
0 and leaves a readable cache; the gate's background threads stop when asked and are joined at exit.

Before, the first two aborted ("terminate called without an active exception", SIGABRT): a daemon thread inside a
torch operation when the interpreter finalised was ended by pthread_exit as it took the GIL back, and the unwinding
reached a C++ destructor that may not throw."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from websockets.sync.client import connect

from tests.app_fixtures import make_checkpoint
from transformer.decoding.translate import Translator, find_checkpoint
from transformer.explain.dataset import CHUNK
from transformer.explain.dataset_cache import read_cache
from ui.explain.every_head import ImportanceJob
from ui.shared.models.translation_gate import DecodeLimiter, Stopped, start_background, stop_background

REPO = Path(__file__).resolve().parents[2]
ABORT = "terminate called without an active exception"
shipped = pytest.mark.skipif(find_checkpoint() is None, reason="no shipped teaching model")

# app.py, then every page, in one AppTest; on Explain heads, head importance is started; the Dataset page starts its
# table. The script prints the background threads still running when it ends: the exit has to stop them.
EVERY_PAGE = textwrap.dedent("""
    import sys, threading
    from pathlib import Path
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file("app.py", default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    for page in sorted(Path("pages").glob("*.py")):
        at.switch_page(str(page)).run()
        assert not at.exception, (page, at.exception)
        if page.name == "6_Explain_heads.py":
            at.radio(key="ex_view").set_value("importance").run()
            at.button(key="ex_imp_start").click().run()
            assert not at.exception, at.exception
    print("running at the end:", sorted(t.name for t in threading.enumerate() if t.daemon), flush=True)
""")


@shipped
def test_every_page_renders_in_one_process_and_the_process_exits_0(tmp_path):
    env = {**os.environ, "EXPLORER_CHECKPOINTS": str(REPO / "checkpoints"), "EXPLORER_RUNS": str(tmp_path / "runs"),
           "EXPLORER_CACHE": str(tmp_path / "cache"), "PYTHONFAULTHANDLER": "1"}
    try:
        done = subprocess.run([sys.executable, "-c", EVERY_PAGE], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=180)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"rendering every page and exiting took over 180 s; its output so far:\n{e.stdout}\n{e.stderr}")
    assert ABORT not in done.stderr and done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "'dataset-table'" in done.stdout and "'head-importance'" in done.stdout, done.stdout  # the exit's work


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(what: str, check, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {what}; the server's log:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@shipped
def test_ctrl_c_during_a_tables_computation_exits_0_and_leaves_a_readable_cache(tmp_path):
    """`streamlit run` as a user starts it; a browser's first message (a websocket, as the frontend speaks it) opens
    the Dataset page on the teaching test split (500 sentences, about 15 s here); once the first rows are cached,
    SIGINT to the process group, as Ctrl+C in a terminal. Streamlit's own clean SIGINT exit is status 0."""
    cache, log, port = tmp_path / "cache", tmp_path / "streamlit.log", _free_port()
    env = {**os.environ, "EXPLORER_CACHE": str(cache), "EXPLORER_RUNS": str(tmp_path / "runs"),
           "EXPLORER_CHECKPOINTS": str(REPO / "checkpoints"), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.address",
           "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    url = f"http://127.0.0.1:{port}"
    with open(log, "w") as fh:
        server = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for("the server's health check", lambda: _healthy(url) or server.poll() is not None, 60, log)
        assert server.poll() is None, log.read_text()
        with connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"], max_size=None) as ws:
            message = BackMsg()
            message.rerun_script.page_name = "Dataset"
            message.rerun_script.query_string = "model=en-fr-teaching&split=test&limit=500"
            ws.send(message.SerializeToString())
            _wait_for("the table's first cached rows", lambda: any(cache.glob("datasets/dataset-*.safetensors")), 120,
                      log)
            os.killpg(server.pid, signal.SIGINT)
            try:
                status = server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the server had not exited 60 s after SIGINT; its log:\n{log.read_text()[-3000:]}")
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    text = log.read_text()
    assert status == 0 and ABORT not in text, (status, text[-3000:])
    assert "did not stop" not in text, text[-3000:]
    (path,) = cache.glob("datasets/dataset-*.safetensors")
    assert not list(cache.glob("datasets/.*.tmp"))
    data = path.read_bytes()
    key = json.loads(json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])["__metadata__"]["key"])
    cached = read_cache(path, key)  # whole and consistent (rows and arrays), or DatasetCacheError
    assert key["split"] == "model:test" and key["sentences"] == 500
    assert CHUNK <= len(cached.rows) < 500  # stopped mid-way: the rows done (a chunk stops between its sentences)


def test_background_work_stops_when_asked_and_one_that_does_not_is_named():
    laps = []

    def polite(stop: threading.Event) -> None:
        while not stop.wait(0.01):
            laps.append(1)

    release = threading.Event()
    works = [start_background("polite", polite), start_background("deaf", lambda stop: release.wait(60))]
    assert all(w.running for w in works)
    _wait_until(lambda: laps, "the polite work's first lap")
    try:
        assert stop_background(timeout=2) == ["deaf"]
        assert not works[0].running and works[0].stop.is_set()
    finally:
        release.set()
    works[1].thread.join(10)
    assert stop_background(timeout=2) == []  # none left


# A process whose background work ignores its stop: the exit waits EXIT_WAIT (shortened), then leaves with status 1
# and a line that names the thread, rather than finalise with it running (an abort when it is inside torch).
DEAF_AT_EXIT = textwrap.dedent("""
    import threading
    from ui.shared.models import translation_gate

    translation_gate.EXIT_WAIT = 0.5
    translation_gate.start_background("deaf-work", lambda stop: threading.Event().wait(60))
""")


def test_background_work_that_does_not_stop_ends_the_process_with_status_1_and_its_name():
    try:
        done = subprocess.run([sys.executable, "-c", DEAF_AT_EXIT], cwd=REPO, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the process was still running 60 s later: its exit waited for the deaf work without bound")
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "background work deaf-work did not stop within 0.5 s" in done.stderr, done.stderr


def test_waiting_for_a_decode_slot_ends_when_stop_is_set():
    limiter, stop, raised = DecodeLimiter(1, timeout=60), threading.Event(), []

    def wait_for_the_slot() -> None:
        try:
            with limiter.slot(stop=stop):
                pass
        except Stopped as e:
            raised.append(str(e))

    with limiter.slot():
        waiter = threading.Thread(target=wait_for_the_slot)
        waiter.start()
        _wait_until(lambda: limiter.waiting == 1, "the second request to wait")
        stop.set()
        waiter.join(10)
        assert not waiter.is_alive(), "the waiter did not notice stop within 10 s"
    assert raised == ["stopped before it began, while it waited for a decode slot"]
    assert limiter.waiting == limiter.running == 0


def _wait_until(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.01)


def test_head_importance_stops_after_the_head_it_is_on(tmp_path):
    translator = Translator(make_checkpoint(tmp_path / "tiny"))
    pairs = [("the cat sleeps .", "le chat dort ."), ("the dog eats .", "le chien mange .")] * 8
    job = ImportanceJob()
    job.start(translator, pairs, pairs[:4])
    _wait_until(lambda: job.done >= 1 or not job.running, "the first head to be switched off")
    job.work.stop.set()
    job.thread.join(30)
    assert not job.running, "head importance did not stop within 30 s"
    assert job.result is None and job.error.startswith("Stopped: stopped after ") and job.done < job.total

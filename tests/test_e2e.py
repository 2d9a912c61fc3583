"""Real browser: `streamlit run app.py` driven by Playwright with Debian's chromium (see shared TESTING.md).

Skipped when chromium is missing, unless REQUIRE_E2E=1 (CI), where a missing browser is an error.
With UPDATE_SCREENSHOT=1 it saves docs/screenshot.png, the README's picture.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app_fixtures import PAIRS, make_checkpoint
from transformer.translate import find_checkpoint

SENTENCE = "And God said, Let there be light: and there was light."

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

if not CHROMIUM:
    if os.environ.get("REQUIRE_E2E") == "1":
        raise RuntimeError("REQUIRE_E2E=1 but chromium is not installed (apt-get install -y chromium)")
    pytest.skip("chromium not found: apt-get install -y chromium", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip: only needed with a browser)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 1500}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _healthy(proc: subprocess.Popen, url: str, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The app as a user starts it: with the shipped model (or a tiny one while none is shipped)."""
    env = {**os.environ, "EXPLORER_RUNS": str(tmp_path_factory.mktemp("runs")), "PYTHONUNBUFFERED": "1"}
    if find_checkpoint() is None:
        checkpoints = tmp_path_factory.mktemp("checkpoints")
        make_checkpoint(checkpoints / "tiny")
        env["EXPLORER_CHECKPOINTS"] = str(checkpoints)
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    for _ in range(3):  # a free port can be taken between probe and bind
        port = _free_port()
        cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port),
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
        with open(log, "w") as fh:
            proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        if _healthy(proc, url):
            try:
                yield url
            finally:
                _stop(proc)
            return
        _stop(proc)
    raise RuntimeError(f"streamlit did not start:\n{log.read_text()}")


def test_translate_a_sentence_and_see_its_attention(server, page, tmp_path):
    page.goto(server + "/Translate")
    expect(page.get_by_role("heading", name="Translate & Attention")).to_be_visible(timeout=30_000)
    box = page.get_by_label("English sentence (press Enter to translate)")
    box.fill(SENTENCE if find_checkpoint() else PAIRS[3][0])
    box.press("Enter")
    expect(page.get_by_role("heading", name="Translation", exact=True)).to_be_visible(timeout=30_000)
    heatmap = page.locator('[data-testid="stPlotlyChart"] .main-svg').first
    heatmap.wait_for(timeout=30_000)
    expect(page.get_by_text("cross-attention (decoder → encoder), layer 0, mean of heads")).to_be_visible(
        timeout=15_000)
    page.locator('[data-testid="stPlotlyChart"] .heatmaplayer image').first.wait_for(timeout=15_000)
    page.wait_for_timeout(1500)  # plotly's own layout pass; only for a clean screenshot, nothing is asserted on it
    assert page.locator('[data-testid="stException"]').count() == 0
    if find_checkpoint():
        expect(page.get_by_text("Dieu").first).to_be_visible(timeout=5_000)  # a real translation
    # UPDATE_SCREENSHOT=1 refreshes the README's picture; otherwise the screenshot stays in tmp
    target = REPO / "docs" / "screenshot.png" if os.environ.get("UPDATE_SCREENSHOT") == "1" else tmp_path / "shot.png"
    page.screenshot(path=str(target))
    assert target.stat().st_size > 10_000

"""What the browser tests share: Debian's chromium, the app started as a user starts it (`app_server`), the app's
parts by selector, and helpers for sentences, select boxes, clicks and the docs' screenshots. The fixtures that use
them are in tests/browser/conftest.py."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from tests.app_fixtures import PAIRS
from transformer.decoding.translate import find_checkpoint

SENTENCE = "And God said, Let there be light: and there was light."
ARABIC_MODEL = "en-ar-bible"
BIBLE = "model=en-fr-bible&"  # SENTENCE's tests (a verse): the app opens on the teaching model (models.catalog)
PLOT = '[data-testid="stVegaLiteChart"]'  # a chart (st.altair_chart)
# a chart's heatmap cells, drawn (Vega draws a chart of over 2,000 data rows on a canvas)
HEATMAP = ".mark-rect path, canvas.marks"
VEGA_SVG = '[data-testid="stVegaLiteChart"] svg.marks'  # a Vega-Lite chart drawn as SVG
TOOLTIP = "#vg-tooltip-element"  # Vega's tooltip, one per page
# a heatmap's cells (transformer.charts.heatmap: the layer after the missing values'; named view_N with a selection)
CELLS = ".mark-rect.layer_1_marks path, .mark-rect[class*='view_'] path"
EXCEPTION = '[data-testid="stException"]'
PROJECTOR = {"width": 1280, "height": 720}  # a classroom projector's window
TEACHING = "en-fr-teaching"
# Font sizes (px on screen) of the first chart's column and row labels, as Vega's SVG draws them (its axes are
# named X-axis and Y-axis for screen readers).
LABEL_SIZES_JS = """chart => ['X', 'Y'].map(axis =>
    [...chart.querySelectorAll('g.role-axis')].filter(g => (g.getAttribute('aria-label') || '').startsWith(axis))
      .flatMap(g => [...g.querySelectorAll('.role-axis-label text')]).map(t => { const m = t.getScreenCTM();
        return parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1); }))"""

needs_shipped_models = pytest.mark.skipif(find_checkpoint() is None, reason="needs the shipped models")

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


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


@contextlib.contextmanager
def app_server(env: dict[str, str], log: Path):
    """`streamlit run app.py` as a user starts it, with env, on a free port: its address while it runs; stopped
    (its whole process group) after. RuntimeError with its log when /_stcore/health never answers."""
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


def screenshot(page, name: str, tmp_path: Path, until=None) -> Path:
    """UPDATE_SCREENSHOT=1 saves docs/NAME.png for the README and docs/tour.md (256 colours keep it small), else
    into tmp. until: a locator whose bottom ends the picture."""
    clip = None
    if until is not None:
        box = until.bounding_box()
        clip = {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": box["y"] + box["height"] + 24}
    if os.environ.get("UPDATE_SCREENSHOT") != "1":
        target = tmp_path / f"{name}.png"
        page.screenshot(path=str(target), clip=clip)
        return target
    target = REPO / "docs" / f"{name}.png"
    page.screenshot(path=str(target), clip=clip)
    Image.open(target).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
    assert target.stat().st_size < 250_000, f"{target} is {target.stat().st_size} bytes"
    return target


def in_view(locator) -> dict:
    """The bounding box of locator after scrolling it into the window (a mouse click outside does nothing)."""
    locator.scroll_into_view_if_needed()
    locator.page.wait_for_timeout(300)
    return locator.bounding_box()


def select_box(page, label: str):
    """A select box by its label (a heading's anchor link is labelled too)."""
    return page.get_by_role("combobox", name=label, exact=True)


def sentence() -> str:
    """The sentence the tests type: a verse for the shipped models, a sentence of the tiny corpus without them."""
    return SENTENCE if find_checkpoint() else PAIRS[3][0]


def loopback_only(page) -> list[str]:
    """Collects every request that would leave this machine (a font server's icon, telemetry)."""
    outside: list[str] = []

    def check(request) -> None:
        host = request.url.split("/")[2] if "://" in request.url else ""
        if request.url.split(":")[0] in ("http", "https", "ws", "wss") and not host.startswith("127.0.0.1"):
            outside.append(request.url)

    page.on("request", check)
    return outside


def retry_until(action, check, tries: int = 3) -> None:
    """Do action until check passes (check raises AssertionError when it times out), at most `tries` times."""
    for attempt in range(tries):
        action()
        try:
            check()
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def class_shot(page, name: str, tmp_path: Path) -> None:
    """A picture of the page, kept in CLASS_SHOTS=DIR for a look (else in tmp_path)."""
    folder = Path(os.environ.get("CLASS_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def translate_url(url: str, text: str | None = None, **params: str) -> str:
    """The Translate page's link on the teaching model (the tiny one without the shipped models)."""
    model = {"model": TEACHING} if find_checkpoint() else {}
    query = {**model, **({"text": text} if text else {}), **params}
    return f"{url}/Translate?" + urllib.parse.urlencode(query)

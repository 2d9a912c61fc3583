"""Real browser: `streamlit run app.py` driven by Playwright with Debian's chromium (see shared TESTING.md).

Skipped when chromium is missing, unless REQUIRE_E2E=1 (CI), where a missing browser is an error.
With UPDATE_SCREENSHOT=1 it saves the docs' pictures: docs/screenshot.png (README) and docs/tour-*.png (docs/tour.md).
These tests cover what only a browser shows: clicks on charts (Vega-Lite selections), what a select box displays, the
address bar, and the requests the page makes.
"""

import contextlib
import os
import re
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

from tests.app_fixtures import PAIRS, make_checkpoint
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
    env = {**os.environ, "EXPLORER_RUNS": str(tmp_path_factory.mktemp("runs")), "PYTHONUNBUFFERED": "1",
           "EXPLORER_ANY_TSV_PATH": "1",  # the Train test makes a run fail quickly with a missing file
           "EXPLORER_CACHE": str(tmp_path_factory.mktemp("cache"))}  # the Dataset page's tables
    if find_checkpoint() is None:
        checkpoints = tmp_path_factory.mktemp("checkpoints")
        make_checkpoint(checkpoints / "tiny")
        make_checkpoint(checkpoints / ARABIC_MODEL, tgt="ar")
        env["EXPLORER_CHECKPOINTS"] = str(checkpoints)
    with app_server(env, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


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


def _screenshot(page, name: str, tmp_path: Path, until=None) -> Path:
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


def _in_view(locator) -> dict:
    """The bounding box of locator after scrolling it into the window (a mouse click outside does nothing)."""
    locator.scroll_into_view_if_needed()
    locator.page.wait_for_timeout(300)
    return locator.bounding_box()


def _box(page, label: str):
    """A select box by its label (a heading's anchor link is labelled too)."""
    return page.get_by_role("combobox", name=label, exact=True)


def _sentence() -> str:
    return SENTENCE if find_checkpoint() else PAIRS[3][0]


def _loopback_only(page) -> list[str]:
    """Collects every request that would leave this machine (a font server's icon, telemetry)."""
    outside: list[str] = []

    def check(request) -> None:
        host = request.url.split("/")[2] if "://" in request.url else ""
        if request.url.split(":")[0] in ("http", "https", "ws", "wss") and not host.startswith("127.0.0.1"):
            outside.append(request.url)

    page.on("request", check)
    return outside


def test_translate_a_sentence_and_see_its_attention(server, page, tmp_path):
    outside = _loopback_only(page)
    page.goto(server + "/Translate?" + (BIBLE if find_checkpoint() else ""))
    expect(page.get_by_role("heading", name="Translate & Attention")).to_be_visible(timeout=30_000)
    box = page.get_by_label("English sentence (press Enter to translate)")
    box.fill(_sentence())
    box.press("Enter")
    expect(page.get_by_role("heading", name="Translation", exact=True)).to_be_visible(timeout=30_000)
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=30_000)
    expect(page.get_by_text("cross-attention (decoder → encoder), layer 0, mean of heads")).to_be_visible(
        timeout=15_000)
    page.wait_for_timeout(1500)  # the page's layout settles; only for a clean screenshot, nothing is asserted on it
    assert page.locator('[data-testid="stException"]').count() == 0
    cells = chart.locator(CELLS)  # the weights' cells, row by row
    cell = _in_view(cells.nth(1))  # row 0, column 1: the tooltip names both tokens and the weight
    page.mouse.move(cell["x"] + cell["width"] / 2, cell["y"] + cell["height"] / 2)
    expect(page.locator(TOOLTIP)).to_contain_text(
        re.compile(r"target query\s*.+\s*source key\s*.+\s*weight\s*0\.\d{3}\s*query read"))
    with page.expect_download() as download:  # the chart toolbar's PNG (the sidebar's SVG: a button under it)
        chart.hover()
        page.get_by_role("button", name="Download as PNG").first.click()
    assert download.value.suggested_filename.endswith(".png")
    assert Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.mouse.move(0, 0)
    if find_checkpoint():
        expect(page.get_by_text("Dieu").first).to_be_visible(timeout=5_000)  # a real translation
    assert _screenshot(page, "screenshot", tmp_path).stat().st_size > 10_000
    assert outside == []  # the page icon is bundled: nothing is fetched from a font server
    assert page.locator('link[rel="shortcut icon"], link[rel="icon"]').first.get_attribute("href").startswith(
        ("/media/", "./media/", "media/", server))



def _until(action, check, tries: int = 3) -> None:
    """Do action until check passes (check raises AssertionError when it times out), at most `tries` times."""
    for attempt in range(tries):
        action()
        try:
            check()
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def test_a_click_on_the_model_view_opens_that_head(server, page):
    """The grid (always SVG: a small map per element) is the page's chart with a click selection."""
    page.goto(server + "/Translate?" + (BIBLE if find_checkpoint() else "") + "text=" + _sentence().replace(" ", "+"))
    page.locator(PLOT).first.locator(HEATMAP).first.wait_for(timeout=60_000)
    page.get_by_text("Model view: every layer and head").click()
    small_maps = ".mark-rect[class*='view_']"  # one group of cells per small map, row by row
    grid = page.locator(PLOT).filter(has=page.locator(small_maps)).first
    grid.locator(small_maps).first.wait_for(timeout=30_000)
    maps = grid.locator(small_maps)
    tops = [maps.nth(i).bounding_box()["y"] for i in range(maps.count())]
    n_heads = tops.count(tops[0])

    def click(layer: int, head: int) -> None:
        cells = maps.nth(layer * n_heads + head).locator("path")  # a cell of that small map, the middle one
        cells.nth(cells.count() // 2).click()

    # A click that lands while the chart is still being redrawn (a loaded machine) is lost: click again.
    _until(lambda: click(1, 2), lambda: expect(_box(page, "Head")).to_have_value("head 2", timeout=10_000))
    expect(_box(page, "Layer")).to_have_value("1")
    expect(page.get_by_text("cross-attention (decoder → encoder), layer 1, head 2")).to_be_visible()
    assert "layer=1" in page.url and "head=2" in page.url
    grid.locator(HEATMAP).first.wait_for(timeout=30_000)
    _until(lambda: click(0, 1), lambda: expect(_box(page, "Head")).to_have_value("head 1", timeout=10_000))
    expect(_box(page, "Layer")).to_have_value("0")
    assert page.locator(EXCEPTION).count() == 0


def test_a_link_opens_the_view_and_a_reload_keeps_it(server, page):
    query = (BIBLE if find_checkpoint() else "") + "att=enc_self&layer=1&head=3&search=beam&beam=3&text=" + \
        _sentence().replace(" ", "+")
    page.goto(server + "/Translate?" + query)
    title = page.get_by_text("encoder self-attention, layer 1, head 3")
    expect(title).to_be_visible(timeout=60_000)
    expect(_box(page, "Head")).to_have_value("head 3")
    url = page.url
    assert "model=" in url and "beam=3" in url
    page.reload()
    expect(page.get_by_text("encoder self-attention, layer 1, head 3")).to_be_visible(timeout=60_000)
    assert page.url == url


def test_select_boxes_show_the_new_options_text(server, page, tmp_path):
    page.goto(server + "/Learn?" + (BIBLE if find_checkpoint() else ""))
    query = _box(page, "Query token")
    expect(query).to_have_value("0: ▁In" if find_checkpoint() else "0: <unk>", timeout=60_000)
    box = page.get_by_label("Your sentence")
    box.fill("the king speaks to the people .")
    box.press("Enter")
    expect(query).to_have_value("0: ▁the", timeout=30_000)
    page.get_by_text("may attend").first.wait_for()
    assert page.locator(EXCEPTION).count() == 0
    encodings = page.locator(PLOT).first  # 60 x d_model cells (canvas: more than 2,000 of them)
    cells = _in_view(encodings.locator("canvas, svg").first)
    page.mouse.move(cells["x"] + cells["width"] * 0.5, cells["y"] + cells["height"] * 0.5)
    expect(page.locator(TOOLTIP)).to_contain_text(re.compile(r"position\s*\d+\s*dimension\s*\d+\s*value\s*-?\d\.\d{3}"))
    page.mouse.move(0, 0)
    page.get_by_role("heading", name="3. Scaled dot-product attention, step by step").scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    _screenshot(page, "tour-learn", tmp_path)


def test_train_page_gives_a_fresh_name_and_shows_the_runs_new_state(server, page, tmp_path):
    page.goto(server + "/Train")
    expect(page.get_by_role("heading", name="Train")).to_be_visible(timeout=60_000)
    page.get_by_text("Tokens per batch").wait_for(timeout=30_000)
    _screenshot(page, "tour-train", tmp_path, until=page.get_by_role("button", name="Start training"))
    page.get_by_text("TSV file", exact=True).click()
    path = page.get_by_label("…or a TSV path on this machine")
    path.fill(str(tmp_path / "missing.tsv"))
    path.press("Enter")
    name = page.get_by_label("Run name")
    name.fill("e2e-missing-corpus")
    name.press("Enter")
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Start training").click()
    expect(name).not_to_have_value("e2e-missing-corpus", timeout=30_000)
    expect(name).to_have_value(re.compile(r"run-\d{8}-\d{6}"))
    run = _box(page, "Run")
    expect(run).to_have_value(re.compile(r"e2e-missing-corpus \((failed|crashed)\)"), timeout=90_000)
    assert page.locator(EXCEPTION).count() == 0


def test_tour_of_the_other_pages(server, page, tmp_path):
    """Home, Decode step by step and the teacher's guide open without an error (and give docs/tour.md's pictures)."""
    page.goto(server + "/")
    expect(page.get_by_role("heading", name="Attention Explorer")).to_be_visible(timeout=60_000)
    page.get_by_text("d_model").first.wait_for(timeout=30_000)
    _screenshot(page, "tour-home", tmp_path, until=page.get_by_text("Learn how attention works"))
    page.goto(server + "/Step_by_step?search=beam&beam=3&text=" + _sentence().replace(" ", "+"))
    next_button = page.get_by_role("button", name="Next")
    for _ in range(4):
        next_button.click()
        page.wait_for_timeout(700)
    expect(page.get_by_text("Step 4.")).to_be_visible(timeout=30_000)
    page.get_by_role("heading", name="Beam tree").wait_for(timeout=30_000)
    bars = page.locator(PLOT).first  # the candidate bars: one per candidate, the chosen one outlined
    bars.locator(".mark-rect path, .mark-bar path, .role-mark path").first.wait_for(timeout=30_000)
    expect(bars.locator(".role-axis-label text", has_text="▶").first).to_be_visible()
    expect(page.locator(VEGA_SVG)).to_have_count(3)  # candidates, cross-attention and self-attention rows
    page.wait_for_timeout(1500)  # the views' layout, for the picture only
    _screenshot(page, "tour-step", tmp_path)
    page.goto(server + "/Teaching_guide")
    expect(page.get_by_role("heading", name="Teaching with the Attention Explorer")).to_be_visible(timeout=60_000)
    assert page.locator(EXCEPTION).count() == 0


def test_text_from_a_link_or_the_box_shows_as_typed_never_as_a_link_or_html(server, page):
    """Markdown and HTML in a link's parameters and in the sentence box stay text in the real browser."""
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    payload = "[click](https://evil.example/x) <img src=x onerror=alert(1)> www.evil.example"
    page.goto(server + "/Translate?att=" + urllib.parse.quote(payload) + "&text=" + urllib.parse.quote(payload))
    warning = page.get_by_text("Unknown attention")
    warning.wait_for(timeout=60_000)
    page.locator('[data-testid="stMarkdownContainer"] h3').first.wait_for(timeout=60_000)
    shown = warning.inner_text().replace("\u2060", "")
    assert payload[:39] + "…" in shown, shown  # quoted as typed, shortened to 40 characters (issue 41 item 12)
    assert page.locator('a[href*="evil.example"]').count() == 0 and page.locator('img[src="x"]').count() == 0
    assert not dialogs and page.locator(EXCEPTION).count() == 0


# (first character's left edge, last character's left edge, CSS direction) of an element's first text node.
_TEXT_ORDER_JS = """el => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const text = walker.nextNode();
    const range = document.createRange();
    const edge = i => {
        range.setStart(text, i);
        range.setEnd(text, i + 1);
        return range.getBoundingClientRect().left;
    };
    return [edge(0), edge(text.length - 1), getComputedStyle(el).direction];
}"""
# For each y-axis tick label of the first chart: [its text, x of its first character, x of its last one].
_TICK_ORDER_JS = """chart => [...chart.querySelectorAll('.role-axis-label text')].map(t => {
    const n = t.getNumberOfChars();
    return [t.textContent, t.getExtentOfChar(0).x, t.getExtentOfChar(n - 1).x];
})"""


def test_arabic_reads_right_to_left_in_the_translation_and_the_heatmap(server, page, tmp_path):
    text = "In the beginning God created the heaven and the earth." if find_checkpoint() else PAIRS[0][0]
    page.goto(f"{server}/Translate?model={ARABIC_MODEL}&text=" + urllib.parse.quote(text))
    heading = page.locator("h3.rtl-text")
    expect(heading).to_be_visible(timeout=60_000)
    first, last, direction = heading.evaluate(_TEXT_ORDER_JS)
    assert direction == "rtl" and first > last  # the first letter stands right of the last one
    expect(page.get_by_text("English → Arabic").first).to_be_visible()
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=30_000)
    ticks = chart.evaluate(_TICK_ORDER_JS)  # cross-attention rows: the Arabic output pieces
    arabic = [(label, a, b) for label, a, b in ticks if any("\u0600" <= ch <= "\u06ff" for ch in label)]
    assert arabic and all(label.startswith("\u200f") for label, _, _ in arabic)
    assert all(a > b for label, a, b in arabic if len(label.strip("\u200f\u200d\u200b")) > 1)
    assert page.locator(EXCEPTION).count() == 0
    _screenshot(page, "tour-arabic", tmp_path)

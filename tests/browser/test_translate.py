"""The Translate page in a real browser (`streamlit run app.py`, Playwright, Debian's chromium; the fixtures are in
tests/browser/conftest.py): what only a browser shows, clicks on charts (Vega-Lite selections), what a select box
displays, the address bar, the requests the page makes, right-to-left text, a long sentence's probability table at a
projector's width, the lens switch. With UPDATE_SCREENSHOT=1 it saves docs/screenshot.png (README) and
docs/tour-arabic.png (docs/tour.md).
"""

import re
import urllib.parse
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.app_fixtures import PAIRS
from tests.browser.browsing import (
    ARABIC_MODEL,
    BIBLE,
    CELLS,
    EXCEPTION,
    HEATMAP,
    LABEL_SIZES_JS,
    PLOT,
    PROJECTOR,
    TOOLTIP,
    class_shot,
    in_view,
    loopback_only,
    retry_until,
    screenshot,
    select_box,
    sentence,
    translate_url,
)
from transformer.decoding.translate import find_checkpoint

pytestmark = pytest.mark.e2e


def test_translate_a_sentence_and_see_its_attention(server, page, tmp_path):
    outside = loopback_only(page)
    page.goto(server + "/Translate?" + (BIBLE if find_checkpoint() else ""))
    expect(page.get_by_role("heading", name="Translate & Attention")).to_be_visible(timeout=30_000)
    box = page.get_by_label("English sentence (press Enter to translate)")
    box.fill(sentence())
    box.press("Enter")
    expect(page.get_by_role("heading", name="Translation", exact=True)).to_be_visible(timeout=30_000)
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=30_000)
    expect(page.get_by_text("cross-attention (decoder → encoder), layer 0, mean of heads")).to_be_visible(
        timeout=15_000)
    page.wait_for_timeout(1500)  # the page's layout settles; only for a clean screenshot, nothing is asserted on it
    assert page.locator('[data-testid="stException"]').count() == 0
    cells = chart.locator(CELLS)  # the weights' cells, row by row
    cell = in_view(cells.nth(1))  # row 0, column 1: the tooltip names both tokens and the weight
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
    assert screenshot(page, "screenshot", tmp_path).stat().st_size > 10_000
    assert outside == []  # the page icon is bundled: nothing is fetched from a font server
    assert page.locator('link[rel="shortcut icon"], link[rel="icon"]').first.get_attribute("href").startswith(
        ("/media/", "./media/", "media/", server))


def test_a_click_on_the_model_view_opens_that_head(server, page):
    """The grid (always SVG: a small map per element) is the page's chart with a click selection."""
    page.goto(server + "/Translate?" + (BIBLE if find_checkpoint() else "") + "text=" + sentence().replace(" ", "+"))
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
    retry_until(lambda: click(1, 2), lambda: expect(select_box(page, "Head")).to_have_value("head 2", timeout=10_000))
    expect(select_box(page, "Layer")).to_have_value("1")
    expect(page.get_by_text("cross-attention (decoder → encoder), layer 1, head 2")).to_be_visible()
    assert "layer=1" in page.url and "head=2" in page.url
    grid.locator(HEATMAP).first.wait_for(timeout=30_000)
    retry_until(lambda: click(0, 1), lambda: expect(select_box(page, "Head")).to_have_value("head 1", timeout=10_000))
    expect(select_box(page, "Layer")).to_have_value("0")
    assert page.locator(EXCEPTION).count() == 0


def test_a_link_opens_the_view_and_a_reload_keeps_it(server, page):
    query = (BIBLE if find_checkpoint() else "") + "att=enc_self&layer=1&head=3&search=beam&beam=3&text=" + \
        sentence().replace(" ", "+")
    page.goto(server + "/Translate?" + query)
    title = page.get_by_text("encoder self-attention, layer 1, head 3")
    expect(title).to_be_visible(timeout=60_000)
    expect(select_box(page, "Head")).to_have_value("head 3")
    url = page.url
    assert "model=" in url and "beam=3" in url
    page.reload()
    expect(page.get_by_text("encoder self-attention, layer 1, head 3")).to_be_visible(timeout=60_000)
    assert page.url == url


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
    assert payload[:39] + "…" in shown, shown  # quoted as typed, shortened to 40 characters
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
    screenshot(page, "tour-arabic", tmp_path)


LONG = ("The young man buys a green bicycle and the old woman sells some fresh cakes at the closed supermarket on "
        "Thursdays while my sister does not eat bread and the clever daughter will take the beautiful mirrors to the "
        "market.")


def test_a_long_sentences_probability_table_ends_on_screen(server, projector, tmp_path):
    page = projector
    text = LONG if find_checkpoint() else " ".join(s for s, _ in PAIRS[:12])
    page.goto(translate_url(server, text))
    table = page.locator("table.prob-table")
    table.wait_for(timeout=120_000)
    end = table.locator("th").last
    assert end.inner_text() == "</s>"
    box = end.bounding_box()
    assert box["x"] + box["width"] <= PROJECTOR["width"]  # no horizontal scroll hides it
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=120_000)
    columns, _ = chart.evaluate(LABEL_SIZES_JS)
    assert min(columns) >= 10
    table.scroll_into_view_if_needed()
    class_shot(page, "long-probabilities", tmp_path)
    chart.scroll_into_view_if_needed()
    class_shot(page, "long-heatmap", tmp_path)


def test_a_lens_link_opens_the_lens_and_the_switch_updates_the_link(server, page):
    page.goto(server + "/Translate?lens=alti&text=" + sentence().replace(" ", "+"))
    page.locator(PLOT).first.locator(HEATMAP).first.wait_for(timeout=90_000)
    expect(page.get_by_text("ALTI+ (Ferrando et al., 2022)")).to_be_visible(timeout=30_000)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Lens").click()
    page.get_by_role("option", name="value zeroing (Mohebbi)").click()
    expect(page).to_have_url(re.compile(r"lens=value_zeroing"), timeout=30_000)
    expect(page.get_by_text("Value zeroing (Mohebbi et al., 2023)")).to_be_visible(timeout=30_000)
    assert page.locator(EXCEPTION).count() == 0

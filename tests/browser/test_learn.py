"""The Learn page in a real browser: a select box shows its new options' text, the Eq. 1 table shows its <pad> rows
without scrolling inside it, and "one token through the whole model" opened from a link (token and stage) at a
projector's 1280x720 in class mode, for the teaching model and the Arabic one: the link's stage drawn open and marked,
no text under 18 px, no sideways scroll on the page or in the view, the temperature slider redrawing the
probabilities. CLASS_SHOTS=DIR keeps the pictures for a look; UPDATE_SCREENSHOT=1 saves docs/tour-learn.png."""

import os
import re
import urllib.parse
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.browsing import (
    BIBLE,
    EXCEPTION,
    PLOT,
    PROJECTOR,
    TOOLTIP,
    in_view,
    needs_shipped_models,
    screenshot,
    select_box,
)
from transformer.decoding.translate import find_checkpoint
from ui.shared.state import class_mode

pytestmark = pytest.mark.e2e
LINKS = {
    "teaching": {"model": "en-fr-teaching", "text": "The young man buys a green bicycle.", "token": "10",
                 "stage": "dec.1.cross_attn"},
    "arabic": {"model": "en-ar-bible", "text": "In the beginning God created the heaven and the earth.",
               "token": "3", "stage": "dec.2.feed_forward"},
}
# The smallest font size of any element that holds text of its own, in the view's frame.
SMALLEST_TEXT_JS = """() => Math.min(...[...document.querySelectorAll('body *')].filter(e =>
    [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) && e.getClientRects().length)
    .map(e => parseFloat(getComputedStyle(e).fontSize)))"""
SIDEWAYS_JS = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"


@needs_shipped_models
@pytest.mark.parametrize("name", list(LINKS))
def test_the_flow_opens_from_a_link_readable_in_class_mode(server, projector, name, tmp_path):
    page, params = projector, LINKS[name]
    page.goto(f"{server}/Learn?" + urllib.parse.urlencode({**params, "class": "1"}))
    frame_element = page.locator("""iframe[srcdoc*='class="tf"']""")
    frame_element.wait_for(timeout=240_000)  # the teaching corpus may be built first
    frame_element.scroll_into_view_if_needed()
    frame = frame_element.content_frame
    stage = frame.locator(f'.stage.on[data-key="{params["stage"]}"]')
    stage.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    folder = Path(os.environ.get("CLASS_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"flow-{name}-stage.png"))
    layer = frame.locator("details[open]").first  # the stage's layer, open
    assert layer.evaluate("d => d.contains(document.querySelector('.stage.on'))")
    scroll, client = page.evaluate(SIDEWAYS_JS)
    assert scroll <= client, f"the page scrolls sideways: {scroll} > {client}"
    scroll, client = frame.locator("html").evaluate("h => [h.scrollWidth, h.clientWidth]")
    assert scroll <= client, f"the view scrolls sideways: {scroll} > {client}"
    box = layer.bounding_box()
    assert box["width"] <= client
    assert box["height"] <= PROJECTOR["height"], f"the layer is {box['height']} px tall"  # one screen, read whole
    smallest = frame.locator("html").evaluate(f"h => ({SMALLEST_TEXT_JS})()")
    assert smallest >= class_mode.LABEL_PX, f"a label of {smallest} px"
    assert page.locator(EXCEPTION).count() == 0
    frame.locator("summary").last.click()  # the output panel: logits, softmax and the temperature
    slider = frame.locator("input.temp")
    slider.scroll_into_view_if_needed()
    before = frame.locator("tr.cand .p").first.inner_text()
    slider.evaluate("s => {s.value = s.max; s.dispatchEvent(new Event('input'))}")  # temperature 3.0
    said = frame.locator(".say").inner_text()
    assert "Sampling at temperature 3.00" in said and said.startswith("Greedy search takes «")
    after = frame.locator("tr.cand .p").first.inner_text()
    assert float(after) < float(before), (before, after)  # a hotter softmax flattens the top candidate
    page.wait_for_timeout(300)
    page.screenshot(path=str(folder / f"flow-{name}-softmax.png"))
    scroll, client = frame.locator("html").evaluate("h => [h.scrollWidth, h.clientWidth]")
    assert scroll <= client


def test_select_boxes_show_the_new_options_text(server, page, tmp_path):
    page.goto(server + "/Learn?" + (BIBLE if find_checkpoint() else ""))
    query = select_box(page, "Query token")
    expect(query).to_have_value("0: ▁In" if find_checkpoint() else "0: <unk>", timeout=60_000)
    box = page.get_by_label("Your sentence")
    box.fill("the king speaks to the people .")
    box.press("Enter")
    expect(query).to_have_value("0: ▁the", timeout=30_000)
    page.get_by_text("may attend").first.wait_for()
    assert page.locator(EXCEPTION).count() == 0
    encodings = page.locator(PLOT).first  # 60 x d_model cells (canvas: more than 2,000 of them)
    cells = in_view(encodings.locator("canvas, svg").first)
    page.mouse.move(cells["x"] + cells["width"] * 0.5, cells["y"] + cells["height"] * 0.5)
    expect(page.locator(TOOLTIP)).to_contain_text(re.compile(r"position\s*\d+\s*dimension\s*\d+\s*value\s*-?\d\.\d{3}"))
    page.mouse.move(0, 0)
    page.get_by_role("heading", name="3. Scaled dot-product attention, step by step").scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    screenshot(page, "tour-learn", tmp_path)


@needs_shipped_models
def test_the_eq1_table_shows_its_pad_rows_without_scrolling_inside_it(server, page, tmp_path):
    page.goto(server + "/Learn?model=en-fr-teaching")
    tables = page.get_by_text("The same numbers as tables")  # the Eq. 1 picture comes first, the tables one click away
    tables.wait_for(timeout=240_000)  # the teaching corpus is built first (30 s on a loaded 2-core machine)
    tables.click()
    table = page.locator('[data-testid="stDataFrame"]').filter(has_text="-inf")
    table.wait_for(timeout=60_000)
    table.scroll_into_view_if_needed()
    inner = table.locator(".dvn-scroller").evaluate("s => [s.scrollHeight, s.clientHeight]")
    assert inner[0] <= inner[1] + 1, f"the table scrolls inside: {inner}"
    assert table.get_by_text("-inf").count() == 3  # the three <pad> keys of the default padding, all drawn
    rows = table.locator('[data-testid^="glide-cell-1-"]').count()  # the grid's cells of the key column
    box = table.bounding_box()
    assert rows >= 4 and box["height"] >= 30 * (rows + 1)  # tall enough for the header and every row
    expect(page.get_by_text("its score becomes -inf before the softmax")).to_be_visible()
    assert page.locator(EXCEPTION).count() == 0
    page.screenshot(path=str(tmp_path / "learn-eq1.png"))

"""Real browser at a projector's 1280x720, class mode: the Learn page's "one token through the whole model" opened
from a link (token and stage) for the teaching model and for the Arabic model: the link's stage is drawn open and
marked, no text under 18 px, no sideways scroll on the page or in the view, and the temperature slider redraws the
probabilities. Shares the server of tests/test_e2e.py. CLASS_SHOTS=DIR keeps the pictures for a look."""

import os
import urllib.parse
from pathlib import Path

import pytest

from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import find_checkpoint
from ui.shared.state import class_mode

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(find_checkpoint() is None, reason="needs the shipped models")]
PROJECTOR = {"width": 1280, "height": 720}
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


@pytest.fixture
def projector(browser):
    context = browser.new_context(viewport=PROJECTOR)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("name", list(LINKS))
def test_the_flow_opens_from_a_link_readable_in_class_mode(server, projector, name, tmp_path):  # noqa: F811
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

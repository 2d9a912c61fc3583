"""Real browser at 1280x720 on a typed foil (issue 38 item 4): typed into the Attribution view, the word's contrast
is drawn and written into the address bar; opened from a link on the Attribution and Patching views in both modes
and both directions of writing, every chart says "log p(token) − log p(foil)" with the pieces, and its labels are
readable (18 px in class mode), apart and inside the chart (tests/label_boxes.py)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlparse

import pytest

from tests.label_boxes import clipped, measure, overlapping
from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    PLOT,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import find_checkpoint
from ui.shared.state import class_mode

pytestmark = pytest.mark.e2e
if find_checkpoint() is None:
    pytest.skip("the views are measured on the shipped teaching model", allow_module_level=True)

TEACHING = "model=en-fr-teaching&text=The+man+is+here."  # L'homme: why ▁L' rather than ▁La?
ARABIC = "model=en-ar-bible&text=And+he+said+to+the+woman.&foil_word=" + quote("الارض")
LINKS = {"attribution": f"{TEACHING}&foil_word=La", "patching": f"{TEACHING}&foil_word=La",
         "attribution-ar": f"{ARABIC}&pos=1", "patching-ar": ARABIC}


def _opened(browser, link: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(link)
    page.locator(PLOT).first.wait_for(timeout=180_000)
    page.wait_for_timeout(3000)  # the charts' layout pass
    assert page.locator(EXCEPTION).count() == 0
    return context, page


@pytest.mark.parametrize("mode", ["class", "normal"])
@pytest.mark.parametrize("name", list(LINKS))
def test_a_linked_typed_foil_is_said_in_every_chart_with_readable_labels(server, browser, name, mode):  # noqa: F811
    view = name.removesuffix("-ar")
    context, page = _opened(browser, f"{server}/Explain_heads?view={view}&{LINKS[name]}"
                            + ("&class=1" if mode == "class" else ""))
    try:
        titles = page.locator(f"{PLOT} :is(.role-title-text, .role-title-subtitle) text").evaluate_all(
            "els => els.map(e => e.textContent)")  # SVG text: no innerText
        contrasts = [t for t in titles if re.search(r"log p\(.+\) ?− log p\(.+\)", t)]  # lines joined
        assert len(contrasts) == (1 if view == "attribution" else 4), titles  # the bars; the four patching maps
        for group in measure(page):
            assert overlapping(group.labels) == [] and clipped(group) == [], (name, mode)
            if mode == "class":
                assert [label.text for label in group.labels if label.font < class_mode.LABEL_PX - 0.5] == []
    finally:
        context.close()


def test_a_word_typed_as_the_foil_is_drawn_and_kept_in_the_address_bar(server, browser):  # noqa: F811
    context, page = _opened(browser, f"{server}/Explain_heads?view=attribution&{TEACHING}")
    try:
        box = page.get_by_role("textbox", name="…or type a word")
        box.fill("femmes")
        box.press("Enter")
        page.wait_for_function("() => location.search.includes('foil_word=femmes')", timeout=60_000)
        page.locator(f"{PLOT} .role-title-text text", has_text="− log p(▁femmes)").wait_for(timeout=60_000)
        assert parse_qs(urlparse(page.url).query)["foil_word"] == ["femmes"]
        assert page.get_by_text("Explained:").count() == 1 and page.locator(EXCEPTION).count() == 0
    finally:
        context.close()

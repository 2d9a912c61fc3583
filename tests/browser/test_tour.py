"""Real browser at a projector's 1280x720: class mode's label sizes in the heatmap's SVG, the guide's links, and a
long sentence's probability table (issue 23, items 6, 12 and 18). Shares the server of tests/test_e2e.py (skipped
there, and so here, without chromium). CLASS_SHOTS=DIR keeps the pictures for a look."""

import os
import re
import urllib.parse
from pathlib import Path

import pytest
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.app_fixtures import PAIRS
from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    HEATMAP,
    PLOT,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import find_checkpoint
from ui.shared.state import class_mode

pytestmark = pytest.mark.e2e
PROJECTOR = {"width": 1280, "height": 720}
TEACHING = "en-fr-teaching"
LONG = ("The young man buys a green bicycle and the old woman sells some fresh cakes at the closed supermarket on "
        "Thursdays while my sister does not eat bread and the clever daughter will take the beautiful mirrors to the "
        "market.")
# Font sizes (px on screen) of the first chart's column and row labels, as Vega's SVG draws them (its axes are
# named X-axis and Y-axis for screen readers).
_LABEL_SIZES_JS = """chart => ['X', 'Y'].map(axis =>
    [...chart.querySelectorAll('g.role-axis')].filter(g => (g.getAttribute('aria-label') || '').startsWith(axis))
      .flatMap(g => [...g.querySelectorAll('.role-axis-label text')]).map(t => { const m = t.getScreenCTM();
        return parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1); }))"""


@pytest.fixture
def projector(browser):
    context = browser.new_context(viewport=PROJECTOR)
    yield context.new_page()
    context.close()


def _shot(page, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("CLASS_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def _translate_url(url: str, text: str | None = None, **params: str) -> str:
    model = {"model": TEACHING} if find_checkpoint() else {}
    query = {**model, **({"text": text} if text else {}), **params}
    return f"{url}/Translate?" + urllib.parse.urlencode(query)


def _sentence() -> str:
    return "The young man buys a green bicycle." if find_checkpoint() else PAIRS[3][0]


def test_class_mode_at_1280x720_draws_labels_readable_from_the_back(server, projector, tmp_path):  # noqa: F811
    page = projector
    page.goto(_translate_url(server, _sentence(), **{"class": "1"}))
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=120_000)
    page.wait_for_timeout(1000)  # the page's layout settles
    columns, rows = chart.evaluate(_LABEL_SIZES_JS)
    assert columns and rows
    assert min(columns) >= class_mode.LABEL_PX and min(rows) >= class_mode.LABEL_PX, (columns, rows)
    root_px = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert root_px == class_mode.ROOT_PX
    expect(page.get_by_role("switch", name="Class mode (projector)")).to_be_checked()
    assert page.locator(EXCEPTION).count() == 0
    _shot(page, "class-translate-top", tmp_path)
    chart.scroll_into_view_if_needed()
    _shot(page, "class-translate-heatmap", tmp_path)
    page.locator('[data-testid="stSidebar"] a[href$="Learn"]').first.click()  # another page keeps it
    expect(page.get_by_role("heading", name="Learn").first).to_be_visible(timeout=60_000)
    page.wait_for_url(re.compile(r"class=1"), timeout=30_000)
    expect(page.get_by_role("switch", name="Class mode (projector)")).to_be_checked()


def test_without_class_mode_the_labels_stay_at_their_usual_size(server, projector):  # noqa: F811
    projector.goto(_translate_url(server, _sentence()))
    chart = projector.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=120_000)
    columns, rows = chart.evaluate(_LABEL_SIZES_JS)
    assert max(columns) <= 12 and max(rows) <= 12  # the switch is what makes them larger


def test_the_guides_model_card_and_corpus_links_open_in_the_app(server, projector, tmp_path):  # noqa: F811
    page = projector
    for name, heading in (("model card", "en-fr-teaching"), ("the corpus", "teaching corpus")):
        page.goto(server + "/Teaching_guide")
        expect(page.get_by_role("heading", name="Teaching with the Attention Explorer")).to_be_visible(
            timeout=60_000)
        link = page.locator("a", has_text=re.compile(f"^{name}$")).first
        target = link.get_attribute("target")
        if target == "_blank":  # Streamlit opens Markdown links in a new tab: that tab must show the document
            with page.context.expect_page() as opened:
                link.click()
            shown = opened.value
        else:
            link.click()
            shown = page
        expect(shown.get_by_role("heading", name=re.compile(heading, re.IGNORECASE)).first).to_be_visible(
            timeout=60_000)
        assert shown.get_by_text("Page not found").count() == 0 and shown.locator(EXCEPTION).count() == 0
        _shot(shown, f"guide-{name.replace(' ', '-')}", tmp_path)
        if shown is not page:
            shown.close()


def test_a_long_sentences_probability_table_ends_on_screen(server, projector, tmp_path):  # noqa: F811
    page = projector
    text = LONG if find_checkpoint() else " ".join(s for s, _ in PAIRS[:12])
    page.goto(_translate_url(server, text))
    table = page.locator("table.prob-table")
    table.wait_for(timeout=120_000)
    end = table.locator("th").last
    assert end.inner_text() == "</s>"
    box = end.bounding_box()
    assert box["x"] + box["width"] <= PROJECTOR["width"]  # no horizontal scroll hides it
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=120_000)
    columns, _ = chart.evaluate(_LABEL_SIZES_JS)
    assert min(columns) >= 10
    table.scroll_into_view_if_needed()
    _shot(page, "long-probabilities", tmp_path)
    chart.scroll_into_view_if_needed()
    _shot(page, "long-heatmap", tmp_path)

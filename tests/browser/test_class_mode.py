"""Class mode in a real browser at a projector's 1280x720, on every SVG view and chart of the pages a class uses, in
both modes: in class mode no label under 18 px (the heatmap's labels too, and the page's root font); in both modes no
two labels of a chart or view overlapping and no label of a chart cut at its edges; the head view fits its frame and
follows the page's layer; without the switch the labels keep their usual size. Labels are measured in the page as
Chromium lays them out (tests/label_boxes.py). CLASS_SHOTS=DIR keeps the pictures."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.app_fixtures import PAIRS
from tests.browser.browsing import EXCEPTION, HEATMAP, LABEL_SIZES_JS, PLOT, class_shot, translate_url
from tests.label_boxes import clipped, measure, overlapping
from transformer.decoding.translate import find_checkpoint
from ui.shared.state import class_mode

pytestmark = pytest.mark.e2e
# the views are measured on the shipped teaching model
needs_teaching_model = pytest.mark.skipif(find_checkpoint() is None, reason="needs the shipped teaching model")

# page -> (link, what to click before measuring, what must be on the page then): every view of the pages a class uses.
RUN, EVERY = 'button:has-text("Run to end")', 'button:has-text("Every")'  # the first: every encoder self-attention head
PAGES = {
    "translate": ("Translate?model=en-fr-teaching", None, PLOT),  # heatmap, AER grids
    "learn": ("Learn?model=en-fr-teaching", None, "iframe"),  # masks, Eq. 1 picture
    "step": ("Step_by_step?model=en-fr-teaching&search=beam", RUN, "iframe"),  # bars, per-head maps, tree
    "stats": ("Explain_heads?model=en-fr-teaching&view=stats", None, PLOT),
    "patching": ("Explain_heads?model=en-fr-teaching&view=patching&text=The+chaplains+offered+your+wide+saxophones"
                 "+to+the+lucky+accuser.&other=The+chaplains+offered+your+wide+saxophones+to+the+lucky+judge.", None,
                 PLOT),  # the pair in the link: the model's first sentence is another
    "sampling": ("Step_by_step?model=en-fr-teaching&search=sample", RUN, PLOT),
    "compare": ("Explain_heads?model=en-fr-bible&view=compare&partner=en-fr-bible-debian", None, PLOT),  # one pair
    "importance": ("Explain_heads?model=en-fr-teaching&view=importance",
                   'button:has-text("Compute head importance")', PLOT),  # three maps in a row, a third each
    "ablate": ("Explain_heads?model=en-fr-teaching&view=ablate", EVERY, PLOT),  # two maps side by side
    "whatif": ("Explain_heads?model=en-fr-teaching&view=whatif", 'label:has-text("Remove the positional")', PLOT),
    "lens": ("Explain_heads?model=en-fr-teaching&view=lens", None, PLOT),  # logit lens table, DecoderLens lines
    "step-norm": ("Step_by_step?model=en-fr-teaching&lens=norm", 'button:has-text("Next")', "iframe"),  # layer rows
    "learn-ar": ("Learn?model=en-ar-bible", None, "iframe"),
    "step-ar": ("Step_by_step?model=en-ar-bible&search=beam&lens=norm", RUN, "iframe"),
    "ablate-ar": ("Explain_heads?model=en-ar-bible&view=ablate", EVERY, PLOT),
    "lens-ar": ("Explain_heads?model=en-ar-bible&view=lens", None, PLOT),
}


# the width of every chart's plot area (its marks' cells or bars): a chart whose labels and colour bar take its column
GRIDS_JS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map(chart => Math.max(0,
  ...[...chart.querySelectorAll('.role-mark.mark-rect')].filter(g => g.childElementCount)
    .map(e => Math.round(e.getBoundingClientRect().width)))).filter(w => w > 0)"""  # each chart's widest cells
MIN_GRID_PX = 90  # a grid narrower than this is a sliver beside its labels (the head importance maps were 29 px)
EQ1_JS = """() => { const s = document.querySelector('svg.eq'); if (!s) return null;
  return {scroll: s.parentElement.scrollWidth, room: s.parentElement.clientWidth}; }"""


def _views(page) -> int:
    """How many SVG views (head view, Eq. 1, beam tree) the page and its frames hold."""
    return sum(frame.evaluate("document.querySelectorAll('div.tv').length + [...document.querySelectorAll('*')]"
                              ".filter(e => e.shadowRoot).reduce((n, e) => n + e.shadowRoot.querySelectorAll("
                              "'div.tv').length, 0)") for frame in page.frames)


@needs_teaching_model
@pytest.mark.parametrize("mode", ["class", "normal"])
@pytest.mark.parametrize("name", list(PAGES))
def test_every_view_has_readable_labels_that_never_overlap(server, browser, name, mode, tmp_path):
    link, click, ready = PAGES[name]
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        page.goto(f"{server}/{link}" + ("&class=1" if mode == "class" else ""))
        if click:
            button = page.locator(click).first
            if name == "importance":  # computed once per server: the second mode finds the maps drawn
                page.locator(click).or_(page.locator(ready)).first.wait_for(timeout=180_000)
            if name != "importance" or button.is_visible():
                button.wait_for(timeout=180_000)
                button.click()
                page.wait_for_timeout(3000)
        page.locator(ready).first.wait_for(timeout=180_000)
        page.wait_for_timeout(3000)  # the charts' layout pass, the views' scripts
        assert page.locator(EXCEPTION).count() == 0
        groups = measure(page)
        assert groups and all(group.labels for group in groups)
        if name in ("learn", "step", "step-norm", "learn-ar", "step-ar"):
            assert _views(page) >= 1
        if name.startswith("learn"):  # Eq. 1 whole in its frame, no sideways scroll (class mode)
            eq = [f.evaluate(EQ1_JS) for f in page.frames[1:]]
            assert [d for d in eq if d is not None and d["scroll"] > d["room"] + 1] == [] and any(eq), eq
        if name == "translate":  # the search methods on one line at 1280 px
            radio = page.locator('[data-testid="stRadio"]', has_text="sample").first
            tops = radio.locator("label").evaluate_all("ls => ls.slice(1).map(l => l.getBoundingClientRect().top)")
            assert len(tops) == 3 and max(tops) - min(tops) < 2, tops
        folder = Path(os.environ.get("CLASS_SHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"views-{name}-{mode}.png"))
        grids = page.evaluate(GRIDS_JS)
        assert grids and [w for w in grids if w < MIN_GRID_PX] == [], (name, mode, grids)  # found, none a sliver
        for group in groups:
            assert overlapping(group.labels) == [], (name, mode)
            assert clipped(group) == [], (name, mode)
            if mode == "class":
                small = [(label.text, round(label.font, 1)) for label in group.labels
                         if label.font < class_mode.LABEL_PX - 0.5]
                assert small == [], (name, small[:5])
    finally:
        context.close()


HEAD_VIEW_JS = """() => { const r = document.querySelector('div.tv.hv'); if (!r) return null;
  return {layer: r.querySelector('.layer').textContent, picker: !!r.querySelector('select'),
          frame: innerHeight, content: document.body.getBoundingClientRect().height,
          overflow: document.documentElement.scrollHeight - innerHeight}; }"""
# the sidebar's model name (a select box's <input>: it cuts its text silently) and the explorer's toggle label
FITS_JS = """() => { const i = document.querySelector('[data-testid=stSidebar] [data-testid=stSelectbox] input');
  const s = getComputedStyle(i), ctx = document.createElement('canvas').getContext('2d'); ctx.font = s.font;
  const room = i.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  const box = [...document.querySelectorAll('[data-testid=stCheckbox]')]
    .find(e => e.textContent.includes('Hide special'));
  const p = box.querySelector('p'), range = document.createRange(); range.selectNodeContents(p);
  const column = box.closest('[data-testid=stColumn]') || box.closest('[data-testid=stVerticalBlock]');
  return {model: i.value, need: ctx.measureText(i.value).width, room,
          toggle_cut: p.scrollWidth > p.clientWidth + 1 || range.getBoundingClientRect().right >
            column.getBoundingClientRect().right + 1 || range.getClientRects().length > 1}; }"""


def _head_view(page) -> dict | None:
    found = [frame.evaluate(HEAD_VIEW_JS) for frame in page.frames[1:]]
    return next((f for f in found if f), None)


@needs_teaching_model
@pytest.mark.parametrize("mode", ["class", "normal"])
def test_the_head_view_fits_its_frame_and_follows_the_pages_layer_and_the_sidebar_fits(
        server, browser, mode, tmp_path):
    """The head view's frame is its height (not 100 px more) and shows the layer of the
    explorer's Layer picker, from the link and after a pick; the model's name and the toggle's label are whole."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        link = f"{server}/Translate?model=en-fr-teaching&att=cross&layer=1"
        page.goto(link + ("&class=1" if mode == "class" else ""))
        page.locator("iframe").first.wait_for(timeout=180_000)
        page.wait_for_timeout(3000)
        view = _head_view(page)
        assert view is not None and view["layer"] == "layer 1" and not view["picker"], view
        assert view["overflow"] <= 0 and view["frame"] - view["content"] <= 20, view
        fits = page.evaluate(FITS_JS)
        assert fits["need"] <= fits["room"] and not fits["toggle_cut"], fits
        page.locator('[data-testid="stSelectbox"]', has_text="Layer").first.click()
        page.keyboard.type("0")
        page.keyboard.press("Enter")
        page.wait_for_timeout(4000)
        assert _head_view(page)["layer"] == "layer 0"
        page.locator("iframe").first.scroll_into_view_if_needed()
        folder = Path(os.environ.get("CLASS_SHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"head-view-{mode}.png"))
    finally:
        context.close()


def _sentence() -> str:
    """A sentence of the teaching grammar, or of the tiny corpus without the shipped models."""
    return "The young man buys a green bicycle." if find_checkpoint() else PAIRS[3][0]


def test_class_mode_at_1280x720_draws_labels_readable_from_the_back(server, projector, tmp_path):
    page = projector
    page.goto(translate_url(server, _sentence(), **{"class": "1"}))
    chart = page.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=120_000)
    page.wait_for_timeout(1000)  # the page's layout settles
    columns, rows = chart.evaluate(LABEL_SIZES_JS)
    assert columns and rows
    assert min(columns) >= class_mode.LABEL_PX and min(rows) >= class_mode.LABEL_PX, (columns, rows)
    root_px = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert root_px == class_mode.ROOT_PX
    expect(page.get_by_role("switch", name="Class mode (projector)")).to_be_checked()
    assert page.locator(EXCEPTION).count() == 0
    class_shot(page, "class-translate-top", tmp_path)
    chart.scroll_into_view_if_needed()
    class_shot(page, "class-translate-heatmap", tmp_path)
    page.locator('[data-testid="stSidebar"] a[href$="Learn"]').first.click()  # another page keeps it
    expect(page.get_by_role("heading", name="Learn").first).to_be_visible(timeout=60_000)
    page.wait_for_url(re.compile(r"class=1"), timeout=30_000)
    expect(page.get_by_role("switch", name="Class mode (projector)")).to_be_checked()


def test_without_class_mode_the_labels_stay_at_their_usual_size(server, projector):
    projector.goto(translate_url(server, _sentence()))
    chart = projector.locator(PLOT).first
    chart.locator(HEATMAP).first.wait_for(timeout=120_000)
    columns, rows = chart.evaluate(LABEL_SIZES_JS)
    assert max(columns) <= 12 and max(rows) <= 12  # the switch is what makes them larger

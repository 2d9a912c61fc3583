"""Real browser at a projector's 1280x720, in both modes, on every SVG view and chart of the pages a class uses
(issue 37, items 2 and 22): in class mode no label under 18 px; in both modes no two labels of a chart or view
overlapping and no label of a chart cut at its edges. Labels are measured in the page as Chromium lays them out
(tests/label_boxes.py). One server for the module (tests/test_e2e.py's); CLASS_SHOTS=DIR keeps the pictures."""

from __future__ import annotations

import os
from pathlib import Path

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

# page -> (link, what to click before measuring, what must be on the page then): every view of issue 37's item 2.
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
    "compare": ("Explain_heads?model=en-fr-bible&view=compare&partner=en-fr-bible-debian", None, PLOT),  # item 13
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


@pytest.mark.parametrize("mode", ["class", "normal"])
@pytest.mark.parametrize("name", list(PAGES))
def test_every_view_has_readable_labels_that_never_overlap(server, browser, name, mode, tmp_path):  # noqa: F811
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
        if name.startswith("learn"):  # item 2: Eq. 1 whole in its frame, no sideways scroll (class mode)
            eq = [f.evaluate(EQ1_JS) for f in page.frames[1:]]
            assert [d for d in eq if d is not None and d["scroll"] > d["room"] + 1] == [] and any(eq), eq
        if name == "translate":  # item 22: the search methods on one line at 1280 px
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


@pytest.mark.parametrize("mode", ["class", "normal"])
def test_the_head_view_fits_its_frame_and_follows_the_pages_layer_and_the_sidebar_fits(  # noqa: F811
        server, browser, mode, tmp_path):  # noqa: F811
    """Issue 37 items 20 and 22: the head view's frame is its height (not 100 px more) and shows the layer of the
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

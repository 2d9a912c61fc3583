"""The views in a real browser (Debian's chromium; no app server): the beam tree's labels never overlap on a
25-step beam of 5, and the scripts of the head view, model view and Eq. 1 picture do what their buttons say."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.app_fixtures import make_checkpoint
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator, find_checkpoint
from transformer.explain import cell_arithmetic, views
from transformer.model.checkpoint import load_checkpoint

pytestmark = pytest.mark.e2e
LONG = ("And God said, Let there be light: and there was light, and God saw the light, that it was good: and God "
        "divided the light from the darkness, and the evening and the morning were the first day.")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")))


def overlaps(boxes: list[dict]) -> list[tuple[int, int]]:
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[i + 1:], i + 1)
            if a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]]


def test_a_25_step_beam_of_5_has_no_two_labels_overlapping(page, tmp_path):
    path = find_checkpoint()
    if path is None:
        pytest.skip("no shipped checkpoint")
    translator = Translator(load_checkpoint(path))
    session = translator.session(LONG, SearchSettings(beam_size=5))
    for _ in range(25):
        session.step()
    assert session.n_steps == 25 and not session.done
    view = views.beam_tree(session.history, translator.tokenizer.target_pieces, session.live[0].tokens)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.set_content(view.document())
    boxes = page.eval_on_selector_all("svg.bt g.node text", "ts => ts.map(t => { const b = t.getBBox(); "
                                      "return {x: b.x, y: b.y, width: b.width, height: b.height}; })")
    assert len(boxes) == 1 + sum(len(s.nodes) for s in session.history)
    assert all(b["width"] > 0 and b["height"] > 0 for b in boxes)
    assert overlaps(boxes) == []
    assert overlaps([{"x": 0, "y": 0, "width": 10, "height": 10}, {"x": 5, "y": 5, "width": 10, "height": 10}])
    assert page.locator("svg.bt g.node.win").count() == 25  # the best live hypothesis, one node per step
    pairs = page.eval_on_selector_all("svg.bt g.node", "gs => gs.map(g => [g.querySelector('text').textContent, "
                                      "g.querySelector('title').textContent.split('\\n')[0]])")
    for shown, full in pairs[1:]:  # a label is its piece, or the piece abbreviated (whole in the node's title)
        assert shown == full or (shown.endswith("…") and full.startswith(shown[:-1]) and len(shown) < len(full))
    page.locator("svg.bt g.node[data-step='12'][data-rank='0']").click()
    assert page.locator("svg.bt g.node.picked").count() == 14  # its path: <s> and steps 1..13
    assert "step 13, rank 0" in page.locator(".bt .info").text_content()
    page.screenshot(path=str(tmp_path / "beam-tree.png"), full_page=True)
    wins = "ns => ns.map(n => { const b = n.getBoundingClientRect(); return [b.left, b.right]; })"
    assert max(r for _, r in page.eval_on_selector_all("svg.bt g.node.win", wins)) > 1280  # steps 1-8 only, at first
    page.get_by_role("button", name="Whole tree").click()  # the overview: the whole tree in the page's width
    boxes = page.eval_on_selector_all("svg.bt g.node.win", wins)
    assert len(boxes) == 25 and min(x for x, _ in boxes) >= 0 and max(r for _, r in boxes) <= 1280
    page.get_by_role("button", name="Actual size").click()
    assert max(r for _, r in page.eval_on_selector_all("svg.bt g.node.win", wins)) > 1280


def test_head_view_hover_layer_and_head_toggles(page, tiny):
    att = tiny.translate("the woman reads a book .", attention=True).attention
    page.set_content(views.head_view(att, "cross").document())
    visible = "g => [...g.querySelectorAll('line')].filter(l => l.getBoundingClientRect().width > 0 || " \
              "l.getBoundingClientRect().height > 0).map(l => [l.dataset.q, l.dataset.k])"
    all_lines = page.eval_on_selector("svg.hv g.ly[data-layer='0']", visible)
    assert len(all_lines) > len(att.source_pieces)
    page.locator("svg.hv text.tk[data-i='1']").hover()
    focused = page.eval_on_selector("svg.hv g.ly[data-layer='0']", visible)
    assert focused and {k for _, k in focused} == {"1"} and len(focused) < len(all_lines)
    page.mouse.move(0, 0)
    assert len(page.eval_on_selector("svg.hv g.ly[data-layer='0']", visible)) == len(all_lines)
    page.locator("svg.hv text.tq[data-i='0']").click()  # kept after the mouse leaves
    page.mouse.move(0, 0)
    assert {q for q, _ in page.eval_on_selector("svg.hv g.ly[data-layer='0']", visible)} == {"0"}
    page.locator("svg.hv text.tq[data-i='0']").click()
    page.select_option("select.layer", "1")
    expect(page.locator("svg.hv g.ly[data-layer='0']")).to_be_hidden()
    expect(page.locator("svg.hv g.ly[data-layer='1']")).to_be_visible()
    page.locator("input.head[value='2']").uncheck()
    assert page.eval_on_selector("svg.hv g.ly[data-layer='1'] g.hd[data-head='2']", "g => g.style.display") == "none"
    assert page.eval_on_selector("svg.hv g.ly[data-layer='1'] g.hd[data-head='1']", "g => g.style.display") == ""


def test_model_view_click_opens_that_layer_and_head(page, tiny):
    att = tiny.translate("the woman reads a book .", attention=True).attention
    page.set_content(views.model_view(att, "enc_self").document())
    page.locator(".mv .cell[data-layer='1'][data-head='3']").click()
    assert page.locator("select.layer").input_value() == "1"
    checked = page.eval_on_selector_all("input.head", "bs => bs.map(b => b.checked)")
    assert checked == [False, False, False, True]


def test_eq1_picture_reveals_its_stages_and_follows_a_clicked_key(page, tiny):
    t = tiny.translate("the woman reads a book .", attention=True)
    cell = cell_arithmetic(tiny.model, t.source_ids, [tiny.specials.start, *t.token_ids[:-1]], "cross", 0, 1, 1)
    page.set_content(views.cell_flow(cell, t.target_pieces[1], t.source_pieces, key=0).document())
    stages = "ss => ss.map(s => s.style.display !== 'none')"
    assert page.eval_on_selector_all("svg.eq g.st", stages) == [True] * 7  # all at once by default
    page.get_by_role("button", name="Step through").click()
    assert page.eval_on_selector_all("svg.eq g.st", stages) == [True] + [False] * 6
    page.get_by_role("button", name="Next step").click()
    page.get_by_role("button", name="Next step").click()
    assert page.eval_on_selector_all("svg.eq g.st", stages) == [True] * 3 + [False] * 4
    expect(page.locator(".eq .cap")).to_contain_text(f"The score of «{t.source_pieces[0]}»")
    y0 = float(page.get_attribute("rect.hl", "y"))
    page.locator("svg.eq g.row[data-j='3'] text").click()
    assert float(page.get_attribute("rect.hl", "y")) == pytest.approx(y0 + 3 * 22)
    expect(page.locator(".eq .cap")).to_contain_text(f"«{t.source_pieces[3]}»")
    page.get_by_role("button", name="All steps").click()
    assert page.eval_on_selector_all("svg.eq g.st", stages) == [True] * 7
    for part in ("text.w", "text.score", "g.vec", "text.mask"):  # the whole row answers, not its label alone
        page.locator(f"svg.eq {part}[data-j='2']").first.click(force=True)
        assert float(page.get_attribute("rect.hl", "y")) == pytest.approx(y0 + 2 * 22), part
        page.locator("svg.eq g.row[data-j='0'] text").click()
        assert float(page.get_attribute("rect.hl", "y")) == pytest.approx(y0), part


# the line from q to the highlighted key (its points) and the boxes of the bars it must keep clear of, as drawn
QK_JS = """() => { const e = document.querySelector('svg.eq .qk'), a = n => +e.getAttribute(n);
  const d = e.tagName === 'line' ? `M${a('x1')},${a('y1')}L${a('x2')},${a('y2')}` : e.getAttribute('d');
  const bars = [...document.querySelectorAll('svg.eq g.vec')].map(g => { const b = g.getBBox();
    return [g.dataset.part || g.dataset.j, [b.x, b.y, b.x + b.width, b.y + b.height]]; });
  return {points: d.slice(1).split('L').map(p => p.split(',').map(Number)), bars}; }"""


def test_the_compact_eq1_line_follows_a_clicked_key_clear_of_every_bar(page, tiny):
    """The compact Eq. 1's line from q to a key crossed the k bars; as the browser draws it after each
    click, no segment runs through a bar vector and the line ends at the clicked row."""
    from tests.explain.test_views import _crosses

    t = tiny.translate("the woman reads a book .", attention=True)
    cell = cell_arithmetic(tiny.model, t.source_ids, [tiny.specials.start, *t.token_ids[:-1]], "cross", 0, 1, 1)
    page.set_content(views.cell_flow(cell, t.target_pieces[1], t.source_pieces, key=0, compact=True).document())
    for key in reversed(range(len(t.source_pieces))):
        page.locator(f"svg.eq g.row[data-j='{key}'] text").click()
        drawn = page.evaluate(QK_JS)
        points = drawn["points"]
        row_y = float(page.get_attribute("rect.hl", "y")) + 11
        assert points[-1][1] == pytest.approx(row_y)
        crossed = [(name, a, b) for a, b in zip(points, points[1:]) for name, box in drawn["bars"]
                   if _crosses(a, b, box)]
        assert crossed == [], (key, crossed[:3])


def test_eq1_picture_works_with_a_piece_that_opens_a_comment_and_a_script(page, tiny):
    t = tiny.translate("the woman reads a book .", attention=True)
    cell = cell_arithmetic(tiny.model, t.source_ids, [tiny.specials.start, *t.token_ids[:-1]], "cross", 0, 1, 1)
    piece = "<!--<script>"
    page.set_content(views.cell_flow(cell, piece, [piece] * len(t.source_ids), key=0).document())
    expect(page.locator(".eq .cap")).to_contain_text(f"The head's output for «{piece}»")  # the script ran
    page.get_by_role("button", name="Step through").click()
    expect(page.locator(".eq .cap")).to_contain_text(f"Step 1 of 7. The input at query «{piece}»")


def test_the_reports_charts_are_drawn_without_a_script(page, tiny):
    from ui.explain import html_report

    doc = html_report.sentence_report(tiny.translate("the woman reads a book .", attention=True), model="tiny")
    page.set_content(doc)
    figures = doc.count('<div class="map">')
    assert figures == 3 * 2 * 4  # every family's layers and heads
    drawn = page.locator(".map svg").evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    assert len(drawn) == figures and min(drawn) > 100  # static SVG: drawn as soon as the page is, no library
    assert page.locator("svg.hv").count() == 3  # the head views, one per family, beside the maps

"""transformer.explain.views: the HTML/SVG each view writes, read back (weights as opacities, token order, which
way a column reads, the numbers of Eq. 1, the beam tree's paths, the theme's colours), and the heatmaps of every head
(an Altair chart) read from its spec. The browser's side: tests/browser/test_views.py."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import altair as alt
import numpy as np
import pytest
import torch

from tests.app_fixtures import make_checkpoint
from tests.chart_reading import Drawn, calculated
from tests.conftest import SPECIALS
from transformer.bidi import piece_labels
from transformer.charts import theme
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain import cell_arithmetic, views
from transformer.explain.views import lines, tree
from transformer.explain.views.flow import BOLD_PX
from transformer.explain.views.svg import NOTE_PX, text_width
from transformer.labels import HOVER_CHARS, shorten
from transformer.model.checkpoint import load_checkpoint

SVG = "{http://www.w3.org/2000/svg}"


def svg_of(view: views.View, cls: str) -> ET.Element:
    """The view's <svg class=cls> element, parsed as XML (which it must be)."""
    match = re.search(rf'<svg class="{cls}".*?</svg>', view.html, flags=re.S)
    assert match, f"no <svg class={cls!r}> in the view"
    return ET.fromstring(match.group(0))


def find(root: ET.Element, tag: str, **attrs) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if all(e.get(k.replace("_", "-")) == v for k, v in attrs.items())]


def classes(e: ET.Element) -> set[str]:
    return set((e.get("class") or "").split())


@pytest.fixture(scope="module")
def translator(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")))


@pytest.fixture(scope="module")
def arabic(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "ar", tgt="ar")))


def test_head_view_draws_one_line_per_visible_weight_with_the_weight_as_opacity():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.full(5, 0.3), size=(2, 3, 4))  # (L, H, Q, K): peaked rows, some weights ~0
    view = views.head_view_from(maps, ["a", "b", "c", "d"], ["v", "w", "x", "y", "z"], layer=1, heads=[0, 2])
    root = svg_of(view, "hv")
    assert (maps < lines.MIN_WEIGHT).any()  # the case covers lines left out
    for layer_group in find(root, "g", **{"class": "ly"}):
        layer = int(layer_group.get("data-layer"))
        assert ("display:none" in (layer_group.get("style") or "")) == (layer != 1)  # the picked layer shows
        for head_group in layer_group:
            head = int(head_group.get("data-head"))
            assert ("display:none" in (head_group.get("style") or "")) == (head == 1)  # heads 0 and 2 are on
            drawn = {(int(e.get("data-q")), int(e.get("data-k"))): float(e.get("stroke-opacity"))
                     for e in head_group}
            expected = {(q, k): w for (q, k), w in np.ndenumerate(maps[layer, head]) if w >= lines.MIN_WEIGHT}
            assert drawn.keys() == expected.keys()
            assert all(abs(drawn[c] - expected[c]) <= 5e-4 for c in drawn)
            assert head_group.get("stroke") == theme.CATEGORIES[head]  # the theme's colour of that head
    assert len({g.get("stroke") for g in find(root, "g", **{"class": "hd"})}) == 3  # a colour per head


def test_a_head_view_driven_by_the_pages_layer_picker_draws_that_layer_with_no_picker_of_its_own():
    """Under the explorer's Layer picker the view shows the page's layer and cannot disagree."""
    maps = np.random.default_rng(1).dirichlet(np.ones(3), size=(3, 2, 2))  # (L, H, Q, K)
    view = views.head_view_from(maps, ["a", "b"], ["x", "y", "z"], layer=2, layer_picker=False)
    layers = find(svg_of(view, "hv"), "g", **{"class": "ly"})
    assert [g.get("data-layer") for g in layers] == ["2"]
    assert "<select" not in view.html and '>layer 2</span>' in view.html
    own = views.head_view_from(maps, ["a", "b"], ["x", "y", "z"], layer=2)
    assert own.html.count("<option") == 3 and len(find(svg_of(own, "hv"), "g", **{"class": "ly"})) == 3
    svg_height = int(svg_of(view, "hv").get("height"))
    assert view.height - svg_height == lines.CHROME_PX < 90  # the frame fits its drawing, not 100 px more


def test_head_view_lists_the_tokens_in_order_and_lines_join_their_rows():
    queries, keys = ["▁le", "▁chat", "▁dort", "</s>"], ["▁the", "▁cat", "▁sleeps", ".", "</s>"]
    maps = np.full((1, 1, 4, 5), 0.2)
    root = svg_of(views.head_view_from(maps, queries, keys), "hv")
    q_labels = [e for e in root.iter(SVG + "text") if "tq" in classes(e)]
    k_labels = [e for e in root.iter(SVG + "text") if "tk" in classes(e)]
    assert ["".join(e.itertext())[len(e.find(SVG + "title").text):] for e in q_labels] == queries
    assert [e.find(SVG + "title").text for e in k_labels] == keys
    ys = [float(e.get("y")) for e in q_labels]
    assert ys == sorted(ys)  # top to bottom in sentence order
    for line in root.iter(SVG + "line"):
        assert float(line.get("y1")) == float(q_labels[int(line.get("data-q"))].get("y"))
        assert float(line.get("y2")) == float(k_labels[int(line.get("data-k"))].get("y"))
    assert max(float(e.get("x")) for e in q_labels) < min(float(e.get("x")) for e in k_labels)  # queries left


def test_an_arabic_query_column_stands_on_the_right_and_reads_right_to_left(arabic):
    att = arabic.translate("the cat sleeps .", attention=True).attention
    assert views.column_is_rtl(att.target_pieces)
    root = svg_of(views.head_view(att, "cross"), "hv")
    assert root.get("data-mirrored") == "1"
    texts = list(root.iter(SVG + "text"))
    q_labels, k_labels = [e for e in texts if "tq" in classes(e)], [e for e in texts if "tk" in classes(e)]
    assert min(float(e.get("x")) for e in q_labels) > max(float(e.get("x")) for e in k_labels)
    assert all(e.get("direction") == "rtl" for e in q_labels if views.column_is_rtl([e.find(SVG + "title").text]))
    assert all(e.get("direction") is None for e in k_labels)  # the English source reads left to right
    line = next(root.iter(SVG + "line"))
    assert float(line.get("x1")) > float(line.get("x2"))  # from the query (right) to the key (left)
    english = svg_of(views.head_view(att, "enc_self"), "hv")
    assert english.get("data-mirrored") == "0"
    mixed = svg_of(views.head_view_from(np.full((1, 1, 4, 2), 0.5), ["▁قال", "▁الله", ".", "</s>"], ["a", "b"]), "hv")
    assert [e.get("direction") for e in mixed.iter(SVG + "text") if "tq" in classes(e)] == ["rtl", "rtl", None, None]


def test_the_head_view_of_a_translation_is_drawn_from_its_maps(translator):
    att = translator.translate("the cat sleeps .", attention=True).attention
    for family in views.FAMILIES:
        root = svg_of(views.head_view(att, family, layer=1), "hv")
        maps = torch.stack(getattr(att, family)).numpy()
        for line in root.iter(SVG + "line"):
            group = next(g for g in find(root, "g", **{"class": "hd"}) if line in list(g))
            layer = next(int(g.get("data-layer")) for g in find(root, "g", **{"class": "ly"}) if group in list(g))
            w = maps[layer, int(group.get("data-head")), int(line.get("data-q")), int(line.get("data-k"))]
            assert abs(float(line.get("stroke-opacity")) - w) <= 5e-4
        assert len(list(root.iter(SVG + "line"))) == int((maps >= lines.MIN_WEIGHT).sum())


def test_a_decoding_steps_head_view_draws_only_the_current_query(translator):
    session = translator.session("the cat sleeps .", SearchSettings(beam_size=2))
    session.step()
    session.step()
    hyp = session.current.live[0]
    prefix = translator.tokenizer.target_pieces(hyp.prefix)
    source = translator.prepare("the cat sleeps .").pieces
    for family, keys in (("cross", source), ("dec_self", prefix)):
        view = views.step_head_view(hyp, prefix, source, family)
        root = svg_of(view, "hv")
        assert {int(e.get("data-q")) for e in root.iter(SVG + "line")} == {len(prefix) - 1}
        assert f'data-focus="{len(prefix) - 1}"' in view.html
        rows = (hyp.cross_attention if family == "cross" else hyp.self_attention).numpy()  # (L, H, Lk)
        assert len(list(root.iter(SVG + "line"))) == int((rows >= lines.MIN_WEIGHT).sum())
        assert len([e for e in root.iter(SVG + "text") if "tk" in classes(e)]) == len(keys)


def test_model_view_has_a_drawing_per_layer_and_head_and_the_head_view_to_open_them(translator):
    att = translator.translate("the cat sleeps .", attention=True).attention
    view = views.model_view(att, "cross")
    thumbs = re.findall(r'<svg class="thumb"[^>]*data-layer="(\d+)" data-head="(\d+)"', view.html)
    assert sorted(thumbs) == sorted((str(lay), str(h)) for lay in range(2) for h in range(4))
    assert view.html.count('<svg class="hv"') == 1


def test_heatmaps_are_every_layer_and_head_labelled_with_its_tokens_and_each_weight_a_cell(translator):
    att = translator.translate("the cat sleeps .", attention=True).attention
    drawn = Drawn.of(views.heatmaps(att, "cross"))
    maps = torch.stack(att.cross).numpy()  # (L, H, T, S)
    spec = drawn.spec
    assert drawn.title == "cross-attention" and spec["facet"]["row"]["field"] == "layer"
    assert spec["facet"]["column"]["field"] == "head"
    cells = drawn.data("rect", 1)  # the weights' rects (the first draws the missing ones)
    assert len(cells) == maps.size  # every weight a cell, the faint ones too
    got = np.zeros_like(maps)
    got[cells.layer, cells["head"], cells.row, cells.col] = cells.value
    np.testing.assert_allclose(got, maps, atol=1e-7)
    words = calculated(drawn)  # the tooltip's words, looked up from each cell's positions
    assert words["map"] == "'layer ' + datum.layer + ', head ' + datum.head"
    assert words["row_label"] == ([shorten(t, HOVER_CHARS) for t in piece_labels(att.target_pieces)], "row")
    assert words["col_label"] == ([shorten(t, HOVER_CHARS) for t in piece_labels(att.source_pieces)], "col")
    assert drawn.labels("y", "rect", 1) == [shorten(t) for t in piece_labels(att.target_pieces)]
    assert drawn.labels("x", "rect", 1) == [shorten(t) for t in piece_labels(att.source_pieces)]
    rect = drawn.view("rect", 1)["encoding"]
    assert rect["y"]["title"] == "target queries" and rect["x"]["title"] == "source keys"
    assert rect["x"]["scale"]["domain"] == list(range(len(att.source_pieces)))  # English keys: left to right
    assert rect["color"]["scale"]["scheme"] == theme.WEIGHTS and rect["color"]["scale"]["domain"] == [0.0, 1.0]
    assert [t["field"] for t in rect["tooltip"]] == ["map", "row_label", "col_label", "value"]
    one = Drawn.of(views.heatmaps(att, "cross", layers=[1])).data("rect", 1)
    assert set(one.layer) == {1} and len(one) == maps[1].size  # a layer keeps its number in the model


def test_heatmaps_show_offline_and_say_why_when_too_large(translator):
    """In Jupyter the chart is drawn by Altair's renderer: the svg one (vl-convert) needs no internet. A grid past
    the charts' cell limit is a chart that says so."""
    att = translator.translate("the cat sleeps .", attention=True).attention
    with alt.renderers.enable("svg"):
        bundle = views.heatmaps(att, "enc_self", layers=[0])._repr_mimebundle_()
    svg = (bundle[0] if isinstance(bundle, tuple) else bundle)["image/svg+xml"]
    assert {"layer 0", "head 0", "head 3", "source keys"} <= set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert "layer 1" not in svg and "http" not in svg.replace("http://www.w3.org/", "")
    big = np.full((4, 8, 40, 40), 1 / 40)  # 51,200 cells
    words = [f"w{i}" for i in range(40)]
    said = Drawn.of(views.heatmaps_from(big, words, words))
    assert said.marks() == ["text"] and "51,200 cells" in said.data("text").text[0]
    assert len(Drawn.of(views.heatmaps_from(big, words, words, layers=[0, 3])).data("rect", 1)) == 2 * 8 * 1600


def _texts(root: ET.Element, cls: str) -> dict[int, str]:
    return {int(e.get("data-j")): e.text for e in root.iter(SVG + "text") if cls in classes(e)}


def test_eq1_picture_prints_the_cells_numbers_and_highlights_the_clicked_key(translator):
    t = translator.translate("the cat sleeps .", attention=True)
    source = t.source_ids + [0, 0]  # two <pad> keys, masked
    keys = t.source_pieces + ["<pad>", "<pad>"]
    cell = cell_arithmetic(translator.model, source, [SPECIALS.start, *t.token_ids[:-1]], "cross", 1, 2, 1)
    view = views.cell_flow(cell, t.target_pieces[1], keys, key=2)
    root = svg_of(view, "eq")
    stages = [g.get("data-stage") for g in find(root, "g", **{"class": "st"})]
    assert stages == ["input", "qkv", "score", "mask", "softmax", "weighted", "sum"]
    weights, scores, marks = _texts(root, "w"), _texts(root, "score"), _texts(root, "mask")
    assert [float(weights[j]) for j in range(len(keys))] == pytest.approx(cell.weights.tolist(), abs=5e-4)
    assert [float(scores[j].replace("−", "-")) for j in range(len(keys))] == pytest.approx(cell.scores.tolist(),
                                                                                           abs=5e-4)
    assert [marks[j] == "✓" for j in range(len(keys))] == cell.mask.tolist() == [True] * len(t.source_ids) + [False] * 2
    assert float(weights[len(keys) - 1]) == 0.0  # a masked key gets no weight
    highlight = find(root, "rect", **{"class": "hl"})[0]
    key_text = [e for e in root.iter(SVG + "text") if "key" in classes(e) and e.get("data-j") == "2"][0]
    y = float(highlight.get("y")) + float(highlight.get("height")) / 2
    assert y == pytest.approx(float(key_text.get("y")))
    assert cell.query_input.shape == (translator.model.config.d_model,)
    assert '"reveal":"all"' in view.html and '"key":2' in view.html


def test_eq1_picture_defaults_to_the_heaviest_key_and_refuses_bad_arguments(translator):
    t = translator.translate("the dog eats .", attention=True)
    cell = cell_arithmetic(translator.model, t.source_ids, None, "enc_self", 0, 1, 0)
    view = views.cell_flow(cell, t.source_pieces[0], t.source_pieces, reveal="steps")
    assert f'"key":{int(cell.weights.argmax())}' in view.html and '"reveal":"steps"' in view.html
    with pytest.raises(ValueError, match="key labels"):
        views.cell_flow(cell, "x", t.source_pieces[:-1])
    with pytest.raises(ValueError, match="reveal"):
        views.cell_flow(cell, "x", t.source_pieces, reveal="some")
    with pytest.raises(ValueError, match="key must be an integer from 0 to"):
        views.cell_flow(cell, "x", t.source_pieces, key=len(t.source_pieces))


def test_the_compact_eq1_picture_fits_class_modes_column_with_every_column_whole(translator):
    """Zoomed to 18 px labels (x1.5) in class mode's 770 px column (762 inside its frame), Eq. 1
    was 814 px wide before the zoom; compact, it fits, and every label ends inside the picture."""
    t = translator.translate("the cat sleeps .", attention=True)
    cell = cell_arithmetic(translator.model, t.source_ids, [SPECIALS.start, *t.token_ids[:-1]], "cross", 1, 2, 1)
    wide = views.cell_flow(cell, t.target_pieces[1], t.source_pieces)
    view = views.cell_flow(cell, t.target_pieces[1], t.source_pieces, compact=True)
    frame = 770 - 8  # the iframe's width less its body's padding
    assert wide.zoomed(18).width > frame >= view.zoomed(18).width
    root = svg_of(view, "eq")
    assert int(root.get("width")) == view.width
    texts = [e for e in root.iter(SVG + "text") if e.get("text-anchor") != "end"]
    rights = {"".join(e.itertext()): float(e.get("x")) + text_width("".join(e.itertext()), BOLD_PX) for e in texts}
    assert {"Σ weight × v", "weight × v"} <= rights.keys() and any(k.startswith("vs model") for k in rights)
    assert max(rights.values()) <= view.width  # the right column never cut
    highlight, key_text = find(root, "rect", **{"class": "hl"})[0], _texts(root, "key")
    assert float(highlight.get("y")) + float(highlight.get("height")) / 2 == pytest.approx(
        float([e for e in root.iter(SVG + "text") if e.get("data-j") == str(int(cell.weights.argmax()))][0].get("y")))
    assert len(key_text) == len(t.source_pieces)


def _beam(translator, steps: int, beam: int = 3):
    session = translator.session("the woman reads a book .", SearchSettings(beam_size=beam, max_len_a=0,
                                                                             max_len_b=steps))
    session.run_to_end()
    return session


def test_beam_tree_has_every_node_and_draws_the_best_hypothesis_strongly(translator):
    session = _beam(translator, 8)
    best = session.finished[0]
    view = views.beam_tree(session.history, translator.tokenizer.target_pieces, best.tokens)
    root = svg_of(view, "bt")
    nodes = [g for g in find(root, "g") if "node" in classes(g)]
    assert "".join(nodes[0].find(SVG + "text").itertext()) == "<s>"  # escaped in the markup, not read as a tag
    assert len(nodes) == 1 + sum(len(s.nodes) for s in session.history)  # + the root <s>
    win = sorted((int(g.get("data-step")), int(g.get("data-rank"))) for g in nodes if "win" in classes(g))
    assert [s for s, _ in win] == list(range(len(best.tokens)))  # one node per step, from the first on
    assert [session.history[s].nodes[r].token for s, r in win] == best.tokens
    assert tree.node_prefix(session.history, *win[-1]) == best.tokens
    for g in nodes[1:]:
        node = session.history[int(g.get("data-step"))].nodes[int(g.get("data-rank"))]
        assert g.get("data-status") == node.status
        title = g.find(SVG + "title").text
        assert f"P({translator.tokenizer.target_pieces([node.token])[0]} | prefix) = {math.exp(node.log_prob):.3f}" \
            in title and f"{node.score:.3f}" in title
    edges = [e for e in root.iter(SVG + "line") if "edge" in classes(e)]
    strong = {e.get("data-to") for e in edges if e.get("stroke") == tree.WIN}
    assert strong == {f"{s}-{r}" for s, r in win}
    pruned = [e for e in edges if session.history[int(e.get("data-to").split("-")[0])].nodes[
        int(e.get("data-to").split("-")[1])].status == "pruned"]
    assert pruned and all(e.get("stroke-dasharray") for e in pruned)  # pruned branches are dotted


def test_beam_tree_labels_fit_their_cell_and_node_prefixes_are_the_next_steps_hypotheses(translator):
    session = _beam(translator, 6)
    steps = session.history
    for t in range(len(steps) - 1):
        for rank, node in enumerate(steps[t].nodes):
            if node.status == "live":  # its prefix is what the next step feeds in its slot
                assert [SPECIALS.start, *tree.node_prefix(steps, t, rank)] == steps[t + 1].live[node.slot].prefix
    long = tree._fit("▁commencement" * 3)
    assert long.endswith("…") and views.svg.text_width(long, tree.FONT_PX) <= tree.COL - 2 * tree.RADIUS - 10


def test_views_display_in_jupyter_and_as_a_page(translator):
    att = translator.translate("the cat sleeps .", attention=True).attention
    for view in (views.head_view(att), views.model_view(att)):
        assert view._repr_html_() == view.html and view.height > 0 and view.width > 0
        page = view.document("x")
        assert page.startswith("<!DOCTYPE html>") and view.html in page
        assert "http://" not in view.html.replace("http://www.w3.org/2000/svg", "")  # no CDN: works offline
        assert "https://" not in view.html


def test_head_view_refuses_maps_that_do_not_match_the_labels():
    with pytest.raises(ValueError, match="3 queries x 4 keys but there are 2 query and 4 key labels"):
        views.head_view_from(np.zeros((1, 1, 3, 4)), ["a", "b"], list("wxyz"))
    with pytest.raises(ValueError, match="layer must be an integer from 0 to 1, got 2"):
        views.head_view_from(np.zeros((2, 1, 2, 4)), ["a", "b"], list("wxyz"), layer=2)
    with pytest.raises(ValueError, match="unknown family"):
        views.family_labels(None, "self")


def test_heatmaps_of_arabic_keys_run_right_to_left(arabic):
    att = arabic.translate("the cat sleeps .", attention=True).attention
    drawn = Drawn.of(views.heatmaps(att, "dec_self"))
    n_keys = len(att.target_input_pieces)
    assert drawn.view("rect", 1)["encoding"]["x"]["scale"]["domain"] == list(range(n_keys))[::-1]  # <s> on the right
    assert drawn.labels("x", "rect", 1)[1].startswith("\u200f")  # a right-to-left piece marked as one


def _qk_points(root: ET.Element) -> list[tuple[float, float]]:
    """The points of the line from q to the highlighted key (a <path>, or the <line> it once was)."""
    line = [e for e in root.iter() if "qk" in classes(e)][0]
    if line.tag == SVG + "line":
        return [(float(line.get("x1")), float(line.get("y1"))), (float(line.get("x2")), float(line.get("y2")))]
    return [tuple(map(float, p.split(","))) for p in line.get("d").lstrip("M").split("L")]


def _drawn_boxes(root: ET.Element) -> list[tuple[str, tuple[float, float, float, float]]]:
    """(what, (left, top, right, bottom)) of every bar vector (from its baseline) and every text of the picture."""
    boxes = []
    for g in root.iter(SVG + "g"):
        if "vec" in classes(g):
            base = g.find(SVG + "line")
            half = 8 if g.get("data-j") else 24  # a key's bars are 16 px high, q's, the input's, the output's 48
            x1, x2, y = float(base.get("x1")), float(base.get("x2")), float(base.get("y1"))
            boxes.append((f"bars {g.get('data-part') or g.get('data-j')}", (x1, y - half, x2, y + half)))
    for e in root.iter(SVG + "text"):
        words = "".join(t for t in [e.text, *(c.tail for c in e)] if t)  # a label's <title> is no drawn text
        font = BOLD_PX if "head" in classes(e) else NOTE_PX
        x, y, width = float(e.get("x")), float(e.get("y")), text_width(words, font)
        left = x - width if e.get("text-anchor") == "end" else x
        top, bottom = (y - 7, y + 7) if e.get("dominant-baseline") == "middle" else (y - font + 1, y + 3)
        boxes.append((f"text {words}", (left, top, left + width, bottom)))
    return boxes


def _crosses(a: tuple[float, float], b: tuple[float, float], box: tuple[float, float, float, float]) -> bool:
    """Whether segment a-b runs through the box (Liang-Barsky clipping; touching an edge does not count)."""
    (x0, y0), (x1, y1), (left, top, right, bottom) = a, b, box
    t0, t1 = 0.0, 1.0
    for p, q in ((x0 - x1, x0 - left), (x1 - x0, right - x0), (y0 - y1, y0 - top), (y1 - y0, bottom - y0)):
        if p == 0:
            if q <= 0:
                return False
        elif p < 0:
            t0 = max(t0, q / p)
        else:
            t1 = min(t1, q / p)
    return t1 - t0 > 1e-6


@pytest.mark.parametrize("compact", [False, True], ids=["wide", "compact"])
def test_the_line_from_q_to_a_key_crosses_no_bars_and_no_label(translator, compact):
    """In the compact Eq. 1 the line from q to the highlighted key ran across the k bars of the rows
    above it. For every key, each segment of the line keeps clear of every bar vector and text, and it ends at the
    key's row, left of its bars."""
    t = translator.translate("the woman reads a long book about the lucky accuser .", attention=True)
    cell = cell_arithmetic(translator.model, t.source_ids, [SPECIALS.start, *t.token_ids[:-1]], "cross", 1, 2, 1)
    labels = ["▁commandments", *t.source_pieces[1:]]  # a long piece: its label is fitted before the line's gutter
    for key in range(len(labels)):
        root = svg_of(views.cell_flow(cell, t.target_pieces[1], labels, key=key, compact=compact), "eq")
        points = _qk_points(root)
        row = [e for e in root.iter(SVG + "text") if "key" in classes(e) and e.get("data-j") == str(key)][0]
        assert points[-1][1] == float(row.get("y"))
        first_bar = min(box[0] for what, box in _drawn_boxes(root) if what == f"bars {key}")
        assert points[-1][0] < first_bar
        crossed = [(what, segment) for segment in zip(points, points[1:]) for what, box in _drawn_boxes(root)
                   if _crosses(*segment, box)]
        assert crossed == [], (key, crossed[:3])


def test_the_beam_tree_has_a_whole_tree_overview(translator):
    session = translator.session("the woman reads a book .", SearchSettings(beam_size=3))
    session.run_to_end()
    view = views.beam_tree(session.history, translator.tokenizer.target_pieces)
    assert '<button class="fit"' in view.html and "svg.fit{width:100%;height:auto}" in view.html
    assert 'viewBox="0 0 ' in view.html  # what lets the overview scale the whole drawing to the page's width

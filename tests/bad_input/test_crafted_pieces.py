"""Pieces a crafted vocabulary may hold: markup that would end or comment out an inline
script, and pieces thousands of characters long. Every view keeps its script whole and every label short (the
full piece in its title or hover), and shortening runs in linear time. The browser's side:
tests/browser/test_views.py."""

from __future__ import annotations

import dataclasses
import json
import re
import time

import numpy as np
import pytest

from tests.app_fixtures import make_checkpoint
from tests.chart_reading import Drawn, calculated
from transformer.charts.render import to_svg
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain import cell_arithmetic, views
from transformer.explain.views import svg, tree
from transformer.labels import shorten
from transformer.model.checkpoint import load_checkpoint

HOSTILE = "<!--<script>"
SCRIPT = re.compile(r"<script>(.*?)</script>", flags=re.S)


@pytest.fixture(scope="module")
def translator(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")))


def hostile_views(translator: Translator, piece: str) -> dict[str, views.View]:
    """Every view of the package, drawn with `piece` in place of every token label."""
    t = translator.translate("the woman reads a book .", attention=True)
    att = t.attention
    crafted = type(att)(**{**att.__dict__, "source_pieces": [piece] * len(att.source_pieces),
                           "target_pieces": [piece] * len(att.target_pieces),
                           "target_input_pieces": [piece] * len(att.target_input_pieces)})
    start = translator.specials.start
    cell = cell_arithmetic(translator.model, t.source_ids, [start, *t.token_ids[:-1]], "cross", 0, 1, 1)
    session = translator.session("the cat sleeps .", SearchSettings(beam_size=3, max_len_a=0, max_len_b=4))
    session.run_to_end()
    return {"cell_flow": views.cell_flow(cell, piece, [piece] * len(t.source_ids)),
            "head_view": views.head_view(crafted), "model_view": views.model_view(crafted),
            "beam_tree": views.beam_tree(session.history, lambda ids: [piece] * len(ids), session.finished[0].tokens)}


def test_data_in_an_inline_script_never_holds_a_less_than_sign():
    text = svg.data_json({"label": HOSTILE + "</script><b>", "n": 1})
    assert "<" not in text and ">" not in text and "&" not in text.replace("\\u0026", "")
    assert json.loads(text) == {"label": HOSTILE + "</script><b>", "n": 1}  # the same value, read back


def test_every_views_scripts_stay_whole_with_a_piece_that_opens_a_comment_and_a_script(translator):
    for name, view in hostile_views(translator, HOSTILE).items():
        bodies = SCRIPT.findall(view.html)
        assert view.html.count("<script>") == len(bodies) == view.html.count("</script>"), name
        for body in bodies:  # inside a script "<!--" then "<script" would swallow its closing tag
            assert "<!--" not in body and "<script" not in body, name
    flow = hostile_views(translator, HOSTILE)["cell_flow"].html
    data = json.loads(re.search(r",(\{.*\})\);</script>", flow).group(1))
    assert data["query"] == HOSTILE and {k["label"] for k in data["keys"]} == {HOSTILE}


def test_the_html_reports_scripts_stay_whole_with_such_pieces(translator):
    from ui.explain.html_report import sentence_report

    t = translator.translate("the cat sleeps .", attention=True)
    att = t.attention
    crafted = type(att)(**{**att.__dict__, "source_pieces": [HOSTILE] * len(att.source_pieces),
                           "target_pieces": [HOSTILE] * len(att.target_pieces),
                           "target_input_pieces": [HOSTILE] * len(att.target_input_pieces)})
    report = sentence_report(dataclasses.replace(t, attention=crafted, target_pieces=crafted.target_pieces),
                             model=HOSTILE)
    bodies = re.findall(r"<script[^>]*>(.*?)</script>", report, flags=re.S)
    assert len(bodies) == 3  # the head views' (the maps are static SVG, without a script)
    assert not [b for b in bodies if "<!--" in b or "<script" in b]
    charts = re.findall(r'<div class="map">(.*?)</div>', report, flags=re.S)
    assert len(charts) == 3 * 2 * 4 and not [c for c in charts if "<!--" in c or "<script" in c]
    assert "&lt;!--&lt;script&gt;" in charts[0]  # the piece drawn as text, escaped


LONG = "W" * 5000


def test_fitting_a_label_costs_what_fits_not_the_pieces_length():
    room, font = tree.COL - 2 * tree.RADIUS - 10, tree.FONT_PX
    assert [svg.fit(w, room, font) for w in ("W" * 1000, "W" * 8000)] == [tree._fit("W" * 20)] * 2
    assert svg.text_width(tree._fit("W" * 8000), font) <= room and tree._fit("ok") == "ok"
    for label in ("▁commencement" * 3, "a", "日本語の文章です" * 4, "W" * 11):  # the longest shortening that fits
        fitted = svg.fit(label, room, font)
        longer = label if len(fitted) >= len(label) else label[:len(fitted)] + "…"
        assert svg.text_width(fitted, font) <= room or len(fitted) <= 2
        assert fitted == label or svg.text_width(longer, font) > room

    def seconds(n: int) -> float:
        label = "W" * n
        return min(_timed(lambda: tree._fit(label)) for _ in range(3))

    assert seconds(8000) < 16 * seconds(1000)  # linear would be 8 times, quadratic 64 times: here it is constant


def _timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def test_a_5000_character_piece_is_shortened_everywhere_it_is_drawn(translator):
    from tests.chart_reading import Drawn
    from transformer.charts.heatmap import heatmap
    from transformer.labels import HOVER_CHARS
    from ui.step import candidate_bars
    from ui.translate.probability_table import probability_table

    table = probability_table(["▁a", LONG, "</s>"], [0.5, 0.25, 0.25])
    heads = re.findall(r"<th(?: title=\"(.*?)\")?><bdi>(.*?)</bdi></th>", table)  # each piece isolated
    assert heads == [("", "▁a"), (LONG, "W" * 23 + "…"), ("", "&lt;/s&gt;")]  # a long one whole in its title
    assert len(table) < len(LONG) + 1000

    drawn = Drawn.of(heatmap(np.full((2, 3), 1 / 3), ["▁a", LONG], ["<s>", LONG, "b"]))
    assert max(map(len, drawn.labels("x") + drawn.labels("y"))) <= svg.LABEL_CHARS
    cells = drawn.data("rect")  # the tooltip's, repeated once per cell: shortened too
    assert max(map(len, list(cells["row_label"]) + list(cells["col_label"]))) <= HOVER_CHARS
    bars = Drawn.of(candidate_bars.candidates_chart(candidate_bars.ordered([4, 5], [LONG, "b"], [0.6, 0.3],
                                                                            chosen=())))
    assert max(map(len, bars.labels("y", "bar"))) <= svg.LABEL_CHARS
    assert LONG in list(bars.data("bar")["token"])  # whole in the tooltip

    views_ = hostile_views(translator, LONG)
    for name, view in views_.items():  # no label drawn longer than LABEL_CHARS; sizes bounded
        shown = re.findall(r"<text[^>]*>(?:<title>[^<]*</title>)?([^<]*)</text>", view.html)
        assert shown and max(map(len, shown)) <= svg.LABEL_CHARS, name
        assert view.width < 3000 and view.height < 3000, name


def test_the_heatmaps_of_every_head_shorten_a_long_piece_and_keep_markup_as_text(translator):
    """views.heatmaps is an Altair chart: Vega draws its labels as text, so a piece of markup stays those characters
    (no escaping to get wrong); a long one is shortened on the axes and to HOVER_CHARS in the tooltips."""
    att = translator.translate("the woman reads a book .", attention=True).attention
    for piece in (LONG, HOSTILE):
        crafted = type(att)(**{**att.__dict__, "source_pieces": [piece] * len(att.source_pieces),
                               "target_pieces": [piece] * len(att.target_pieces)})
        drawn = Drawn.of(views.heatmaps(crafted))
        shown = drawn.labels("x", "rect", 1) + drawn.labels("y", "rect", 1)
        assert set(shown) == {shorten(piece)} and max(map(len, shown)) <= svg.LABEL_CHARS
        words = calculated(drawn)  # the tooltip's: a label per position, not per cell
        assert words["row_label"][0] == [shorten(piece, svg.HOVER_CHARS)] * len(crafted.target_pieces)
        assert words["col_label"][0] == [shorten(piece, svg.HOVER_CHARS)] * len(crafted.source_pieces)
        assert len(json.dumps(drawn.spec)) < 100 * len(drawn.data("rect", 1)) + 50_000  # bounded, not 5,000 a cell


def test_the_logit_lens_table_shortens_a_long_piece(translator):
    from transformer.explain.logit_lens import logit_lens
    from ui.explain.attribution_figures import lens_table

    t = translator.translate("the cat sleeps .", attention=False)
    lens = logit_lens(translator.model, t.source_ids, t.token_ids, specials=translator.specials)
    chart = lens_table(lens, [LONG] * len(t.token_ids), lambda _: LONG)
    drawn = Drawn.of(chart)
    assert max(map(len, list(drawn.data("rect")["text"]) + drawn.labels("y"))) <= svg.LABEL_CHARS
    width = int(re.search(r'<svg[^>]* width="(\d+)"', to_svg(chart)).group(1))
    assert width < 1200  # the row labels take what a shortened label takes, not the piece's 5,000 letters
    assert len(json.dumps(chart.to_dict())) < 100_000  # the hovers hold at most HOVER_CHARS of it, once per cell


def test_output_pieces_written_as_text_are_shortened_too():
    from ui.explain import attribution, one_sentence

    for marked in (one_sentence.marked, attribution._marked):
        shown = marked([LONG, "▁a"], [True, False])
        assert len(shown) < 100 and shown.rstrip("\u2069").endswith("▁a") and "…" in shown  # each piece isolated

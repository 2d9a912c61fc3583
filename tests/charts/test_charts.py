"""The chart builders of transformer.charts, read back as Vega-Lite specs and data (tests/chart_reading.py)."""

import math

import altair as alt
import numpy as np
import pytest

from tests.chart_reading import Drawn
from transformer.bidi import RLM, piece_labels
from transformer.charts import theme
from transformer.charts.grid import MAX_SIDE, head_grid, pooled
from transformer.charts.heatmap import MASK, MAX_CELLS, WEIGHTS, column_angle, diverging, heatmap, mask_map
from transformer.charts.lines import line_chart
from transformer.labels import LABEL_CHARS, shorten
from ui.shared.charts.show import file_name, selection_names


def test_a_heatmap_keeps_repeated_tokens_as_rows_on_a_fixed_scale():
    w = np.random.default_rng(0).dirichlet(np.ones(3), size=2)  # (2, 3), rows sum to 1
    drawn = Drawn.of(heatmap(w, ["▁le", "▁le"], ["a", "b", "c"], row_title="target query", col_title="source key"))
    cells = drawn.data("rect", 1)
    assert drawn.labels("y", "rect", 1) == ["▁le", "▁le"] and drawn.labels("x", "rect", 1) == ["a", "b", "c"]
    assert cells["row"].tolist() == [0, 0, 0, 1, 1, 1] and np.allclose(cells["value"], w.ravel())
    colour = drawn.view("rect", 1)["encoding"]["color"]
    assert colour["scale"]["domain"] == [0.0, 1.0] and colour["scale"]["scheme"] == theme.WEIGHTS
    y = drawn.view("rect", 1)["encoding"]["y"]
    assert y["scale"]["domain"] == [0, 1] and y["title"] == "target query"  # positions top-down: the first on top
    tooltip = [t["title"] for t in drawn.view("rect", 1)["encoding"]["tooltip"]]
    assert tooltip == ["target query", "source key", "weight"]
    assert cells.loc[5, ["row_label", "col_label"]].tolist() == ["▁le", "c"]  # the tooltip names both tokens
    with pytest.raises(ValueError, match="do not match 1 x 3 labels"):
        heatmap(w, ["x"], ["a", "b", "c"])


def test_labels_are_shortened_by_the_one_rule_and_whole_in_the_tooltip():
    long = "▁" + "x" * 60
    drawn = Drawn.of(heatmap(np.ones((1, 2)), ["q"], ["a", long]))
    assert drawn.labels("x", "rect", 1) == ["a", shorten(long)] and len(shorten(long)) == LABEL_CHARS
    assert drawn.data("rect", 1)["col_label"].tolist() == ["a", long]


def test_right_to_left_pieces_are_marked_on_the_axis_and_in_the_tooltip():
    pieces = ["▁في", "▁البد", "ء", "</s>"]
    drawn = Drawn.of(heatmap(np.eye(4), pieces, pieces))
    assert drawn.labels("y", "rect", 1) == piece_labels(pieces)
    assert drawn.labels("y", "rect", 1)[0].startswith(RLM) and not drawn.labels("y", "rect", 1)[3].startswith(RLM)
    assert drawn.data("rect", 1)["row_label"].tolist()[::4] == piece_labels(pieces)


def test_column_labels_stand_upright_turn_or_stand_on_end_as_room_allows():
    assert column_angle(5, 4, theme.NORMAL, 700) == 0  # 140 px a column: "word" fits upright
    assert column_angle(10, 12, theme.NORMAL, 700) == -60  # 70 px: turned, its box 57 px wide
    assert column_angle(90, 12, theme.NORMAL, 700) == -90  # 8 px: on end (Vega leaves out what still overlaps)
    for n in (5, 30, 90):
        axis = Drawn.of(heatmap(np.full((2, n), 1 / n), ["a", "b"], [f"▁w{i}" for i in range(n)])).view(
            "rect", 1)["encoding"]["x"]["axis"]
        assert axis["orient"] == "top" and axis["labelAngle"] in (0, -60, -90)
    assert Drawn.of(heatmap(np.ones((1, 1)), ["a"], ["b"])).spec["config"]["axis"]["labelOverlap"] == "greedy"


def test_cell_texts_are_drawn_only_where_the_longest_fits_its_band():
    texts = np.array([["0.50", "0.50"], ["1.00", "-0.25"]])
    drawn = Drawn.of(heatmap(np.array([[0.5, 0.5], [1.0, 0.0]]), ["a", "b"], ["x", "y"], texts=texts))
    text = drawn.view("text")
    width = theme.NORMAL.cell * 0.62 * 5 + 4  # "-0.25": 5 characters at the cell font
    assert text["mark"]["fontSize"] == theme.NORMAL.cell
    assert text["mark"]["opacity"]["expr"] == (f"bandwidth('x') >= {width:.1f} && bandwidth('y') >= "
                                               f"{1.15 * theme.NORMAL.cell:.1f} ? 1 : 0")
    assert drawn.data("text")["text"].tolist() == ["0.50", "0.50", "1.00", "-0.25"]
    big = Drawn.of(heatmap(np.ones((1, 1)), ["a"], ["x"], texts=[["1"]], sizes=theme.CLASS))
    assert big.view("text")["mark"]["fontSize"] == theme.CLASS.cell == 18
    assert big.spec["config"]["axis"]["labelFontSize"] == 18  # class mode's sizes over the theme's


def test_empty_huge_and_missing_values_are_said_or_drawn_apart():
    empty = Drawn.of(heatmap(np.zeros((0, 3)), [], ["a", "b", "c"], title="t"))
    assert empty.marks() == ["text"] and "no rows or no columns" in empty.data("text")["text"][0]
    side = math.isqrt(MAX_CELLS) + 1
    huge = Drawn.of(heatmap(np.zeros((side, side)), ["a"] * side, ["b"] * side))
    assert huge.marks() == ["text"] and f"{side * side:,} cells" in huge.data("text")["text"][0]
    nan = Drawn.of(heatmap(np.array([[np.nan, 0.5]]), ["q"], ["a", "b"]))
    cells = nan.data("rect", 1)
    assert np.isnan(cells["value"][0]) and cells["value"][1] == 0.5
    missing = nan.view("rect", 0)
    assert missing["mark"]["color"] == theme.NO_VALUE and "isValid(datum.value)" in missing["transform"][0]["filter"]


def test_outlines_a_divider_and_a_click_selection():
    drawn = Drawn.of(heatmap(np.eye(3), list("abc"), list("xyz"), select="cell", divider=2,
                             outlines={"gold link": [(0, 0), (2, 1)], "picked": [(1, 1)], "best": []}))
    gold, picked = (v for v in drawn.views() if v["mark"].get("stroke") in (theme.GOLD, theme.PICKED))
    assert drawn.data("rect", 2)[["row", "col"]].values.tolist() == [[0, 0], [2, 1]]
    assert gold["mark"]["stroke"] == theme.GOLD and picked["mark"]["stroke"] == theme.PICKED
    assert drawn.marks().count("rect") == 4  # missing values, cells, gold, picked: no layer for no best cell
    rule = drawn.view("rule")
    assert drawn.data("rule")["row"].tolist() == [2] and rule["encoding"]["y"]["bandPosition"] == 0
    assert drawn.selections() == {"cell": {"type": "point", "fields": ["row", "col"], "on": "click",
                                           "toggle": False}}
    assert selection_names(heatmap(np.eye(2), list("ab"), list("ab"), select="cell")) == ["cell"]


def test_scales_of_signed_values_and_masks():
    red_blue = diverging(0.5).encoding().to_dict()
    assert red_blue == {"scheme": theme.DIVERGING, "domain": [-0.5, 0.5], "reverse": True, "clamp": True,
                        "domainMid": 0.0}
    mask = Drawn.of(mask_map(np.tril(np.ones((3, 3))), list("abc"), list("abc")))
    colour = mask.view("rect", 1)["encoding"]["color"]
    assert colour["scale"]["range"] == [theme.MASKED, theme.MAY_ATTEND] and colour["legend"] is None
    assert mask.data("rect", 1)["value"].tolist() == [1, 0, 0, 1, 1, 0, 1, 1, 1] and MASK.legend is False
    assert WEIGHTS.title == "weight"


def test_the_head_grid_averages_large_maps_and_selects_a_head():
    maps = np.arange(16, dtype=float).reshape(1, 1, 4, 4)
    assert pooled(maps, side=2)[0, 0].tolist() == [[2.5, 4.5], [10.5, 12.5]]  # the mean of each 2 x 2 block
    odd = pooled(np.ones((1, 1, 5, 3)), side=2)
    assert odd.shape == (1, 1, 2, 2) and np.all(odd == 1)  # a ragged edge averages what it has
    small = Drawn.of(head_grid(np.full((2, 3, 4, 5), 0.2), select="head"))
    assert small.selections()["head"]["fields"] == ["layer", "head"] and small.subtitle == ""
    data = small.data()
    assert len(data) == 2 * 3 * 4 * 5 and sorted(set(zip(data["layer"], data["head"]))) == [
        (layer, head) for layer in range(2) for head in range(3)]
    assert small.spec["facet"]["row"]["field"] == "layer" and small.spec["facet"]["column"]["field"] == "head"
    big = Drawn.of(head_grid(np.random.default_rng(0).random((2, 2, 100, 60)), title="t"))
    assert big.data()["row"].max() < MAX_SIDE and "averaged from 100 x 60" in big.subtitle
    assert big.spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # every small map an element, at any size
    with pytest.raises(ValueError, match="layers, heads, queries, keys"):
        head_grid(np.ones((2, 3, 4)))


def test_lines_say_when_there_is_nothing_and_widen_a_single_step():
    nothing = Drawn.of(line_chart({"dev BLEU": ([], [])}, x_title="step", y_title="BLEU"))
    assert nothing.marks() == ["text"] and nothing.data("text")["text"][0] == "no values yet"
    one = Drawn.of(line_chart({"loss": ([250], [2.5])}, x_title="step", y_title="loss"))
    assert one.view("line")["encoding"]["x"]["scale"]["domain"] == [249, 251]
    two = Drawn.of(line_chart({"a": ([0, 1], [1, 2]), "b": ([0, 1], [np.nan, 3])}, x_title="x", y_title="y"))
    assert two.data("line")["series"].tolist() == ["a", "a", "b"]  # NaN left out
    assert two.view("line")["mark"]["point"] is True


def test_the_theme_is_registered_once_and_class_mode_never_goes_below_18_px():
    assert alt.theme.active == theme.NAME
    assert min(theme.CLASS.label, theme.CLASS.cell, theme.CLASS.view) >= 18
    plain = heatmap(np.ones((1, 1)), ["a"], ["b"]).to_dict()["config"]  # the theme's config, nothing laid over it
    assert plain["font"] == theme.FONT and plain["axis"]["labelFontSize"] == theme.NORMAL.label == 12


def test_static_pictures_are_drawn_by_vega_with_the_labels_as_text():
    from transformer.charts.render import to_png, to_svg

    chart = heatmap(np.eye(2), ["▁le", "</s>"], ["▁the", "."], title="cross-attention")
    svg = to_svg(chart)
    assert svg.startswith("<svg") and "cross-attention" in svg and "▁le" in svg and "&lt;/s&gt;" in svg
    assert to_png(chart, scale=1)[:8] == b"\x89PNG\r\n\x1a\n"


def test_file_names_are_slugs():
    assert file_name("cross-attention, layer 2, head 1") == "cross-attention-layer-2-head-1"
    assert file_name("enc_self-layer-0-mean of heads") == "enc-self-layer-0-mean-of-heads" and file_name("") == "chart"

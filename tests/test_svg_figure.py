"""The SVG renderer of plotly figures (ui.shared.svg_figure, svg_chart): one cell per value in the colour scale's
colour, labels in order, hover texts, subplot grids, clickable points in st.plotly_chart's shape, and plotly for
what it cannot draw."""

import base64
import io
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
import pytest
from PIL import Image
from plotly.subplots import make_subplots

from transformer import bidi
from ui.explain import head_maps
from ui.learn import positional_figures
from ui.shared import heatmaps, svg_chart, svg_figure
from ui.shared.attention import gold_alignment
from ui.shared.state import class_mode
from ui.shared.svg_text import Unsupported, fill_template, lines_of
from ui.step import candidate_bars

NS = {"s": "http://www.w3.org/2000/svg"}
WEIGHTS = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.0, 0.5]])


def _svg(drawing) -> ET.Element:
    return ET.fromstring(drawing.svg)


def _texts(root, cls) -> list[str]:
    return ["".join(t.itertext()) for t in root.iterfind(f".//s:text[@class='{cls}']", NS)]


def _rgb(colour: str) -> tuple[int, ...]:
    if colour.startswith("#"):
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(round(float(v)) for v in re.findall(r"[\d.]+", colour))


def _heatmap():
    return heatmaps.attention_heatmap(WEIGHTS, ["▁le", "▁chat", "</s>"], ["▁the", "▁cat", "▁sat", "</s>"],
                                      title="cross-attention, layer 0, head 1", query_name="target query",
                                      key_name="source key")


def test_one_cell_per_value_in_the_colour_scales_colour():
    drawing = svg_figure.draw(_heatmap(), 900)
    cells = _svg(drawing).findall(".//s:rect[@class='cell']", NS)
    assert len(cells) == WEIGHTS.size
    for cell in cells:
        r, c = int(cell.get("data-r")), int(cell.get("data-c"))
        expected = _rgb(pc.sample_colorscale("Blues", [WEIGHTS[r, c]])[0])  # plotly's own interpolation
        assert np.abs(np.subtract(_rgb(cell.get("fill")), expected)).max() <= 1, (r, c)
    # rows top-down (autorange reversed), columns left to right
    xs = {int(c.get("data-c")): float(c.get("x")) for c in cells}
    ys = {int(c.get("data-r")): float(c.get("y")) for c in cells}
    assert [xs[i] for i in range(4)] == sorted(xs.values()) and [ys[i] for i in range(3)] == sorted(ys.values())


def test_labels_titles_and_colour_bar_are_drawn_in_order():
    root = _svg(svg_figure.draw(_heatmap(), 900))
    assert _texts(root, "yt") == ["▁le", "▁chat", "</s>"]  # plotly's "&lt;" is drawn as "<"
    assert _texts(root, "xt") == ["▁the", "▁cat", "▁sat", "</s>"]
    assert _texts(root, "title") == ["cross-attention, layer 0, head 1"]
    assert set(_texts(root, "at")) == {"target query", "source key"}
    assert _texts(root, "cbn") == ["0", "0.2", "0.4", "0.6", "0.8", "1"] and _texts(root, "cbt") == ["weight"]


def test_a_subtitle_is_drawn_under_its_title():
    """The patching maps say their measure in the title's subtitle: it must not be dropped."""
    fig = _heatmap().update_layout(title=dict(y=1, yanchor="top", subtitle=dict(text="Δ log p(▁le) − log p(▁la)")),
                                   margin=dict(t=120))
    root = _svg(svg_figure.draw(fig, 900))
    assert _texts(root, "title") == ["cross-attention, layer 0, head 1"]
    assert _texts(root, "subtitle") == ["Δ log p(▁le) − log p(▁la)"]
    y = {t.get("class"): float(t.get("y")) for t in root.iter() if t.get("class") in ("title", "subtitle")}
    assert y["title"] < y["subtitle"]


def test_right_to_left_labels_keep_their_marks():
    pieces = ["▁ال", "ارض", "."]
    fig = heatmaps.attention_heatmap(np.full((3, 2), 0.5), pieces, ["▁the", "▁earth"])
    shown = _texts(_svg(svg_figure.draw(fig, 900)), "yt")
    assert shown == [t.replace("\u200b", "") or t for t in bidi.piece_labels(pieces)] or shown == bidi.piece_labels(
        pieces)
    assert shown[0].startswith(bidi.RLM)


def test_hover_names_both_tokens_and_the_weight():
    (area,) = svg_figure.draw(_heatmap(), 900).areas
    assert area.cells["text"][1][0] == "target query: ▁chat\nsource key: ▁the\nweight: 0.700"
    assert (area.cells["x0"], area.cells["y0"]) == (0, 0) and area.marks == []
    left, top, right, bottom = area.box
    assert area.x_range == (-0.5, 3.5) and area.y_range == (-0.5, 2.5) and left < right and top < bottom


def test_a_grid_of_maps_has_one_area_per_subplot_and_its_click_point():
    maps = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 4))  # (layers, heads, queries, keys)
    drawing = svg_figure.draw(heatmaps.model_view(maps), 900)
    assert len(_svg(drawing).findall(".//s:rect[@class='cell']", NS)) == maps.size
    assert [(a.xref, a.yref) for a in drawing.areas] == [(f"x{i}" if i > 1 else "x", f"y{i}" if i > 1 else "y")
                                                         for i in range(1, 7)]
    boxes = [a.box for a in drawing.areas]
    assert boxes[0][2] < boxes[1][0] < boxes[1][2] < boxes[2][0]  # a row of heads, left to right
    assert boxes[0][3] < boxes[3][1]  # layer 1 under layer 0
    for i, area in enumerate(drawing.areas):
        (mark,) = area.marks
        point = drawing.points[mark[3]]
        assert point["customdata"] == list(divmod(i, 3)) and point["curve_number"] == 2 * i + 1
        assert heatmaps.model_view_pick({"points": [point]}, 3) == divmod(i, 3)
        assert area.reach == float("inf")  # hoverdistance -1: the subplot's one marker takes every click
    assert _texts(_svg(drawing), "note") == ["head 0", "head 1", "head 2", "layer 0", "layer 1"]


def test_clickable_cells_carry_row_and_column_and_the_pick_is_outlined():
    fig = head_maps.clickable_heatmap(WEIGHTS, list("abc"), list("wxyz"), title="t", query_name="q", key_name="k",
                                      picked=(2, 1))
    drawing = svg_figure.draw(fig, 900)
    (area,) = drawing.areas
    assert area.cells is None  # the heatmap skips its hover: the markers over it take it, with the same text
    assert len(area.marks) == WEIGHTS.size
    px, py, text, index = area.marks[6]  # row 1, column 2
    assert head_maps.picked_cell({"points": [drawing.points[index]]}) == (1, 2)
    assert text == "q: b\nk: y\nweight: 0.100\nclick to open its arithmetic"
    (outline,) = _svg(drawing).findall(".//s:rect[@class='shape']", NS)
    cell = next(c for c in _svg(drawing).findall(".//s:rect[@class='cell']", NS)
                if (c.get("data-r"), c.get("data-c")) == ("2", "1"))
    centre = (float(cell.get("x")) + float(cell.get("width")) / 2, float(cell.get("y")) + float(cell.get("height")) / 2)
    assert float(outline.get("x")) < centre[0] < float(outline.get("x")) + float(outline.get("width"))
    assert float(outline.get("y")) < centre[1] < float(outline.get("y")) + float(outline.get("height"))
    assert (round(px, 1), round(py, 1)) != (round(centre[0], 1), round(centre[1], 1))  # mark 6 is another cell


def test_cell_numbers_turn_white_on_dark_cells_and_categories_place_the_best_ring():
    grid = np.array([[0.9, 0.1], [0.05, 0.5]])  # AER fractions: 90 % is dark red, 5 % dark green
    fig = gold_alignment.aer_grid(grid, grid.mean(1), title="AER %")
    root = _svg(svg_figure.draw(fig, 450))
    numbers = root.findall(".//s:text[@class='ct']", NS)
    assert ["".join(t.itertext()) for t in numbers] == ["90", "10", "50", "5", "50", "28"]
    assert numbers[0].get("fill") == "white" and numbers[2].get("fill") != "white"
    assert _texts(root, "xt") == ["h0", "h1", "mean"] and _texts(root, "yt") == ["layer 0", "layer 1"]
    (ring,) = root.findall(".//s:circle[@class='mk']", NS)
    cells = {(c.get("data-r"), c.get("data-c")): c for c in root.findall(".//s:rect[@class='cell']", NS)}
    best = cells[("1", "0")]
    assert float(best.get("x")) < float(ring.get("cx")) < float(best.get("x")) + float(best.get("width"))


def test_a_large_map_is_one_image_with_the_cells_colours():
    weights = np.random.default_rng(1).random((60, 50))
    drawing = svg_figure.draw(heatmaps.attention_heatmap(weights, [f"q{i}" for i in range(60)],
                                                          [f"k{i}" for i in range(50)]), 900)
    root = _svg(drawing)
    assert not root.findall(".//s:rect[@class='cell']", NS)
    (image,) = root.findall(".//s:image", NS)
    png = Image.open(io.BytesIO(base64.b64decode(image.get("href").split(",", 1)[1])))
    assert png.size == (50, 60)
    for r, c in [(0, 0), (59, 49), (17, 33)]:
        expected = _rgb(pc.sample_colorscale("Blues", [weights[r, c]])[0])
        assert np.abs(np.subtract(png.getpixel((c, r))[:3], expected)).max() <= 1


@pytest.mark.parametrize("fig", [
    go.Figure(go.Scattergl(x=[1, 2], y=[3, 4], mode="markers")),
    go.Figure([go.Bar(x=[1, 2], y=[3, 4]), go.Bar(x=[1, 2], y=[1, 1])], layout=dict(barmode="stack")),
    go.Figure(go.Scatter(x=[1, 2], y=[3, 4], mode="lines"), layout=dict(yaxis_type="log")),
    go.Figure(go.Scatter(x=[1, 2], y=[3, 4], mode="markers")),  # a scatter plot: markers on no heatmap
    go.Figure(go.Heatmap(z=[[1, 2]]), frames=[go.Frame(data=[go.Heatmap(z=[[2, 1]])])]),
    go.Figure(go.Heatmap(z=[[1, 2]], coloraxis="coloraxis")),
    go.Figure(go.Heatmap(z=[[1, 2]], x=[0, 5])),  # cells of unequal width
    go.Figure(go.Heatmap(z=[[1, 2]], text=[["<i>a</i>", "b"]], texttemplate="%{text}")),
    go.Figure(go.Heatmap(z=[[1, 2]]), layout=dict(title="x<sup>2</sup>")),
], ids=["scattergl", "stacked", "log", "scatter-plot", "frames", "colour-axis", "uneven", "html", "sup"])
def test_what_it_cannot_draw_exactly_is_left_to_plotly(fig):
    with pytest.raises(Unsupported):
        svg_figure.draw(fig, 900)
    assert svg_chart.show(None, fig, key="k", width=900, config=heatmaps.chart_config("x"), tip_px=13) is None


def test_an_unknown_plotly_chart_argument_is_left_to_plotly():
    assert svg_chart.show(None, _heatmap(), key="k", width=900, config=heatmaps.chart_config("x"), tip_px=13,
                          use_container_width=True) is None


def test_the_payload_carries_the_download_and_selection_modes():
    data = svg_chart.payload(_heatmap(), 900, config=heatmaps.chart_config("cross layer 1", "svg"),
                             modes=["points"], tip_px=13)
    assert data["config"]["toImageButtonOptions"] == {"format": "svg", "filename": "cross-layer-1"}
    assert data["modes"] == ["points"] and data["svg"].startswith("<svg") and data["width"] == 900
    assert data["figure"]["data"][0]["type"] == "heatmap"


def test_templates_and_markup():
    assert fill_template("weight: %{z:.3f}%{customdata[2]}<extra></extra>", {"z": 0.25, "customdata": ["a", "b",
                                                                                                       ""]}) == \
        "weight: 0.250"
    assert fill_template("%{z:+.2f} %{z:.1%} %{x}", {"z": -0.1261, "x": 3}) == "\u22120.13 \u221212.6% 3"
    assert lines_of("0.25<br><b>&lt;s&gt;</b>") == [[("0.25", False, None)], [("<s>", True, None)]]
    assert lines_of("a <span style='color:#7b3fa0'>✎ <b>b</b></span>c") == [
        [("a ", False, None), ("✎ ", False, "#7b3fa0"), ("b", True, "#7b3fa0"), ("c", False, None)]]
    for styled in ("<span style='font-size:9px'>a</span>", "<span>a</span>"):
        with pytest.raises(Unsupported):
            lines_of(styled)
    with pytest.raises(Unsupported):
        fill_template("%{marker.size}", {"z": 1})


def test_a_forced_candidate_is_drawn_with_its_violet_tick_not_left_to_plotly():
    bars = candidate_bars.ordered([5, 7, 9], ["▁chat", "▁chien", "</s>"], [0.2, 0.7, 0.1], chosen={5})
    fig = candidate_bars.candidates_figure(bars, rows=4, title="top 3 next tokens", forced=True)
    svg = svg_figure.draw(fig, 900).svg
    assert f'fill="{candidate_bars.FORCED}">{candidate_bars.FORCED_MARK}▁chat</tspan>' in svg


def test_candidate_bars_have_one_bar_per_token_with_its_number_and_the_chosen_outlined():
    bars = candidate_bars.ordered([5, 7, 9], ["▁chat", "▁chien", "</s>"], [0.2, 0.7, 0.1], chosen={7})
    fig = candidate_bars.candidates_figure(bars, rows=4, title="top 3 next tokens")
    drawing = svg_figure.draw(fig, 450)
    root = _svg(drawing)
    rects = root.findall(".//s:rect[@class='bar']", NS)
    widths = [float(r.get("width")) for r in rects]
    assert widths[0] / widths[1] == pytest.approx(0.7 / 0.2, rel=0.02) and widths[1] / widths[2] == pytest.approx(
        2, rel=0.02)
    assert [float(r.get("y")) for r in rects] == sorted(float(r.get("y")) for r in rects)  # most probable on top
    assert rects[0].get("stroke") == candidate_bars.CHOSEN and rects[1].get("stroke") is None
    assert _texts(root, "bt") == ["0.700", "0.200", "0.100"]
    assert _texts(root, "yt") == [candidate_bars.MARK + "▁chien", "▁chat", "</s>"]
    assert _texts(root, "xt") == ["0", "0.25", "0.5", "0.75", "1"]
    (area,) = drawing.areas
    assert [m[2] for m in area.marks] == ["▁chien\nmodel: 0.7000", "▁chat\nmodel: 0.2000", "</s>\nmodel: 0.1000"]


def test_lines_are_one_path_each_with_a_legend():
    pe = np.sin(np.arange(20)[:, None] / (1 + np.arange(4)))  # (positions, dimensions)
    root = _svg(svg_figure.draw(positional_figures.sinusoids(pe, [0, 2]), 900))
    paths = root.findall(".//s:path[@class='line']", NS)
    assert len(paths) == 2 and paths[0].get("stroke") != paths[1].get("stroke")
    assert len(paths[0].get("d").split("L")) == 20
    assert _texts(root, "lg") == ["dim 0", "dim 2"]
    assert set(_texts(root, "at")) == {"position", "value"}


def test_a_chart_is_drawn_at_its_columns_width_at_1280_px():
    assert svg_chart.column_px(class_mode.ROOT_PX) == class_mode.PAGE_PX  # class mode's page, as class_mode sizes it
    assert svg_chart.column_px(16) == 820 and svg_chart.column_px(16, 0.5) == (820 - 16) / 2  # two columns, a gap


def test_column_labels_that_would_run_into_each_other_are_thinned():
    fig = heatmaps.attention_heatmap(np.full((2, 40), 1 / 40), ["a", "b"], [f"▁w{i}" for i in range(40)])
    fig.update_xaxes(tickangle=-60, tickfont_size=18)  # as class mode draws them, in a narrow column
    root = _svg(svg_figure.draw(fig, 380))
    xs = [float(t.get("x")) for t in root.iterfind(".//s:text[@class='xt']", NS)]
    shown = _texts(root, "xt")
    step = int(shown[1].removeprefix("▁w"))
    assert step > 1 and shown == [f"▁w{i}" for i in range(0, 40, step)]  # every step-th, from the first
    gaps = np.diff(xs)
    assert gaps.min() >= 1.25 * 18 / np.sin(np.radians(60)) - 0.5  # a label's line height across, turned


def test_an_unescaped_token_is_shown_as_written():
    fig = head_maps.heads_map(np.ones((1, 2)), title="occlusion (word → <unk>)",
                              hover=[["weight on </s>: 0.13<br>x", "b"]])
    drawing = svg_figure.draw(fig, 600)
    assert drawing.areas[0].marks[0][2] == "weight on </s>: 0.13\nx"  # plotly would drop "</s>" as a tag
    assert _texts(_svg(drawing), "title") == ["occlusion (word → <unk>)"]


def test_a_trace_without_points_draws_nothing():
    fig = go.Figure([go.Bar(x=[], y=[]), go.Bar(x=[0, 1], y=[0.5, -0.25])], layout=dict(showlegend=False))
    assert len(_svg(svg_figure.draw(fig, 600)).findall(".//s:rect[@class='bar']", NS)) == 2


def test_bars_group_within_their_own_subplot():
    fig = make_subplots(rows=1, cols=2)
    for col in (1, 2):
        fig.add_trace(go.Bar(x=[0, 1, 2], y=[1, 2, 3], showlegend=False), row=1, col=col)
    fig.update_layout(bargap=0.25)
    root = _svg(svg_figure.draw(fig, 800))
    ax = next(a for a in svg_figure.draw(fig, 800).areas if a.xref == "x")
    slot = (ax.box[2] - ax.box[0]) / 3  # px per position
    widths = [float(r.get("width")) for r in root.findall(".//s:rect[@class='bar']", NS)]
    assert len(widths) == 6 and all(w == pytest.approx(0.75 * slot, abs=0.2) for w in widths)


def _fill_as_the_browser_does(cells: dict, r: int, c: int) -> str:
    """ui/shared/assets/svg_chart.js's cellText for a template, in Python."""
    def one(match):
        field, plus, digits = match.groups()
        if field != "z":
            return str(cells["xs"][c] if field == "x" else cells["ys"][r]).replace("-", "\u2212")
        v = cells["z"][r][c]
        return ("+" if plus and v >= 0 else "") + f"{v:.{digits}f}".replace("-", "\u2212")
    return re.sub(r"%\{(x|y|z)(?::(\+?)\.(\d+)f)?\}", one, cells["template"])


def test_a_large_maps_hover_is_a_template_the_browser_fills_in():
    pe = np.sin(np.arange(60)[:, None] / (1 + np.arange(128)))  # (positions, dimensions)
    fig = positional_figures.positional_heatmap(pe)
    (area,) = svg_figure.draw(fig, 820).areas
    cells = area.cells
    assert "text" not in cells and len(json.dumps(cells)) < 80_000  # the texts themselves would be ~300 kB
    for r, c in [(0, 0), (7, 100), (59, 127)]:
        expected = fill_template(fig.data[0].hovertemplate, {"z": pe[r, c], "x": c, "y": r})
        assert _fill_as_the_browser_does(cells, r, c) == expected == f"position {r}, dim {c}: {pe[r, c]:.3f}".replace(
            "-", "\u2212")

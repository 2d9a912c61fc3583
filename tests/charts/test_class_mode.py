"""Class mode's sizes on the SVG views and the Altair charts, checked on the charts' specs (and their SVG as
vl-convert draws it) and the views' markup: 18 px text at the least, labels left out rather than shrunk where they
would overlap, every chart in a column built for its share of the page. In a browser:
tests/browser/test_class_mode.py."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.app_fixtures import make_checkpoint
from tests.chart_reading import Drawn
from transformer.bidi import PDI
from transformer.charts import theme
from transformer.charts.heatmap import heatmap, mask_map
from transformer.charts.render import to_svg
from transformer.charts.theme import CLASS
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain import views
from transformer.model.checkpoint import load_checkpoint
from ui.explain import head_maps
from ui.shared.attention import gold_alignment
from ui.shared.state import class_mode


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")))


def _smallest_font(html: str) -> float:
    return min(float(px) for px in re.findall(r"font-size:(\d+(?:\.\d+)?)px", html))


def test_every_view_knows_its_smallest_text_and_class_mode_zooms_it_to_18_px(tiny):
    translation = tiny.translate("the woman reads a book .", attention=True)
    session = tiny.session("the woman reads a book .", SearchSettings(beam_size=3))
    session.run_to_end()
    drawn = [views.head_view(translation.attention), views.model_view(translation.attention),
             views.beam_tree(session.history, tiny.tokenizer.target_pieces, session.finished[0].tokens)]
    for view in drawn:
        assert view.font_px == _smallest_font(view.html), view.kind  # what the view says is what it draws
        big = view.zoomed(class_mode.LABEL_PX)
        factor = float(re.match(r'<div class="zoom" style="zoom:([\d.]+)">', big.html).group(1))
        assert view.font_px * factor == pytest.approx(class_mode.LABEL_PX, abs=0.01)
        exact = class_mode.LABEL_PX / view.font_px
        assert big.height == math.ceil(view.height * exact) and big.width == math.ceil(view.width * exact)
        assert big.zoomed(class_mode.LABEL_PX) is big  # already large enough: unchanged
    assert {view.font_px for view in drawn} == {theme.NORMAL.label, theme.NORMAL.view}  # the theme's sizes


def _axis_labels(chart, width: int) -> int:
    """How many column labels Vega keeps (greedy overlap removal) when it draws the chart `width` px wide."""
    svg = to_svg(chart, width)
    axis = re.search(r'<g class="mark-group role-axis"[^>]*aria-label="X-axis.*?</g></g></g>', svg, flags=re.S)
    labels = axis.group(0).split("role-axis-label", 1)[1].split("</g>", 1)[0]
    return len(re.findall(r'<text[^>]*opacity="1"', labels))


def test_a_half_width_mask_keeps_fewer_column_labels_than_a_whole_one_in_class_mode():
    labels = [f"▁word{i}" for i in range(18)]
    half, whole = class_mode_sizes(0.5), class_mode_sizes(1.0)
    half_chart = mask_map(np.ones((18, 18), dtype=bool), labels, labels, sizes=half)
    whole_chart = mask_map(np.ones((18, 18), dtype=bool), labels, labels, sizes=whole)
    assert half_chart.to_dict()["config"]["axis"]["labelFontSize"] == class_mode.LABEL_PX  # never shrunk
    kept_half, kept_whole = _axis_labels(half_chart, half.page - 100), _axis_labels(whole_chart, whole.page - 100)
    assert 0 < kept_half < 18 and kept_half < kept_whole  # left out where they would overlap, not run together


def class_mode_sizes(share: float):
    return dataclasses.replace(CLASS, page=round(CLASS.page * share))


def _cell_texts(chart, sizes, text: str) -> list[tuple[str, str]]:
    """(font size, opacity) of every cell text `text` as the chart draws it at its page width (vl-convert)."""
    svg = to_svg(chart, sizes.page - 100)  # the grid beside the row labels and the colour legend
    marks = "".join(re.findall(r'<g class="mark-text role-mark[^"]*"[^>]*>(.*?)</g>', svg))  # not the axes' labels
    return re.findall(rf'<text[^>]*font-size="([\d.]+)px"[^>]*opacity="([\d.]+)"[^>]*>{re.escape(text)}</text>',
                      marks)


def test_cell_numbers_are_written_only_where_they_fit():
    third = dataclasses.replace(CLASS, page=round(CLASS.page / 3))  # 16 heads across a third of the page
    small = _cell_texts(head_maps.heads_map(np.zeros((6, 16)), title="x", sizes=third), third, "0.00")
    assert len(small) == 6 * 16 and {o for _, o in small} == {"0"}  # left out, not shrunk (the hover keeps them)
    big = _cell_texts(head_maps.heads_map(np.zeros((2, 4)), title="x", sizes=CLASS), CLASS, "0.00")
    assert len(big) == 2 * 4 and set(big) == {(str(class_mode.LABEL_PX), "1")}  # at the class size


def test_the_aer_grids_columns_are_short_upright_and_keep_their_names_in_the_hover():
    heads = [[10.0, 20.0, 30.0, 40.0], [30.0, 40.0, 50.0, 60.0]]
    half = dataclasses.replace(theme.CLASS, page=theme.CLASS.page // 2)  # class mode, one of two columns
    class_half = Drawn.of(gold_alignment.aer_grid(heads, [25.0, 45.0], sizes=half))
    assert class_half.labels("x") == ["0", "1", "2", "3", "mean"]  # under the axis title "head"
    x = class_half.view("rect")["encoding"]["x"]
    assert x["title"] == "head" and x["axis"]["labelAngle"] == 0  # upright in class mode's half page
    tooltip = {t["field"]: t["title"] for t in class_half.view("rect", 1)["encoding"]["tooltip"]}
    assert (tooltip["row_label"], tooltip["col_label"]) == ("layer", "head")  # the hover reads "head: mean"
    assert class_half.data("rect")["col_label"].tolist()[:5] == ["0", "1", "2", "3", "mean"]


def test_every_chart_in_a_column_is_built_for_its_share_of_the_page():
    """Class mode lays a chart out for the part of the page its container has: a chart drawn into a column
    (ui.shared.charts.show.chart's first argument not st) is built with `sizes=` (class_mode.sizes(share)), in the
    call itself or in the assignment of the name it draws."""
    import ast

    root = Path(__file__).resolve().parents[2]
    found, missing = 0, []
    for path in [*sorted((root / "ui").rglob("*.py")), *sorted((root / "pages").glob("*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        sized = {name.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                 and {"sizes", "head_sizes"} & {k.arg for k in node.value.keywords}
                 for t in node.targets for name in ast.walk(t) if isinstance(name, ast.Name)}
        for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):  # for column, drawn in zip(.., sized)
            if {n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name)} & sized:
                sized |= {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "chart" and len(call.args) > 1):
                continue
            container, drawn = ast.unparse(call.args[0]), call.args[1]
            if container in ("st", "container"):
                continue
            found += 1
            ok = (isinstance(drawn, ast.Call) and "sizes" in {k.arg for k in drawn.keywords}) or (
                isinstance(drawn, ast.Name) and drawn.id in sized)
            if not ok:
                missing.append(f"{path.relative_to(root)}:{call.lineno} {container}")
    assert found >= 10 and missing == []


def test_the_logit_lens_keeps_its_top_tokens_in_class_mode():
    """Class mode dropped the logit lens's cell texts, the table's whole content: a cell's width was counted with
    its <b> tags and a piece's bidi isolates, and the colour bar twice (enlarge's right margin already holds it)."""

    from transformer.bidi import FSI
    from ui.explain import attribution_figures

    pieces = {1: "▁jeune", 2: "▁homme", 3: f"{FSI}▁وكلم{PDI}", 4: "</s>"}
    cells = [[SimpleNamespace(tokens=[t, 1], probs=[0.9, 0.1], output_prob=0.9, output_rank=0 if t % 2 else 1)
              for t in pieces] for _ in range(4)]  # 4 layers (embeddings + 3) x 4 positions
    lens = SimpleNamespace(cells=cells, layers=["embeddings", "layer 0", "layer 1", "layer 2"])
    table = attribution_figures.lens_table(lens, list(pieces.values()), pieces.get, sizes=CLASS)
    bold = [v for v in Drawn.of(table).views() if v["mark"].get("fontWeight") == "bold"]
    assert bold and bold[0]["transform"] == [{"filter": "datum.emitted"}]  # the emitted token in bold
    assert Drawn.of(table).data("rect")["emitted"].any()
    big = _cell_texts(table, CLASS, "▁homme")  # 4 layers' columns across the page: every top token written
    assert len(big) == 4 and set(big) == {(str(class_mode.LABEL_PX), "1")}
    third = dataclasses.replace(CLASS, page=round(CLASS.page / 3))
    small = _cell_texts(attribution_figures.lens_table(lens, list(pieces.values()), pieces.get, sizes=third), third,
                        "▁homme")
    assert len(small) == 4 and {o for _, o in small} == {"0"}  # where they cannot fit, still left out


def test_class_sizes_thin_column_labels_that_would_overlap_and_size_cell_text():
    big = Drawn.of(heatmap(np.full((2, 60), 1 / 60), ["a", "b"], [f"▁w{i}" for i in range(60)], sizes=theme.CLASS))
    assert big.spec["config"]["axis"]["labelFontSize"] == class_mode.LABEL_PX
    assert big.spec["config"]["axis"]["labelOverlap"] == "greedy"  # Vega leaves out the labels that would overlap
    assert big.view("rect")["encoding"]["x"]["axis"]["labelAngle"] == -90  # 60 columns: turned upright
    from ui.shared.attention import gold_alignment

    grid = Drawn.of(gold_alignment.aer_grid([[0.1, 0.2]], [0.15], title="AER", sizes=theme.CLASS))
    assert grid.view("text")["mark"]["fontSize"] == theme.CLASS.cell >= class_mode.LABEL_PX

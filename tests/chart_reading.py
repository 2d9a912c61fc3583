"""Reading the app's charts back in tests: the Vega-Lite spec and data of an Altair chart, as a builder returns it
or as an AppTest page drew it (st.altair_chart sends the spec and, apart, its data sets as Arrow).

`Drawn` flattens layers, facets and concatenations, decodes the axes' token labels (the builders label positions
through a `labelExpr` array) and gives each mark's data as a DataFrame, so that a test asserts numbers, labels and
marks rather than a picture.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa


@dataclass
class Drawn:
    spec: dict
    datasets: dict[str, pd.DataFrame]
    key: str = ""
    _views: list[dict] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, chart: alt.TopLevelMixin | dict) -> Drawn:
        """A chart as a builder returns it (its data sets inline)."""
        spec = chart if isinstance(chart, dict) else chart.to_dict()
        datasets = {name: pd.DataFrame(rows) for name, rows in spec.get("datasets", {}).items()}
        return cls(spec, datasets)

    def views(self) -> list[dict]:
        """Every unit view (one mark) in drawing order, with the data and encoding it inherits from above."""
        if not self._views:
            self._views = list(_units(self.spec, {}, {}))
        return self._views

    @property
    def title(self) -> str:
        return _text(self.spec.get("title"))

    @property
    def subtitle(self) -> str:
        title = self.spec.get("title")
        return _text(title.get("subtitle")) if isinstance(title, dict) else ""

    def marks(self) -> list[str]:
        return [_mark_type(v["mark"]) for v in self.views()]

    def view(self, mark: str, nth: int = 0) -> dict:
        return [v for v in self.views() if _mark_type(v["mark"]) == mark][nth]

    def data(self, mark: str = "rect", nth: int = 0) -> pd.DataFrame:
        """The data of the nth view drawing `mark` (before its own transforms)."""
        view = self.view(mark, nth)
        data = view.get("data") or {}
        if "name" in data:
            return self.datasets[data["name"]]
        return pd.DataFrame(data.get("values", []))

    def labels(self, channel: str, mark: str = "rect", nth: int = 0) -> list[str]:
        """The labels an axis draws for its positions (a builder's `labelExpr` array), else its domain."""
        enc = self.view(mark, nth)["encoding"][channel]
        expr = ((enc.get("axis") or {}).get("labelExpr")) or ""
        found = re.match(r"^(\[.*\])\[datum\.value\]$", expr, flags=re.S)
        if found:
            return json.loads(found.group(1))
        return [str(v) for v in (enc.get("scale") or {}).get("domain", [])]

    def params(self) -> list[dict]:
        """Every parameter of the chart (selections included), wherever it is declared."""
        found: list[dict] = []
        _walk_params(self.spec, found)
        return found

    def selections(self) -> dict[str, dict]:
        return {p["name"]: p["select"] for p in self.params() if "select" in p}


def _text(title) -> str:
    if isinstance(title, dict):
        title = title.get("text", "")
    if isinstance(title, list):
        return "\n".join(title)
    return title or ""


def _mark_type(mark) -> str:
    return mark["type"] if isinstance(mark, dict) else mark


def _units(node: dict, data: dict, encoding: dict) -> Iterator[dict]:
    data = node.get("data", data)
    encoding = {**encoding, **node.get("encoding", {})}
    if "mark" in node:
        yield {**node, "data": data, "encoding": encoding}
        return
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in node.get(key, []):
            yield from _units(child, data, encoding)
    if "spec" in node:
        yield from _units(node["spec"], data, encoding)


def _walk_params(node, found: list[dict]) -> None:
    if isinstance(node, dict):
        found.extend(p for p in node.get("params", []) or [] if isinstance(p, dict))
        for value in node.values():
            _walk_params(value, found)
    elif isinstance(node, list):
        for value in node:
            _walk_params(value, found)


def charts(at) -> list[Drawn]:
    """Every chart an AppTest run drew, in page order."""
    from streamlit import dataframe_util

    drawn = []
    for element in at.get("vega_lite_chart"):
        proto = element.proto
        datasets = {d.name: dataframe_util.convert_arrow_bytes_to_pandas_df(d.data.data) for d in proto.datasets}
        key = proto.id.rsplit("-", 1)[-1] if proto.id.startswith("$$ID-") else ""
        drawn.append(Drawn(json.loads(proto.spec), datasets, key))
    return drawn


def chart(at, key: str) -> Drawn:
    """The chart drawn under `key` (ui.shared.charts.show.chart always passes one)."""
    found = [c for c in charts(at) if c.key == key]
    assert found, f"no chart with key {key!r}; drawn: {[c.key for c in charts(at)]}"
    return found[0]


def calculated(drawn: Drawn) -> dict[str, object]:
    """The fields a chart computes for its marks (its `calculate` transforms, at any depth): {name: (labels, the
    field holding the position they are looked up by)} for a lookup into a label array (`["a","b"][datum.row]`),
    else {name: the expression}."""
    found: dict[str, object] = {}

    def walk(node) -> None:
        if isinstance(node, dict):
            for step in node.get("transform", []) or []:
                if "calculate" in step:
                    table = re.fullmatch(r"(\[.*\])\[datum\.(\w+)\]", step["calculate"], flags=re.S)
                    found[step["as"]] = (json.loads(table.group(1)), table.group(2)) if table else step["calculate"]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(drawn.spec)
    return found


def chart_titled(at, start: str) -> Drawn:
    """The first chart the page drew whose title starts with `start` (a chart without a selection carries no key)."""
    found = [c for c in charts(at) if c.title.startswith(start)]
    assert found, f"no chart titled {start!r}...; drawn: {[c.title for c in charts(at)]}"
    return found[0]


def map_values(drawn: Drawn) -> np.ndarray:
    """A heatmap's (`transformer.charts.heatmap`) values as its matrix, rows top-down (NaN where a cell has none)."""
    cells = drawn.data("rect")
    encoding = drawn.view("rect")["encoding"]
    out = np.full((len(encoding["y"]["scale"]["domain"]), len(encoding["x"]["scale"]["domain"])), np.nan)
    out[cells["row"].to_numpy(int), cells["col"].to_numpy(int)] = cells["value"].to_numpy(float)
    return out


def outlined_cells(drawn: Drawn, name: str) -> list[tuple[int, int]]:
    """The (row, col) cells a heatmap outlines as `name` ("gold link", "best", "picked": heatmap.OUTLINES), sorted."""
    from transformer.charts.heatmap import OUTLINES

    found = []
    for n, view in enumerate(v for v in drawn.views() if v["mark"] == "rect" or v["mark"]["type"] == "rect"):
        mark = view["mark"] if isinstance(view["mark"], dict) else {}
        if mark.get("filled") is False and mark.get("stroke") == OUTLINES[name]:
            cells = drawn.data("rect", n)
            assert set(cells["outline"]) == {name}  # the tooltip says what the outline marks
            found += zip(cells["row"].astype(int), cells["col"].astype(int))
    return sorted(found)


def curves_of(at) -> tuple[dict, dict]:
    """The training-curves view (`transformer.charts.training_curves`: panels stacked on one step axis)."""
    return next(view for view in altair_views(at) if "vconcat" in view[0])


def colour_domain(drawn: Drawn, mark: str = "rect") -> list:
    """The colour scale's domain of the first `mark` view that encodes colour."""
    view = next(v for v in drawn.views() if (v["mark"] if isinstance(v["mark"], str) else v["mark"]["type"]) == mark
                and "field" in v["encoding"].get("color", {}))
    return view["encoding"]["color"]["scale"]["domain"]


def altair_views(at) -> list[tuple[dict, dict]]:
    """Each Altair chart's Vega-Lite spec and its datasets (name -> DataFrame)."""
    return [(json.loads(el.proto.spec),
             {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in el.proto.datasets})
            for el in at.get("vega_lite_chart")]


def curve_points(view: tuple[dict, dict], metric: str) -> list[tuple[int, float]]:
    """(step, value) of one metric in the training-curves view."""
    spec, data = view
    frame = data[(spec.get("data") or spec["vconcat"][0]["layer"][0]["data"])["name"]]  # hoisted when shared
    rows = frame[frame["metric"] == metric]
    return list(zip(rows["step"].tolist(), rows["value"].tolist()))


def curve_panels(view: tuple[dict, dict]) -> list[str]:
    """The training-curves view's panel titles; asserts they share one step axis."""
    spec, _ = view
    assert spec["resolve"]["scale"]["x"] == "shared"
    assert all(layer["encoding"]["x"]["field"] == "step" for panel in spec["vconcat"] for layer in panel["layer"])
    return [panel["layer"][0]["encoding"]["y"]["title"] for panel in spec["vconcat"]]


def values(drawn: Drawn, rows: str = "row", cols: str = "col") -> np.ndarray:
    """A heatmap's numbers back as a matrix (its rect marks' data: one row per cell)."""
    data = drawn.data("rect")
    return data.pivot(index=rows, columns=cols, values="value").to_numpy(dtype=np.float64)


def colour_scale(drawn: Drawn) -> dict:
    """The colour scale of a heatmap's coloured cells."""
    return next(v for v in drawn.views() if "color" in v["encoding"])["encoding"]["color"]["scale"]

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
import pandas as pd


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

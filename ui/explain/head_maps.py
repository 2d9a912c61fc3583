"""Altair charts of the explain views: an attention map whose cells take clicks, layers x heads maps with a number
and a role in each cell, differences of two maps, and a probe's attention across training scrubbed in the browser.
Pure functions of arrays and labels, no streamlit (`ui.shared.charts.show` draws them; clicks come back as the
selection's fields, which `picked_cell` and `picked_head` read).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import reduce

import altair as alt
import numpy as np
import pandas as pd

from transformer.bidi import piece_labels
from transformer.charts import theme
from transformer.charts.heatmap import (
    CHAR_WIDTH,
    MAX_CELLS,
    WEIGHTS,
    Scale,
    colour_legend,
    diverging,
    heatmap,
    message,
)
from transformer.charts.theme import NORMAL, Sizes
from transformer.labels import HOVER_CHARS, shorten

CELL = "cell"  # the click selection of an attention map: fields row, col
HEAD = "head"  # the click selection of a layers x heads map: fields layer, head
CLICK_NOTE = "click the cell to open its arithmetic"


def _point(selection: Mapping | None, *fields: str) -> tuple[int, ...] | None:
    """The clicked point's fields as integers, or None (no click, or a point without them)."""
    if not selection or any(not isinstance(selection.get(f), int | float) for f in fields):
        return None
    return tuple(int(selection[f]) for f in fields)


def picked_cell(selection: Mapping | None) -> tuple[int, int] | None:
    """(row, column) of the cell a click selected on `clickable_heatmap` ({"row": 2, "col": 5}), or None."""
    return _point(selection, "row", "col")


def picked_head(selection: Mapping | None) -> tuple[int, int] | None:
    """(layer, head) of the cell a click selected on `heads_map` ({"layer": 1, "head": 3}), or None."""
    return _point(selection, "layer", "head")


def clickable_heatmap(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str,
                      query_name: str, key_name: str, picked: tuple[int, int] | None = None,
                      sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """An attention heatmap whose cells can be clicked (selection CELL over row and col); the picked cell is
    outlined."""
    return heatmap(weights, query_labels, key_labels, title=title, row_title=query_name, col_title=key_name,
                   notes=[CLICK_NOTE] * len(query_labels), note_title="click", select=CELL,
                   outlines={"picked": [picked] if picked is not None else []}, sizes=sizes)


def heads_map(values: np.ndarray, *, title: str, subtitle: str = "",
              hover: Sequence[Sequence[Mapping[str, str]]] | None = None, labels: Sequence[Sequence[str]] | None = None,
              diverging_scale: bool = False, fmt: str = ".2f", zmax: float | None = None, scale_title: str = "value",
              select: str | None = HEAD, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """values (L, H): one number per head, layers as rows, written in its cell; labels (L, H): a role written in
    bold under the number where it fits the cell at the page width `sizes` lays the chart out for (else in the
    tooltip only); hover (L, H): more lines of each cell's tooltip ({name: text}). diverging_scale: red positive,
    blue negative around 0, to ±zmax. select: a click selection over layer and head (None: no clicks)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.size == 0:
        return message("Nothing to show: no heads.", title=title, sizes=sizes)
    n_layers, n_heads = values.shape
    finite = values[np.isfinite(values)]
    top = zmax if zmax is not None else (float(np.abs(finite).max()) if finite.size else 1.0) or 1.0
    scale = (diverging(top, scale_title) if diverging_scale else
             Scale(theme.WEIGHTS, (min(0.0, float(finite.min(initial=0.0))), top), scale_title))
    layer, head = np.divmod(np.arange(values.size), n_heads)
    extra = [dict(hover[a][b]) if hover is not None else {} for a, b in zip(layer, head)]
    names = list(dict.fromkeys(name for cell in extra for name in cell))
    text = [f"{v:{fmt}}" if math.isfinite(v) else "—" for v in values.ravel()]
    roles = [labels[a][b] or "" for a, b in zip(layer, head)] if labels is not None else [""] * values.size
    px = sizes.cell
    column = (sizes.page - 100) / n_heads  # a cell's width beside the layer labels
    shown = [r if CHAR_WIDTH * px * len(r) + 4 <= column else "" for r in roles]  # the roles written in their cell
    data = pd.DataFrame({
        "layer": layer, "head": head, "value": np.where(np.isfinite(values.ravel()), values.ravel(), np.nan),
        "name": [f"layer {a}, head {b}" for a, b in zip(layer, head)], "text": text, "role": roles, "shown": shown,
        # the cell in one line: a static SVG's hover (the HTML report), a screen reader's
        "summary": [f"layer {a}, head {b}: {scale_title} {t}" + (f", {r}" if r else "") +
                    "".join(f"; {name}: {value}" for name, value in cell.items())
                    for a, b, t, r, cell in zip(layer, head, text, roles, extra)],
        **{f"extra_{i}": [cell.get(name, "") for cell in extra] for i, name in enumerate(names)}})
    x = alt.X("head:O", title=None, axis=alt.Axis(orient="top", labelExpr="'head ' + datum.value", labelAngle=0))
    y = alt.Y("layer:O", title=None, axis=alt.Axis(labelExpr="'layer ' + datum.value"))
    tooltip = [alt.Tooltip("name:N", title="head"), alt.Tooltip("value:Q", title=scale_title, format=fmt)]
    if labels is not None:
        tooltip.append(alt.Tooltip("role:N", title="role"))
    tooltip += [alt.Tooltip(f"extra_{i}:N", title=name) for i, name in enumerate(names)]
    base = alt.Chart(data).encode(x=x, y=y)
    legend = alt.Legend(title=scale_title, orient="bottom", direction="horizontal",  # under the grid: a map in a
                        gradientLength=max(80, min(200, sizes.page - 120)))  # third of the page keeps its width
    rect = base.mark_rect().encode(color=alt.Color("value:Q", scale=scale.encoding(), legend=legend),
                                   tooltip=tooltip, description="summary:N")
    if select is not None:
        rect = rect.add_params(alt.selection_point(name=select, fields=["layer", "head"], on="click", toggle=False))
    dark = 0.6 * max(abs(d) for d in scale.domain)
    ink = alt.condition(f"abs(datum.value) > {dark:g}", alt.value("white"), alt.value(theme.TEXT))
    number = base.mark_text(fontSize=px).encode(text="text:N", color=ink, opacity=_fits("text", px))
    layers = [base.mark_rect(color=theme.NO_VALUE).transform_filter("!isValid(datum.value)"), rect,
              number.transform_filter("datum.shown == ''")]
    if any(shown):  # a cell with its role written: the number above it
        layers += [number.mark_text(fontSize=px, dy=-0.6 * px).transform_filter("datum.shown != ''"),
                   base.mark_text(fontSize=px, fontWeight="bold", dy=0.7 * px).encode(
                       text="shown:N", color=ink, opacity=_fits("shown", px)).transform_filter("datum.shown != ''")]
    row = max(2 * sizes.row, round(3.4 * px)) if any(shown) else sizes.row + 10
    chart = alt.layer(*layers, title=alt.Title(title, subtitle=subtitle or alt.Undefined)).properties(
        width="container", height={"step": row})
    return theme.sized(chart, sizes)


def _fits(field: str, px: int) -> alt.ValueDefWithCondition:
    """Opaque where the cell's text fits its band as drawn (the chart's width follows the page), else invisible."""
    return alt.condition(f"bandwidth('x') >= {CHAR_WIDTH * px:.2f} * length(datum.{field}) + 4", alt.value(1),
                         alt.value(0))


def difference_heatmap(a: np.ndarray, b: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *,
                       title: str, names: tuple[str, str], divergence: int | None = None, query_name: str = "query",
                       key_name: str = "key", sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """a - b over the rows and columns both maps have (the first min(rows) and min(columns)), red where a has more
    weight, blue where b has; a dashed line marks the first row after a shared prefix (divergence)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    rows, cols = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    diff = a[:rows, :cols] - b[:rows, :cols]
    return heatmap(diff, list(query_labels[:rows]), list(key_labels[:cols]), title=title, row_title=query_name,
                   col_title=key_name, scale=diverging(1.0, f"{names[0]} − {names[1]}"), fmt="+.3f",
                   divider=divergence, sizes=sizes)


def _slider(steps: Sequence[int]) -> tuple[alt.Parameter, str]:
    """A range input over the snapshots' training steps, and the Vega expression of the snapshot it shows: the
    newest at or before the slider's step. Steps of unequal spacing (a last evaluation off the interval) move the
    slider by their greatest common divisor; past 500 positions it moves by snapshot instead."""
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    unit = reduce(math.gcd, gaps) if gaps else 1
    positions = (steps[-1] - steps[0]) // unit + 1 if gaps else 1
    if not gaps or positions > 500:
        param = alt.param(name="snapshot", value=len(steps) - 1,
                          bind=alt.binding_range(min=0, max=max(len(steps) - 1, 1), step=1, name="snapshot "))
        return param, "snapshot"
    index = np.searchsorted(steps, steps[0] + unit * np.arange(positions), side="right") - 1
    param = alt.param(name="snapshot_step", value=steps[-1],
                      bind=alt.binding_range(min=steps[0], max=steps[-1], step=unit, name="step "))
    return param, f"{json.dumps(index.tolist())}[round((snapshot_step - {steps[0]}) / {unit})]"


def training_animation(frames: Sequence[tuple[int, np.ndarray, Sequence[str], Sequence[str]]], *, title: str,
                       query_name: str, key_name: str, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """(step, weights (L_q, L_k), query labels, key labels) per snapshot: one heatmap and a step slider under it,
    scrubbed in the browser (a Vega-Lite parameter: no round trip to the server). Each snapshot keeps its own axis
    labels: the probe's translation, so its rows, change as the model learns. Snapshots beyond MAX_CELLS cells in
    all are thinned evenly (the newest kept), which the subtitle says."""
    if not frames:
        return message("No snapshot to show.", title=title, sizes=sizes)
    cells = [np.asarray(w).size for _, w, _, _ in frames]
    keep = list(range(len(frames)))
    while sum(cells[i] for i in keep) > MAX_CELLS and len(keep) > 1:
        keep = keep[::-1][::2][::-1]  # every other one, the newest kept
    shown = [frames[i] for i in keep]
    steps = [int(step) for step, *_ in shown]
    parts = []
    for i, (step, weights, rows, cols) in enumerate(shown):
        w = np.asarray(weights, dtype=np.float64)
        row, col = np.divmod(np.arange(w.size), max(w.shape[1], 1))
        names_r = [shorten(t, HOVER_CHARS) for t in piece_labels(rows)]
        names_c = [shorten(t, HOVER_CHARS) for t in piece_labels(cols)]
        parts.append(pd.DataFrame({"snapshot": i, "step": step, "row": row, "col": col, "value": w.ravel(),
                                   "row_label": np.asarray(names_r, dtype=object)[row],
                                   "col_label": np.asarray(names_c, dtype=object)[col]}))
    data = pd.concat(parts, ignore_index=True)
    param, index = _slider(steps)
    labels = lambda side: json.dumps([[shorten(t) for t in piece_labels(f[side])] for f in shown],  # noqa: E731
                                     ensure_ascii=False)
    longest = max((len(shorten(t)) for f in shown for t in f[3]), default=1)
    angle = 0 if CHAR_WIDTH * sizes.label * longest + 4 <= (sizes.page - 160) / max(len(f[3]) for f in shown) \
        else -60
    x = alt.X("col:O", title=key_name, axis=alt.Axis(orient="top", labelExpr=f"{labels(3)}[{index}][datum.value]",
                                                     labelAngle=angle, labelAlign="left" if angle else "center",
                                                     labelBaseline="middle" if angle else "bottom"))
    y = alt.Y("row:O", title=query_name, axis=alt.Axis(labelExpr=f"{labels(2)}[{index}][datum.value]"))
    subtitle = (f"{len(shown)} of {len(frames)} snapshots (every other one, so that the chart stays under "
                f"{MAX_CELLS:,} cells); drag the slider under the map" if len(shown) < len(frames) else
                "drag the slider under the map through the snapshots")
    chart = alt.Chart(data, title=alt.Title(alt.expr(f"{json.dumps(title + ': step ')} + {json.dumps(steps)}"
                                                     f"[{index}]"), subtitle=subtitle)).mark_rect().encode(
        x=x, y=y, color=alt.Color("value:Q", scale=WEIGHTS.encoding(), legend=colour_legend(
            WEIGHTS.title, min(len(f[2]) for f in shown) * sizes.row, sizes)),
        tooltip=[alt.Tooltip("step:Q", title="step"), alt.Tooltip("row_label:N", title=query_name),
                 alt.Tooltip("col_label:N", title=key_name), alt.Tooltip("value:Q", title="weight", format=".3f")],
    ).add_params(param).transform_filter(f"datum.snapshot == {index}").properties(
        width="container", height={"step": sizes.row})
    return theme.sized(chart, sizes)

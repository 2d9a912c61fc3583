"""Attention maps and other matrices as heatmaps: rows are queries, columns keys, the first query on top.

The axes are positions (0..n-1) labelled with the tokens, so that a token that occurs twice keeps two rows; every
label is shortened by the package's one rule (`transformer.labels`) and the tooltip names both tokens whole. A
right-to-left piece is drawn as `transformer.bidi.piece_labels` marks it. Cell numbers are written where they fit
the cell at the chart's drawn width (a Vega expression on the band's width), never shrunk below their size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from transformer.bidi import piece_labels
from transformer.charts import theme
from transformer.charts.theme import NORMAL, Sizes
from transformer.labels import HOVER_CHARS, LABEL_CHARS, shorten

MAX_CELLS = 40_000  # a map of more cells is not drawn (the app's limits keep a map under 16,000)
CHAR_WIDTH = 0.62  # a character's width in font sizes, generously (digits and signs)


@dataclass(frozen=True)
class Scale:
    """How values map to colours: a Vega scheme over a domain (reverse: the scheme's end for the low values), or
    fixed colours (a mask's two); legend False: no colour legend. dark: a Vega test of datum.value for the cells
    dark enough for white numbers (by default |value| over 0.6 of the domain's largest end)."""

    scheme: str | None
    domain: tuple[float, float]
    title: str
    reverse: bool = False
    mid: float | None = None
    colours: tuple[str, ...] = ()
    legend: bool = True
    dark: str = ""

    def encoding(self) -> alt.Scale:
        if self.colours:
            return alt.Scale(domain=list(self.domain), range=list(self.colours), clamp=True)
        extra = {} if self.mid is None else {"domainMid": self.mid}
        return alt.Scale(scheme=self.scheme, domain=list(self.domain), reverse=self.reverse, clamp=True, **extra)


WEIGHTS = Scale(theme.WEIGHTS, (0.0, 1.0), "weight")
MASK = Scale(None, (0.0, 1.0), "may attend", colours=(theme.MASKED, theme.MAY_ATTEND), legend=False)
OUTLINES = {"picked": theme.PICKED, "gold link": theme.GOLD, "best": theme.BEST}  # what an outlined cell means


def diverging(top: float, title: str = "difference") -> Scale:
    """Signed values on a red (positive) to blue (negative) scale centred at 0, running to ±top."""
    return Scale(theme.DIVERGING, (-top, top), title, reverse=True, mid=0.0)


def label_array(labels: Sequence[str], limit: int = LABEL_CHARS) -> str:
    """A Vega expression that maps a position (datum.value) to its shortened label."""
    return f"{json.dumps([shorten(t, limit) for t in labels], ensure_ascii=False)}[datum.value]"


def column_angle(n_columns: int, longest: int, sizes: Sizes, width: float) -> int:
    """Column labels upright when they fit their column, else turned 60 degrees, else 90 (Vega then leaves out
    the labels that would still overlap)."""
    column = width / max(n_columns, 1)
    if CHAR_WIDTH * sizes.label * longest + 4 <= column:
        return 0
    return -60 if 1.2 * sizes.label / math.sin(math.radians(60)) <= column else -90


def message(text: str, *, title: str = "", sizes: Sizes = NORMAL) -> alt.Chart:
    """A chart that says why it shows nothing (empty or too large data)."""
    chart = alt.Chart(pd.DataFrame({"text": [text]}), title=title or alt.Undefined).mark_text(
        color=theme.MUTED, fontSize=sizes.label, align="left", x=4).encode(text="text:N")
    return theme.sized(chart.properties(height=3 * sizes.label, width="container"), sizes)


def cells(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, texts: np.ndarray | None = None,
          notes: Sequence[str] | None = None) -> pd.DataFrame:
    """The tidy table of a matrix: one row per cell with its position, value, labels (as the tooltip shows them),
    the text written in it and a note for its row."""
    n_rows, n_cols = values.shape
    row, col = np.divmod(np.arange(n_rows * n_cols), max(n_cols, 1))
    row_names = [shorten(t, HOVER_CHARS) for t in piece_labels(rows)]
    col_names = [shorten(t, HOVER_CHARS) for t in piece_labels(cols)]
    flat = values.ravel()
    return pd.DataFrame({
        "row": row, "col": col, "value": np.where(np.isfinite(flat), flat, np.nan),
        "row_label": np.asarray(row_names, dtype=object)[row] if n_rows else [],
        "col_label": np.asarray(col_names, dtype=object)[col] if n_cols else [],
        "text": np.asarray(texts, dtype=object).ravel() if texts is not None else "",
        "note": np.asarray(list(notes), dtype=object)[row] if notes is not None else "",
    })


def heatmap(values, rows: Sequence[str], cols: Sequence[str], *, title: str = "", subtitle: str = "",
            row_title: str = "query", col_title: str = "key", scale: Scale = WEIGHTS, fmt: str = ".3f",
            texts=None, notes: Sequence[str] | None = None, note_title: str = "", select: str | None = None,
            outlines: dict[str, Sequence[tuple[int, int]]] | None = None, divider: int | None = None,
            divider_colour: str = "black", sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """values (rows, cols): a heatmap, rows top-down. texts (rows, cols): written in the cells where they fit;
    notes: a tooltip line per row (note_title names it); select: the name of a click selection over (row, col);
    outlines: {"picked" | "gold link" | "best": (row, col) cells} outlined in OUTLINES' colour; divider: a dashed
    line above that row, in divider_colour (theme.FORCED under forced pieces). sizes: the theme's, with the page
    width the chart is laid out for."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(rows), len(cols)):
        raise ValueError(f"values {values.shape} do not match {len(rows)} x {len(cols)} labels")
    if values.size == 0:
        return message("Nothing to show: the map has no rows or no columns.", title=title, sizes=sizes)
    if values.size > MAX_CELLS:
        return message(f"A map of {values.size:,} cells is more than a chart draws ({MAX_CELLS:,}): download the "
                       "maps to study it.", title=title, sizes=sizes)
    data = cells(values, rows, cols, texts=texts, notes=notes)
    shown_rows, shown_cols = piece_labels(rows), piece_labels(cols)
    longest = max((len(shorten(t)) for t in shown_cols), default=1)
    angle = column_angle(len(cols), longest, sizes, sizes.page - 60 - 7 * min(longest, LABEL_CHARS))
    x = alt.X("col:O", title=col_title, scale=alt.Scale(domain=list(range(len(cols)))),
              axis=alt.Axis(orient="top", labelExpr=label_array(shown_cols), labelAngle=angle,
                            labelAlign="left" if angle else "center", labelBaseline="middle" if angle else "bottom"))
    y = alt.Y("row:O", title=row_title, scale=alt.Scale(domain=list(range(len(rows)))),
              axis=alt.Axis(labelExpr=label_array(shown_rows)))
    tooltip = [alt.Tooltip("row_label:N", title=row_title), alt.Tooltip("col_label:N", title=col_title),
               alt.Tooltip("value:Q", title=scale.title, format=fmt)]
    if notes is not None:
        tooltip.append(alt.Tooltip("note:N", title=note_title or "note"))
    base = alt.Chart(data).encode(x=x, y=y)
    legend = alt.Legend(title=scale.title) if scale.legend else None
    rect = base.mark_rect().encode(color=alt.Color("value:Q", scale=scale.encoding(), legend=legend), tooltip=tooltip)
    layers = [base.mark_rect(color=theme.NO_VALUE).encode(tooltip=tooltip[:2]).transform_filter(
        "!isValid(datum.value) || !isFinite(datum.value)"), rect]
    if select is not None:
        pick = alt.selection_point(name=select, fields=["row", "col"], on="click", toggle=False)
        layers[1] = rect.add_params(pick)
    if texts is not None:
        layers.append(cell_text(base, texts, sizes, dark=scale.dark or
                                f"abs(datum.value) > {0.6 * max(abs(d) for d in scale.domain):g}"))
    for name, where in (outlines or {}).items():
        if where:
            layers.append(outline(x, y, name, where))
    if divider is not None and 0 < divider < len(rows):
        layers.append(alt.Chart(pd.DataFrame({"row": [divider]})).mark_rule(
            color=divider_colour, strokeDash=[6, 4], strokeWidth=2).encode(y=alt.Y("row:O", bandPosition=0)))
    title_block = alt.Title(title, subtitle=subtitle or alt.Undefined) if title else alt.Undefined
    chart = alt.layer(*layers, title=title_block).properties(width="container", height={"step": sizes.row})
    return theme.sized(chart, sizes)


def cell_text(base: alt.Chart, texts, sizes: Sizes, dark: str) -> alt.Chart:
    """The cells' texts at the cell font, drawn only while the longest one fits its band as drawn (a Vega
    expression: the chart's width follows the window), white on the cells the Vega test `dark` finds dark."""
    px = sizes.cell
    longest = max((len(str(t)) for t in np.asarray(texts, dtype=object).ravel()), default=1)
    fits = f"bandwidth('x') >= {CHAR_WIDTH * px * longest + 4:.1f} && bandwidth('y') >= {1.15 * px:.1f} ? 1 : 0"
    return base.mark_text(fontSize=px, opacity=alt.expr(fits)).encode(
        text="text:N", color=alt.condition(dark, alt.value("white"), alt.value(theme.TEXT)))


def outline(x: alt.X, y: alt.Y, name: str, where: Sequence[tuple[int, int]]) -> alt.Chart:
    """(row, col) cells outlined in the colour OUTLINES gives `name` (the picked cell, gold links, the best head),
    their tooltip saying which."""
    data = pd.DataFrame([(r, c, name) for r, c in where], columns=["row", "col", "outline"])
    return alt.Chart(data).mark_rect(filled=False, stroke=OUTLINES[name], strokeWidth=3).encode(
        x=x, y=y, tooltip=alt.Tooltip("outline:N", title="marks"))


def mask_map(mask, rows: Sequence[str], cols: Sequence[str], *, title: str = "", sizes: Sizes = NORMAL
             ) -> alt.TopLevelMixin:
    """A boolean mask (True = may attend) in two colours; a cell's tooltip says "may attend: 1" or "0"."""
    return heatmap(np.asarray(mask, dtype=np.float64), rows, cols, title=title, scale=MASK, fmt="d", sizes=sizes)

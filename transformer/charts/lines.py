"""Lines of values against a step or a position, one per series (the sinusoids of Section 3.5, a run's metrics),
with the values in the tooltip and a legend on top."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd

from transformer.charts import theme
from transformer.charts.heatmap import message
from transformer.charts.theme import NORMAL, Sizes


def long_form(series: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> pd.DataFrame:
    """{name: (xs, ys)} as one row per point: x, y, series (in the mapping's order); non-finite values dropped."""
    rows = [(float(x), float(y), name, i) for i, (name, (xs, ys)) in enumerate(series.items())
            for x, y in zip(xs, ys)]
    data = pd.DataFrame(rows, columns=["x", "y", "series", "order"])
    return data[pd.notna(data["y"]) & (data["y"].abs() != float("inf"))]


def line_chart(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, x_title: str, y_title: str,
               title: str = "", y_domain: tuple[float, float] | None = None, log_y: bool = False,
               integer_x: bool = True, height: int = 260, colours: Sequence[str] | None = None,
               sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """One line per series ({name: (xs, ys)}); points are marked while a line has fewer than 30; a series of one
    point is a point on an axis around it."""
    data = long_form(series)
    if data.empty:
        return message("no values yet", title=title, sizes=sizes)
    names = list(dict.fromkeys(data["series"]))
    xs = sorted(set(data["x"]))
    x_scale = alt.Scale(domain=[xs[0] - 1, xs[0] + 1]) if len(xs) == 1 else alt.Scale(nice=False, zero=False)
    x = alt.X("x:Q", title=x_title, scale=x_scale,
              axis=alt.Axis(format="~d" if integer_x else ",~f", tickMinStep=1 if integer_x else alt.Undefined))
    lo, hi = float(data["y"].min()), float(data["y"].max())
    if y_domain is None and not log_y and lo == hi:  # one value: an axis around it, not a zero-height scale
        y_domain = (lo - (abs(lo) * 0.1 or 1.0), hi + (abs(hi) * 0.1 or 1.0))
    y_scale = alt.Scale(type="log") if log_y else alt.Scale(zero=False, domain=list(y_domain) if y_domain else
                                                              alt.Undefined)
    colour = alt.Color("series:N", title=None, sort=names, legend=alt.Legend(orient="top", direction="horizontal"),
                       scale=alt.Scale(domain=names, range=list(colours or theme.CATEGORIES)[: len(names)])
                       if colours or len(names) <= len(theme.CATEGORIES) else alt.Undefined)
    points = data.groupby("series")["x"].count().min() < 30
    chart = alt.Chart(data, title=title or alt.Undefined).mark_line(point=bool(points)).encode(
        x=x, y=alt.Y("y:Q", title=y_title, scale=y_scale, axis=alt.Axis(format=",~f")), color=colour,
        order="x:Q", tooltip=[alt.Tooltip("series:N", title="series"), alt.Tooltip("x:Q", title=x_title),
                              alt.Tooltip("y:Q", title=y_title, format=".4~g")])
    return theme.sized(chart.properties(width="container", height=height), sizes)

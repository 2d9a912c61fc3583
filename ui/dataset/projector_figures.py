"""The projector's chart: token states in 2-D, the tooltip showing the token in its sentence. Altair, a pure
function of `transformer.explain.dataset_slices.projector_points`, no streamlit: kept apart from
`ui.dataset.projector`, which draws it, so that tests read its spec and data alone.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from transformer.bidi import PDI, RLI, is_rtl, isolate
from transformer.charts import theme
from transformer.charts.theme import NORMAL, Sizes
from transformer.labels import HOVER_CHARS, shorten

# Tokens drawn at most, the first sentences' when there are more: Vega draws 20,000 points on a canvas in a moment,
# and the chart's data (a token and its sentence per point) stays a few MB.
MAX_POINTS = 20_000
POSITIONS = "viridis"  # a sequential scheme for the position in the sentence (light: late)
CONTEXT_CHARS = 80  # a sentence in a tooltip: the part around its token (20,000 whole sentences would be MBs)


def around(context: str, token: str, limit: int = CONTEXT_CHARS) -> str:
    """The sentence (its token in brackets) cut to `limit` characters around the token, an ellipsis where cut."""
    if len(context) <= limit:
        return context
    at = max(context.find(f"[{token}]"), 0)
    start = max(0, min(at - limit // 2, len(context) - limit))
    return ("…" if start else "") + context[start:start + limit] + ("…" if start + limit < len(context) else "")


def contexts(points: pd.DataFrame) -> list[str]:
    """Each token's sentence around it, isolated right to left where the sentence reads so (decided once a
    sentence: scanning 20,000 contexts letter by letter takes seconds)."""
    shown = [around(str(c), str(t)) for c, t in zip(points["context"], points["token"])]
    first = dict(zip(points["sentence"][::-1], shown[::-1]))  # a sentence's first context
    rtl = {s for s, c in first.items() if is_rtl(c)}
    return [f"{RLI}{c}{PDI}" if s in rtl else c for s, c in zip(points["sentence"], shown)]


def projector_scatter(points: pd.DataFrame, colour: str, title: str, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Tokens at their 2-D places, coloured by `colour` (a column of points: "position" on a sequential scale, any
    other as categories, in the order they first appear); the tooltip shows the token in its sentence."""
    points = points.head(MAX_POINTS)
    data = pd.DataFrame({
        "x": points["x"].astype(float), "y": points["y"].astype(float),
        "token": [isolate(shorten(str(t), HOVER_CHARS)) for t in points["token"]],
        "sentence": points["sentence"].astype(int), "position": points["position"].astype(int),
        "context": contexts(points)})
    if colour == "position":
        colour_encoding = alt.Color("position:Q", scale=alt.Scale(scheme=POSITIONS),
                                    legend=alt.Legend(title="position"))
    else:
        data["group"] = points[colour].astype(str).to_numpy()
        names = list(dict.fromkeys(data["group"]))
        colour_encoding = alt.Color("group:N", title=colour.replace("_", " "), sort=names,
                                    scale=alt.Scale(domain=names, range=list(theme.CATEGORIES)[: len(names)])
                                    if len(names) <= len(theme.CATEGORIES) else
                                    alt.Scale(domain=names, scheme="tableau20"),  # 17 constructions: 20 colours
                                    legend=alt.Legend(orient="right", symbolOpacity=1))  # a slice a line
    chart = alt.Chart(data, title=title or alt.Undefined).mark_circle(size=24, opacity=0.7).encode(
        x=alt.X("x:Q", title="PC 1", axis=alt.Axis(format=",~f")),
        y=alt.Y("y:Q", title="PC 2", axis=alt.Axis(format=",~f")),
        color=colour_encoding,
        tooltip=[alt.Tooltip("token:N", title="token"), alt.Tooltip("sentence:Q", title="sentence"),
                 alt.Tooltip("position:Q", title="position"), alt.Tooltip("context:N", title="in its sentence")],
    ).properties(width="container", height=540)
    return theme.sized(chart, sizes)

"""A run's training curves as one linked view: panels stacked on a shared step axis (the Train page, Explain heads'
attention across training).

Hovering any panel draws a rule at the nearest logged step across all of them, with that step's values;
`cursor` adds a fixed red rule (the step the attention-across-training scrubber shows).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import altair as alt
import pandas as pd

from transformer.charts import theme
from transformer.charts.theme import NORMAL, Sizes

# (panel title, metric keys): the Train page's loss, BLEU and learning-rate curves
PANELS = (("loss", ("train_loss", "dev_loss")), ("dev BLEU / chrF", ("dev_bleu", "dev_chrf")),
          ("learning rate", ("lr",)))
CURSOR_COLOR = theme.PICKED
# Human names and colours of the metrics: train and dev of one panel in clearly different hues (one scheme's two
# shades of blue would not be), so a projected slide still tells them apart.
NAMES = {"train_loss": "train loss", "dev_loss": "dev loss", "dev_bleu": "dev BLEU", "dev_chrf": "dev chrF",
         "lr": "learning rate"}
_TABLEAU = theme.CATEGORIES  # blue, orange, green, red, purple, brown, ...
COLORS = {"train_loss": _TABLEAU[0], "dev_loss": _TABLEAU[1], "dev_bleu": _TABLEAU[2], "dev_chrf": _TABLEAU[4],
          "lr": _TABLEAU[5]}


def long_form(records: Sequence[dict], panels: Sequence[tuple[str, Sequence[str]]] = PANELS) -> pd.DataFrame:
    """One row per (step, metric, value, panel) that the records hold; `name` is the metric's human name."""
    rows = [{"step": r["step"], "metric": key, "name": NAMES.get(key, key), "value": float(r[key]), "panel": title}
            for title, keys in panels for key in keys for r in records if r.get(key) is not None and "step" in r]
    return pd.DataFrame(rows, columns=["step", "metric", "name", "value", "panel"])


def padded(lo: float, hi: float, pad: float) -> list[float]:
    """[lo, hi], widened to [lo - pad, hi + pad] when it is a single value: one logged point gets real axes rather
    than a zero-width scale whose only tick reads "25.000000"."""
    return [lo, hi] if hi > lo else [lo - pad, hi + pad]


def training_curves(records: Sequence[dict], *, cursor: int | None = None,
                    panels: Sequence[tuple[str, Sequence[str]]] = PANELS, height: int | None = None,
                    width: int | None = None, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Loss, BLEU/chrF and learning rate against step, one panel each (those with values), linked by a hover rule.
    width: px of a panel's plot (by default the page's width at these sizes, less the axes and legend)."""
    height = height or 150 * sizes.label // NORMAL.label
    width = width or sizes.page - 200
    data = long_form(records, panels)
    steps = data["step"] if len(data) else pd.Series([0, 1])
    ticks = max(3, width // (5 * sizes.label))  # a tick every 5 labels' heights or so: 18 px labels stay apart
    x = alt.X("step:Q", title="step", axis=alt.Axis(format="~d", tickMinStep=1, tickCount=ticks),
              scale=alt.Scale(domain=padded(int(steps.min()), int(steps.max()), 1), nice=False))
    hover = alt.selection_point(name="hover", fields=["step"], nearest=True, on="pointerover", empty=False,
                                clear="pointerout")
    views = []
    for title, _ in panels:
        part = data[data["panel"] == title]
        if part.empty:
            continue
        base = alt.Chart(data).transform_filter(alt.datum.panel == title).encode(x=x)
        lo, hi = float(part["value"].min()), float(part["value"].max())
        scale = alt.Scale(zero=False, domain=padded(lo, hi, abs(lo) * 0.1 or 1e-3)) if lo == hi else \
            alt.Scale(zero=False)
        y = alt.Y("value:Q", title=title, axis=alt.Axis(format=",~f"), scale=scale)
        shown = list(dict.fromkeys(part["metric"]))
        color = alt.Color("name:N", legend=alt.Legend(title=None, orient="top"),
                          scale=alt.Scale(domain=[NAMES.get(k, k) for k in shown],
                                          range=[COLORS.get(k, theme.MUTED) for k in shown]))
        lines = base.mark_line(point=part["step"].nunique() < 30).encode(y=y, color=color)
        points = base.mark_point(filled=True, size=60).encode(
            y=y, color=color, opacity=alt.condition(hover, alt.value(1.0), alt.value(0.0)),
            tooltip=["step:Q", alt.Tooltip("name:N", title="metric"), alt.Tooltip("value:Q", format=".4g")]
        ).add_params(hover)
        rule = base.mark_rule(color=theme.MUTED).encode(x="step:Q").transform_filter(hover)
        layers = [lines, points, rule]
        if cursor is not None:
            layers.append(alt.Chart(pd.DataFrame({"step": [cursor]})).mark_rule(
                color=CURSOR_COLOR, strokeWidth=2).encode(x="step:Q"))
        views.append(alt.layer(*layers).properties(height=height, width=width))
    if not views:
        views.append(alt.Chart(pd.DataFrame({"text": ["no values yet"]})).mark_text(
            color=theme.MUTED, size=sizes.label).encode(text="text:N").properties(height=height, width=width))
    with warnings.catch_warnings():  # one hover parameter shared by every panel is the point here
        warnings.filterwarnings("ignore", message="Automatically deduplicated selection parameter")
        chart = alt.vconcat(*views).resolve_scale(x="shared", y="independent", color="independent")
        return theme.sized(chart, sizes)

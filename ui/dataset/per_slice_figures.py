"""Charts of the per-slice view: a metric per slice as bars, one head statistic per slice as a heatmap (slices x
heads). Altair, pure functions of pandas tables and numbers, no streamlit: kept apart from `ui.dataset.per_slice`,
which draws them, so that tests read their spec and data alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from transformer.charts import theme
from transformer.charts.heatmap import CHAR_WIDTH, Scale, column_angle, heatmap
from transformer.charts.theme import NORMAL, Sizes
from transformer.labels import LABEL_CHARS

METRICS = {"chrf": "chrF (corpus)", "bleu": "BLEU (corpus)", "exact": "exact match %", "mean_prob": "mean p(token)",
           "length_ratio": "length ratio", "mean_sentence_chrf": "mean sentence chrF"}
BAR = theme.CATEGORIES[0]


def slice_bars(metrics: pd.DataFrame, metric: str, label: str, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """One bar per slice, in the table's order, its value written on top where it fits the bar; the tooltip gives
    the value and the slice's number of sentences."""
    data = pd.DataFrame({"slice": metrics["slice"].astype(str), "value": metrics[metric].astype(float),
                         "sentences": metrics["sentences"].astype(int)})
    data["text"] = [f"{v:.1f}" if np.isfinite(v) else "" for v in data["value"]]
    longest = max((len(s) for s in data["slice"]), default=1)
    # upright when they fit, else straight up: Vega compares turned labels by their upright boxes, and at 60
    # degrees long slice names would leave out every other one
    angle = 0 if column_angle(len(data), min(longest, LABEL_CHARS), sizes, sizes.page - 80) == 0 else -90
    x = alt.X("slice:N", sort=list(data["slice"]), title="slice",
              axis=alt.Axis(labelAngle=angle, labelAlign="right" if angle else "center",
                            labelBaseline="middle" if angle else "top", labelLimit=LABEL_CHARS * sizes.label // 2))
    y = alt.Y("value:Q", title=label, axis=alt.Axis(format=",~f"))
    tooltip = [alt.Tooltip("slice:N"), alt.Tooltip("value:Q", title=label, format=".2f"),
               alt.Tooltip("sentences:Q", title="sentences")]
    base = alt.Chart(data).encode(x=x, y=y, tooltip=tooltip)
    widest = max((len(t) for t in data["text"]), default=1)  # a bar's number, written only where it fits the bar
    fits = f"bandwidth('x') >= {CHAR_WIDTH * sizes.cell * widest + 2:.1f} ? 1 : 0"
    numbers = base.mark_text(baseline="bottom", dy=-3, fontSize=sizes.cell, opacity=alt.expr(fits)).encode(
        text="text:N")
    chart = alt.layer(base.mark_bar(color=BAR), numbers).properties(
        width="container", height=300 * sizes.label // NORMAL.label)
    return theme.sized(chart, sizes)


def slice_heads(values: np.ndarray, slice_names: Sequence[str], head_names: Sequence[str], label: str,
                sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """values (slices, heads) of one statistic: which heads do what on which kind of sentence; the colour scale runs
    over the values' own range (a statistic is not a weight in 0..1)."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    scale = Scale(theme.WEIGHTS, (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5), label)
    texts = np.vectorize(lambda v: f"{v:.2f}" if np.isfinite(v) else "")(values) if values.size else None
    return heatmap(values, list(slice_names), list(head_names), row_title="slice", col_title="layer.head",
                   scale=scale, texts=texts, sizes=sizes)

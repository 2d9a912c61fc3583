"""The Train page's curves of single metrics against step (tokens / s, dev alignment error, dev exact match), beside
the linked panels of `transformer.charts.training_curves`. Altair, no streamlit."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from transformer.charts.lines import line_chart
from transformer.charts.theme import NORMAL, Sizes

METRIC_NAMES = {"tokens_per_s": "tokens / s", "dev_aer_best": "best head", "dev_exact": "dev exact match"}


def metric_name(key: str) -> str:
    """A metric's name for a legend: "tokens / s", "layer 1 (mean of heads)", else the key with spaces."""
    if key.startswith("dev_aer_layer"):
        return f"layer {key.removeprefix('dev_aer_layer')} (mean of heads)"
    return METRIC_NAMES.get(key, key.replace("_", " "))


def metric_curves(records: Sequence[dict], keys: Sequence[str], *, title: str = "", y_title: str = "",
                  log_y: bool = False, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Lines of metric keys against step, each from the records that have it (train or eval records); a chart that
    says "no values yet" before any (dev metrics before the first evaluation)."""
    series = {}
    for key in keys:
        points = [(r["step"], r[key]) for r in records if r.get(key) is not None and "step" in r]
        if points:
            series[metric_name(key)] = tuple(zip(*points))
    return line_chart(series, x_title="step", y_title=y_title or title, title=title, log_y=log_y,
                      height=260 * sizes.label // NORMAL.label, sizes=sizes)  # taller with class mode's labels

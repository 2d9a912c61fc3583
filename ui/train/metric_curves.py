"""The Train page's plotly curves of single metrics against step (tokens / s, dev alignment error, dev exact
match), beside the linked Altair panels of ui.shared.charts.training_curves. No streamlit."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

METRIC_NAMES = {"tokens_per_s": "tokens / s", "dev_aer_best": "best head", "dev_exact": "dev exact match"}


def metric_name(key: str) -> str:
    """A metric's name for a legend: "tokens / s", "layer 1 (mean of heads)", else the key with spaces."""
    if key.startswith("dev_aer_layer"):
        return f"layer {key.removeprefix('dev_aer_layer')} (mean of heads)"
    return METRIC_NAMES.get(key, key.replace("_", " "))


CURVE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def metric_curves(records: Sequence[dict], keys: Sequence[str], *, title: str = "", log_y: bool = False) -> go.Figure:
    """Lines of metric keys against step, each from the records that have it (train or eval records)."""
    fig = go.Figure()
    for key in keys:
        points = [(r["step"], r[key]) for r in records if r.get(key) is not None and "step" in r]
        if points:
            steps, values = zip(*points)
            mode = "lines+markers" if len(points) < 30 else "lines"
            fig.add_trace(go.Scatter(x=list(steps), y=list(values), mode=mode, name=metric_name(key)))
    if not fig.data:  # e.g. dev metrics before the first evaluation: say so rather than draw empty axes
        fig.add_annotation(text="no values yet", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                           font=dict(size=14, color="#888888"))
        fig.update_xaxes(showticklabels=False)
        fig.update_yaxes(showticklabels=False)
    fig.update_layout(title=title or None, height=260, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      xaxis_title="step", yaxis_type="log" if log_y else "linear",
                      legend=dict(orientation="h", y=-0.3), colorway=CURVE_COLORS)
    single = {x for trace in fig.data for x in trace.x}
    if len(single) == 1:  # one logged step: a range around it, one tick at it (plotly's half steps read "250 250")
        (step,) = single
        fig.update_xaxes(range=[step - 1, step + 1], tickmode="array", tickvals=[step], ticktext=[str(step)])
    fig.update_yaxes(tickformat="~g")
    return fig

"""Plotly figures of the per-slice view: a metric per slice as bars, one head statistic per slice as a heatmap
(slices x heads). Pure functions of pandas tables and numbers, no streamlit: kept apart from `ui.dataset.per_slice`,
which draws them, so that tests read their JSON alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ui.shared.heatmaps import escape

METRICS = {"chrf": "chrF (corpus)", "bleu": "BLEU (corpus)", "exact": "exact match %", "mean_prob": "mean p(token)",
           "length_ratio": "length ratio", "mean_sentence_chrf": "mean sentence chrF"}


def slice_bars(metrics: pd.DataFrame, metric: str, label: str) -> go.Figure:
    """One bar per slice; the hover gives its number of sentences."""
    fig = go.Figure(go.Bar(x=[escape(s) for s in metrics["slice"]], y=metrics[metric],
                           customdata=metrics["sentences"], marker_color="#2e6da4",
                           hovertemplate="%{x}<br>" + label + ": %{y:.2f}<br>%{customdata} sentences<extra></extra>"))
    fig.update_layout(yaxis_title=label, height=360, margin=dict(l=10, r=10, t=30, b=10), xaxis_tickangle=-30)
    return fig


def slice_heads(values: np.ndarray, slice_names: Sequence[str], head_names: Sequence[str], label: str) -> go.Figure:
    """values (slices, heads) of one statistic: which heads do what on which kind of sentence."""
    fig = go.Figure(go.Heatmap(z=values, x=list(head_names), y=[escape(s) for s in slice_names], colorscale="Blues",
                               colorbar=dict(title=dict(text=label, side="right")),
                               hovertemplate="%{y}, head %{x}<br>" + label + ": %{z:.3f}<extra></extra>"))
    fig.update_layout(height=max(240, 28 * len(slice_names) + 120), margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="layer.head", xaxis_type="category", yaxis_autorange="reversed")
    return fig


"""The Learn page's section 1: the sinusoidal positional encodings (Section 3.5) as a heatmap and as curves.
Plotly, no streamlit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go


def positional_heatmap(pe: np.ndarray) -> go.Figure:
    """pe (positions, d_model): the sinusoidal table of Section 3.5."""
    pe = np.asarray(pe, dtype=np.float64)
    fig = go.Figure(go.Heatmap(z=pe, zmin=-1, zmax=1, colorscale="RdBu",
                               hovertemplate="position %{y}, dim %{x}: %{z:.3f}<extra></extra>"))
    # Fixed margins wide enough for 3-digit tick numbers and the axis titles beside them.
    fig.update_layout(height=380, margin=dict(l=75, r=10, t=10, b=55),
                      xaxis=dict(title=dict(text="dimension i", standoff=8)),
                      yaxis=dict(title=dict(text="position", standoff=8), autorange="reversed"))
    return fig


def sinusoids(pe: np.ndarray, dims: Sequence[int]) -> go.Figure:
    """Selected columns of the positional table as curves over position."""
    pe = np.asarray(pe, dtype=np.float64)
    fig = go.Figure([go.Scatter(x=np.arange(len(pe)), y=pe[:, d], mode="lines", name=f"dim {d}") for d in dims])
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=10, b=10), xaxis_title="position",
                      yaxis=dict(title="value", range=[-1.1, 1.1]))
    return fig

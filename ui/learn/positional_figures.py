"""The Learn page's section 1: the sinusoidal positional encodings (Section 3.5) as a heatmap and as curves.
Altair, no streamlit."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from transformer.charts import theme
from transformer.charts.heatmap import diverging
from transformer.charts.lines import line_chart
from transformer.charts.theme import NORMAL, Sizes


def positional_heatmap(pe: np.ndarray, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """pe (positions, d_model): the sinusoidal table of Section 3.5, a cell per position and dimension."""
    pe = np.asarray(pe, dtype=np.float64)
    position, dim = np.indices(pe.shape).reshape(2, -1)
    data = pd.DataFrame({"position": position, "dim": dim, "value": pe.ravel()})
    every = max(1, pe.shape[1] // 16)  # a tick every `every` dimensions: 16 or so across the page
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("dim:O", title="dimension i", axis=alt.Axis(values=list(range(0, pe.shape[1], every)), labelAngle=0)),
        y=alt.Y("position:O", title="position", axis=alt.Axis(values=list(range(0, pe.shape[0], 10)))),
        color=alt.Color("value:Q", scale=diverging(1.0, "value").encoding(), legend=alt.Legend(title="value")),
        tooltip=["position:O", alt.Tooltip("dim:O", title="dimension"), alt.Tooltip("value:Q", format=".3f")],
    ).properties(width="container", height=380)
    return theme.sized(chart, sizes)


def sinusoids(pe: np.ndarray, dims: Sequence[int], sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Selected columns of the positional table as curves over position."""
    pe = np.asarray(pe, dtype=np.float64)
    positions = np.arange(len(pe))
    return line_chart({f"dim {d}": (positions, pe[:, d]) for d in dims}, x_title="position", y_title="value",
                      y_domain=(-1.1, 1.1), height=300, sizes=sizes)

"""Plotly figure of the projector view: token states in 2-D, hover showing the token in its sentence. A pure
function of `transformer.explain.dataset_slices.projector_points`, no streamlit: kept apart from
`ui.dataset.projector`, which draws it, so that tests read its JSON alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from transformer.bidi import isolate
from ui.shared.heatmaps import escape

MAX_POINTS = 20_000  # tokens drawn at most (WebGL); the first sentences' when there are more


def projector_scatter(points: pd.DataFrame, colour: str, title: str) -> go.Figure:
    """Tokens at their 2-D places, coloured by `colour` (a column of points: "position" on a scale, any other as
    categories); the hover shows the token in its sentence."""
    points = points.head(MAX_POINTS)
    hover = "<b>%{customdata[0]}</b> (sentence %{customdata[1]}, position %{customdata[2]})<br>%{customdata[3]}" \
            "<extra></extra>"
    data = lambda rows: np.stack([[isolate(escape(t)) for t in rows["token"]], rows["sentence"],  # noqa: E731
                                  rows["position"], [isolate(escape(c)) for c in rows["context"]]], axis=-1)
    if colour == "position":
        fig = go.Figure(go.Scattergl(x=points["x"], y=points["y"], mode="markers", customdata=data(points),
                                     hovertemplate=hover, marker=dict(size=6, color=points["position"],
                                                                      colorscale="Viridis", showscale=True,
                                                                      colorbar=dict(title="position"))))
    else:
        fig = go.Figure()
        for name, rows in points.groupby(colour, sort=False):
            fig.add_trace(go.Scattergl(x=rows["x"], y=rows["y"], mode="markers", name=escape(str(name)),
                                       customdata=data(rows), hovertemplate=hover, marker=dict(size=6)))
    fig.update_layout(title=title, height=560, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="PC 1",
                      yaxis_title="PC 2", legend=dict(itemsizing="constant"))
    return fig

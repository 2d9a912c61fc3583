"""Every chart of the app drawn on a page, at the sidebar's download format and class mode's sizes."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ui.shared import heatmaps, svg_chart
from ui.shared.state import class_mode


def chart(container: Any, fig, *, key: str, filename: str, share: float = 1.0, **kwargs) -> Any:
    """Every chart of the app: the figure drawn as SVG without plotly.js (`ui.shared.svg_chart`: heatmaps, bars and
    lines, with hover, clicks and box selections as st.plotly_chart reports them), else by st.plotly_chart (what the
    renderer cannot draw exactly); either saves `filename` in the sidebar's format (PNG or SVG). share: the part of
    the page's width its container has (0.5 in one of two columns), which class mode fits its labels to. kwargs:
    st.plotly_chart's (theme, on_select, selection_mode)."""
    config = heatmaps.chart_config(filename, st.session_state.get("chart_format", "png"))
    fig = heatmaps.without_zero_lines(go.Figure(fig))  # a copy: a cached figure stays as it was
    if class_mode.is_on():
        fig = heatmaps.fit_cell_numbers(class_mode.enlarge(fig, share), class_mode.CELL_PX, class_mode.PAGE_PX, share,
                                        class_mode.COLOUR_BAR_PX)
    else:
        fig = heatmaps.fit_cell_numbers(class_mode.thin_columns(fig, share), share=share)
    root_px, tip_px = (class_mode.ROOT_PX, class_mode.LABEL_PX) if class_mode.is_on() else (16, 13)
    drawn = svg_chart.show(container, fig, key=key, width=svg_chart.column_px(root_px, share), config=config,
                           tip_px=tip_px, **kwargs)
    return drawn if drawn is not None else container.plotly_chart(fig, key=key, config=config, **kwargs)

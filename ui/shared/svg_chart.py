"""Charts on a page without plotly.js: `ui.shared.svg_figure` draws the figure as SVG on the server, and a
bidirectional Streamlit component (no iframe) shows it with a few lines of JS for the hover, clicks and box
selections (reported in st.plotly_chart's shape, so that the same on_select callbacks read them) and the download
(PNG or SVG). `ui.shared.charts.show.chart` tries this first and falls back to st.plotly_chart.

Why: plotly.js is a 4.7 MB module that the browser compiles and runs on every page load with a chart (3.6x a bare
page for one small heatmap, BENCHMARKS.md); these SVGs are a few kB and need no module.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v2 as bidi_components

from ui.shared import svg_figure, svg_traces
from ui.shared.models.recent import Recent
from ui.shared.svg_text import Unsupported

WINDOW_PX, SIDEBAR_PX = 1280, 300  # a projector's window, and Streamlit's open sidebar in it
ELEMENT = "svg_chart"  # the component's name (tests find its elements by it)
SELECTION = "selection"  # the state the component reports, as st.plotly_chart's on_select does
KWARGS = {"theme", "on_select", "selection_mode"}  # st.plotly_chart's arguments it honours; any other falls back
CSS = """.lc{position:relative;line-height:0}.lc svg{width:100%;height:auto;display:block;user-select:none}
.lc-tip{position:absolute;display:none;pointer-events:none;z-index:5;background:#fff;border:1px solid #888;
border-radius:3px;padding:3px 6px;white-space:pre;line-height:1.3;color:#262730;box-shadow:0 1px 3px #0003;
font-family:"Source Sans Pro",sans-serif}
.lc-save{position:absolute;top:2px;right:2px;opacity:0;border:1px solid #ccc;border-radius:4px;background:#fff;
cursor:pointer;font-size:14px;line-height:1;padding:3px 5px;color:#555}.lc:hover .lc-save{opacity:1}
.lc-box{fill:#1f77b41a;stroke:#1f77b4;stroke-dasharray:4,3;pointer-events:none}"""
JS = (Path(__file__).resolve().parent / "assets" / "svg_chart.js").read_text(encoding="utf-8")
_component = bidi_components.component(ELEMENT, js=JS, css=CSS)
# The drawings of the last charts shown, by figure (its JSON), width and colours: a page opened again, or rerun with
# the same chart, skips drawing it (10-40 ms a chart on a 2-core machine). Tens of kB each.
DRAWN: Recent[svg_figure.Drawing] = Recent(128)
logger = logging.getLogger(__name__)


def column_px(root_px: float, share: float = 1.0) -> float:
    """px of a chart's column at WINDOW_PX beside the open sidebar: the main block (padded 5rem on each side; root_px:
    the page's rem) or one of 1 / share columns 1rem apart. A chart is drawn at that width, so that its text is
    its own size there (the SVG scales with its column on another window)."""
    page = WINDOW_PX - SIDEBAR_PX - 10 * root_px  # 820 px, 770 px in class mode (class_mode.PAGE_PX)
    return page * share - root_px * (1 - share)


def _modes(kwargs: dict[str, Any]) -> list[str]:
    if kwargs.get("on_select") in (None, "ignore"):
        return []
    mode = kwargs.get("selection_mode") or ("points", "box", "lasso")
    return [mode] if isinstance(mode, str) else list(mode)


def payload(fig: go.Figure, width: float, *, config: dict, modes: list[str], tip_px: float,
            theme: str | None = "streamlit") -> dict[str, Any]:
    """What the component gets: the SVG and its size, each subplot's hover texts and clickable points, the
    selection modes, plotly's config (the download's name and format: `heatmaps.chart_config`), the hover's font
    size, and the figure as st.plotly_chart would send it (which the app's tests read, as they read plotly's).
    theme: st.plotly_chart's (None: plotly's own trace colours, else Streamlit's). Unsupported when svg_figure
    cannot draw the figure."""
    figure = fig.to_json()
    key = (figure, width, theme is None)
    if (drawing := DRAWN.get(key)) is None:
        colours = svg_traces.PLOTLY_COLOURS if theme is None else svg_traces.STREAMLIT_COLOURS
        drawing = svg_figure.draw(fig, width, colours)
        DRAWN.put(key, drawing)
    return {"svg": drawing.svg, "width": drawing.width, "height": drawing.height,
            "areas": [area.as_json() for area in drawing.areas], "points": drawing.points, "modes": modes,
            "config": config, "tip": tip_px, "figure": json.loads(figure)}


def show(container: Any, fig: go.Figure, *, key: str, width: float, config: dict, tip_px: float,
         **kwargs: Any) -> Any | None:
    """The figure as SVG in container (st or a column) with hover, clicks and download; None (nothing drawn) when it
    cannot be drawn exactly, or asks for an st.plotly_chart argument this does not honour."""
    if set(kwargs) - KWARGS:
        return None
    try:
        data = payload(fig, width, config=config, modes=_modes(kwargs), tip_px=tip_px,
                       theme=kwargs.get("theme", "streamlit"))
    except Unsupported as e:
        logger.debug("chart %s is drawn by plotly: %s", key, e)
        return None
    except Exception:  # noqa: BLE001  a figure the renderer fails on is still drawn (by plotly), never lost
        logger.warning("chart %s is drawn by plotly: the SVG renderer failed on it", key, exc_info=True)
        return None
    on_select = kwargs.get("on_select")
    callback: Callable[[], None] = on_select if callable(on_select) else (lambda: None)
    with contextlib.nullcontext() if container is st else container:
        return _component(data=data, key=key, on_selection_change=callback)

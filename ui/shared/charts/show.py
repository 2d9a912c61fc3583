"""Every chart of the app drawn on a page: Altair's chart through st.altair_chart, with its clicks (Vega-Lite
selection parameters) reported to a callback, and the sidebar's download format.

Streamlit's chart toolbar saves any chart as PNG; with SVG picked in the sidebar ("Charts download as"), a small
button under each chart saves it as SVG (a vector drawing for slides and papers), drawn by vl-convert only when
clicked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import altair as alt
import streamlit as st

FORMAT_KEY = "chart_format"  # session state: the sidebar's "png" or "svg"


def selection_names(chart: alt.TopLevelMixin) -> list[str]:
    """The names of the chart's selection parameters, in its layers, facets and concatenations too (read from the
    chart's objects: its data is never serialised here)."""
    names: list[str] = []

    def walk(node: Any) -> None:
        for param in _defined(getattr(node, "params", None)) or []:
            if _defined(getattr(param, "select", None)) is not None:
                names.append(param.name)
        for part in ("layer", "hconcat", "vconcat", "concat"):
            for child in _defined(getattr(node, part, None)) or []:
                walk(child)
        if (spec := _defined(getattr(node, "spec", None))) is not None:
            walk(spec)

    walk(chart)
    return list(dict.fromkeys(names))


def _defined(value: Any) -> Any:
    return None if value is alt.Undefined else value


def file_name(filename: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", filename).strip("-").lower() or "chart"


def chart(container: Any, drawn: alt.TopLevelMixin, *, key: str, filename: str,
          on_select: Callable[[], None] | None = None) -> Any:
    """Draw `drawn` in container (st or a column); on_select: called after a click on one of its selections, which
    it reads with `selected(key, name)`. filename: the SVG download's name (without extension)."""
    kwargs: dict[str, Any] = {}
    if on_select is not None:
        kwargs = {"on_select": on_select, "selection_mode": selection_names(drawn)}
    shown = container.altair_chart(drawn, key=key, theme=None, **kwargs)
    if st.session_state.get(FORMAT_KEY) == "svg":
        container.download_button("SVG", lambda: _svg(drawn), f"{file_name(filename)}.svg", "image/svg+xml",
                                  key=f"{key}_svg", on_click="ignore", type="tertiary", icon=":material/download:",
                                  help="This chart as SVG, a vector drawing for slides and papers.")
    return shown


def _svg(drawn: alt.TopLevelMixin) -> str:
    from transformer.charts.render import to_svg

    return to_svg(drawn)


def selected(key: str, name: str) -> dict | None:
    """The first point a click selected in the chart drawn under `key`, by its selection parameter `name`: the
    selection's fields and values (e.g. {"row": 2, "col": 5}), or None."""
    state = st.session_state.get(key)
    points = ((state or {}).get("selection") or {}).get(name) or []
    return dict(points[0]) if points and isinstance(points[0], Mapping) else None

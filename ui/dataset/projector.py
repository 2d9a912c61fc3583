"""The Dataset page's projector: every token's final encoder (or decoder) state in 2-D by PCA, coloured by slice,
position or length, the token in its sentence on hover."""

from __future__ import annotations

import numpy as np
import streamlit as st

from transformer.explain.dataset import DatasetResult
from transformer.explain.dataset_slices import projector_points
from ui.dataset.projector_figures import MAX_POINTS, projector_scatter
from ui.shared.charts.show import chart
from ui.shared.state import class_mode

SIDES = {"encoder": "encoder (source tokens)", "decoder": "decoder (output tokens)"}
COLOURS = {"slice": "slice", "position": "position", "length_bucket": "sentence length"}


@st.cache_data(max_entries=4, show_spinner=False)
def _points(_result: DatasetResult, key: tuple, side: str):
    return projector_points(_result, side)


def projector_view(result: DatasetResult, groups: dict[str, np.ndarray]) -> None:
    """The projector in an expander, computed and drawn only while it is open: the PCA of every token's state and
    a chart of up to MAX_POINTS points (a few MB of data) are work a page load should not pay for."""
    box = st.expander("Every token's final state in 2-D (PCA)", key="ds_projector_open", on_change="rerun")
    with box:
        if box.open:
            _projector(result, groups)


def _projector(result: DatasetResult, groups: dict[str, np.ndarray]) -> None:
    c1, c2 = st.columns(2)
    side = c1.radio("States of the", list(SIDES), format_func=SIDES.get, horizontal=True, key="ds_proj_side")
    colour = c2.radio("Colour by", list(COLOURS), format_func=COLOURS.get, horizontal=True, key="ds_proj_colour")
    points = _points(result, (result.split.key, len(result.table), id(result)), side).copy()
    points["length_bucket"] = result.table["length_bucket"].to_numpy()[points["sentence"]]
    names = np.full(len(result.table), "other", dtype=object)
    for name, mask in reversed(list(groups.items())):  # a sentence in several slices takes the first one's colour
        names[mask] = name
    points["slice"] = names[points["sentence"]] if groups else "all"
    title = f"{len(points):,} tokens of {points['sentence'].nunique():,} sentences, final {side} states (PCA)"
    chart(st, projector_scatter(points, colour, title, sizes=class_mode.sizes()), key="ds_projector",
          filename="projector")
    if len(points) > MAX_POINTS:
        st.caption(f"The first {MAX_POINTS:,} tokens are drawn.")
    st.caption("Each dot is one token's state after the last layer; nearby dots are states the model finds alike. "
               + ("Row t of the decoder is the state that chose output piece t (teacher-forced on the translation)."
                  if side == "decoder" else ""))

"""Slices of the split on the Dataset page: by construction (the teaching corpus), by length or by a word; the
metrics per slice as a table and a chart, each lens's best AER per slice, and one head statistic per slice (which
heads do what on which kind of sentence)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer.explain.dataset import DatasetError, DatasetResult
from transformer.explain.dataset_slices import best_lens, slice_metrics, slice_statistics, slices
from transformer.explain.lenses import LABELS
from transformer.explain.statistics import STATISTICS
from ui.dataset.per_slice_figures import METRICS, slice_bars, slice_heads
from ui.shared.charts.show import chart
from ui.shared.state import class_mode
from ui.shared.text.plain import plain

SLICINGS = {"construction": "construction", "length": "length (source words)", "word": "a word it contains"}
FAMILY_NAMES = {"enc_self": "encoder self-attention", "dec_self": "decoder self-attention", "cross": "cross-attention"}
ALL = "all sentences"


def choose_slices(result: DatasetResult) -> tuple[dict[str, np.ndarray], str]:
    """The slicing picked (slice name -> row mask) and the slice the table shows (ALL: every row)."""
    offered = [s for s in SLICINGS if s != "construction" or "constructions" in result.table]
    c1, c2, c3 = st.columns(3)
    by = c1.radio("Slice by", offered, format_func=SLICINGS.get, horizontal=True, key="ds_slice_by")
    word = c2.text_input("Word", key="ds_slice_word", max_chars=40) if by == "word" else ""
    if by == "word" and not word.strip():
        c2.caption("Type a word to split the sentences into those with it and those without.")
        return {}, ALL
    try:
        groups = slices(result, by, word)
    except DatasetError as e:
        st.warning(str(e))
        return {}, ALL
    shown = c3.selectbox("Table shows", [ALL, *groups], key="ds_slice_shown")
    return groups, shown


@st.cache_data(max_entries=8, show_spinner=False)
def _metrics(_result: DatasetResult, _groups: dict[str, np.ndarray], key: tuple) -> pd.DataFrame:
    """slice_metrics once per result and slicing (key: the result's identity, the slicing and its word)."""
    return slice_metrics(_result, _groups)


def slice_view(result: DatasetResult, groups: dict[str, np.ndarray]) -> None:
    if not groups:
        return
    by, word = st.session_state.get("ds_slice_by"), st.session_state.get("ds_slice_word", "")
    metrics = _metrics(result, groups, (id(result), len(result.table), by, word if by == "word" else ""))
    names = {"slice": "slice", "sentences": "sentences", **{k: v for k, v in METRICS.items() if k in metrics}}
    lens_columns = {f"aer_{lens}": f"AER % ({LABELS[lens]}, best head)" for lens in result.lenses
                    if f"aer_{lens}" in metrics}
    heads = {f"aer_{lens}_head": f"its head ({LABELS[lens]})" for lens in result.lenses if f"aer_{lens}" in metrics}
    class_mode.table(st, metrics[list(names) + [c for pair in zip(lens_columns, heads) for c in pair]]
                     .rename(columns=names | lens_columns | heads).round(2), key="ds_slice_table", hide_index=True)
    if len(lens_columns) > 1:
        found = {name: best_lens(result, mask) for name, mask in groups.items()}
        st.caption("Best lens per slice: " + "; ".join(f"{plain(name)}: {label} ({100 * value:.1f}%)"
                                                        for name, (_, label, value) in
                                                        ((n, f) for n, f in found.items() if f is not None)))
    options = {**{k: v for k, v in METRICS.items() if k in metrics}, **lens_columns}
    metric = st.selectbox("Chart", list(options), format_func=options.get, key="ds_slice_metric")
    chart(st, slice_bars(metrics, metric, options[metric], sizes=class_mode.sizes()), key="ds_slice_chart",
          filename="slices")
    head_statistics_by_slice(result, groups)


def head_statistics_by_slice(result: DatasetResult, groups: dict[str, np.ndarray]) -> None:
    """One statistic of every head (teacher-forced on the references), slice by slice."""
    c1, c2 = st.columns(2)
    family = c1.selectbox("Attention", list(FAMILY_NAMES), format_func=FAMILY_NAMES.get, key="ds_stat_family")
    usable = [s for s in STATISTICS if s not in (("distance", "previous", "same", "next") if family == "cross"
                                                   else ("diagonal",))]
    statistic = c2.selectbox("Head statistic", usable, format_func=STATISTICS.get, key="ds_stat_name")
    per_slice = [slice_statistics(result, mask).get(family, statistic) for mask in groups.values()]  # (L, H) each
    n_layers, n_heads = per_slice[0].shape
    rows = [values.flatten().numpy() for values in per_slice]
    head_names = [f"{layer}.{head}" for layer in range(n_layers) for head in range(n_heads)]
    chart(st, slice_heads(np.stack(rows), list(groups), head_names, STATISTICS[statistic], sizes=class_mode.sizes()),
          key="ds_heads_chart", filename="slice-heads")
    st.caption("Each cell: the statistic's mean over the query rows of the slice's sentences, teacher-forced on "
               "their references (as Explain heads' statistics).")


def rows_of(result: DatasetResult, groups: dict[str, np.ndarray], shown: str) -> pd.Series | None:
    return None if shown == ALL or shown not in groups else pd.Series(groups[shown], index=result.table.index)

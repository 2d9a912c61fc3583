"""The Dataset page's table: every sentence with its scores, filtered and sorted, and links that open one sentence
on Translate, Decode step by step or Explain heads (the pages read `model` and `text` from their link)."""

from __future__ import annotations

import urllib.parse

import pandas as pd
import streamlit as st

from transformer.bidi import isolate
from transformer.explain.dataset import DatasetResult
from ui.shared.state import class_mode, links
from ui.shared.text.plain import plain

PAGES = {"Translate": "Translate", "Step by step": "Step_by_step", "Explain heads": "Explain_heads"}  # label -> path
COLUMNS = {"sentence": "#", "source": "source", "reference": "reference", "translation": "translation",
           "chrf": "chrF", "bleu": "BLEU", "length_ratio": "length ratio", "mean_prob": "mean p(token)",
           "src_words": "words", "length_bucket": "length", "constructions": "constructions", "exact": "exact",
           "aer": "AER %"}
SORTS = {"chrf": "chrF, worst first", "bleu": "BLEU, worst first", "mean_prob": "mean p(token), lowest first",
         "aer": "AER, worst first", "sentence": "the split's order"}


def sentence_url(page: str, model_key: str | None, text: str, class_on: bool = False) -> str | None:
    """A relative link that opens text on a page ("Translate", ...); None when the text is too long for a link."""
    if links.linkable(text) is None:
        return None
    params = {**({"model": model_key} if model_key else {}), "text": text, **({"class": "1"} if class_on else {})}
    return f"{PAGES[page]}?{urllib.parse.urlencode(params)}"


def filtered(table: pd.DataFrame, *, contains: str = "", only_wrong: bool = False, max_chrf: float = 100.0,
             rows: pd.Series | None = None, sort: str = "sentence") -> pd.DataFrame:
    """The rows that pass every filter (text in source, reference or translation, case aside; not an exact match;
    chrF at most max_chrf; in rows, a boolean mask), sorted (worst first for a score, lowest AER last)."""
    keep = table["chrf"] <= max_chrf
    if contains.strip():
        needle = contains.strip().lower()
        keep &= table[["source", "reference", "translation"]].apply(lambda c: c.str.lower().str.contains(
            needle, regex=False)).any(axis=1)
    if only_wrong:
        keep &= ~table["exact"] if "exact" in table else table["chrf"] < 100.0
    if rows is not None:
        keep &= rows.to_numpy()
    out = table[keep]
    if sort in out:
        out = out.sort_values(sort, ascending=sort != "aer", kind="stable", na_position="last")
    return out


def sentence_table(result: DatasetResult, model_key: str | None, slice_rows: pd.Series | None,
                   slice_name: str) -> None:
    table = result.table
    c1, c2, c3, c4 = st.columns([2, 1, 1, 2])
    contains = c1.text_input("Only sentences containing", key="ds_contains", max_chars=100)
    only_wrong = c2.checkbox("Wrong only", help="Sentences whose translation is not exactly the reference"
                             if "exact" in table else "Sentences of chrF below 100",
                             key="ds_wrong")
    max_chrf = c3.slider("chrF at most", 0, 100, 100, key="ds_max_chrf")
    sort = c4.selectbox("Sort by", [s for s in SORTS if s in table], format_func=SORTS.get, key="ds_sort")
    shown = filtered(table, contains=contains, only_wrong=only_wrong, max_chrf=max_chrf, rows=slice_rows, sort=sort)
    st.caption(f"{len(shown):,} of {len(table):,} sentences" + (f", slice {plain(slice_name)}" if slice_rows is not None
                                                                 else "") + ". Click a column's header to sort by it.")
    view = shown.rename(columns=COLUMNS)
    for column in ("reference", "translation", "source"):
        view[column] = view[column].map(isolate)  # Arabic reads right to left inside the grid
    on = class_mode.is_on()
    if not on:
        for label in PAGES:
            view[label] = [sentence_url(label, model_key, s) for s in shown["source"]]
    config = {label: st.column_config.LinkColumn(label, display_text="open") for label in PAGES}
    number = st.column_config.NumberColumn
    config |= {"chrF": number(format="%.1f"), "BLEU": number(format="%.1f"), "mean p(token)": number(format="%.3f"),
               "length ratio": number(format="%.2f"), "AER %": number(format="%.1f")}
    class_mode.table(st, view.head(200) if on else view, key="ds_table", hide_index=True, column_config=config)
    if on and len(view) > 200:
        st.caption("The first 200 rows (class mode draws the table whole).")
    open_one(shown, model_key)


def open_one(shown: pd.DataFrame, model_key: str | None) -> None:
    """One sentence, picked by its number, with a link to each page that explains it."""
    if shown.empty:
        return
    numbers = list(shown["sentence"])
    st.session_state.setdefault("ds_open", numbers[0])
    if st.session_state["ds_open"] not in numbers:
        st.session_state["ds_open"] = numbers[0]
    picked = st.selectbox("Open one sentence", numbers, key="ds_open",
                          format_func=lambda n: f"{n}: {shown.loc[shown['sentence'] == n, 'source'].iloc[0][:90]}")
    source = shown.loc[shown["sentence"] == picked, "source"].iloc[0]
    urls = {label: sentence_url(label, model_key, source, class_mode.is_on()) for label in PAGES}
    if None in urls.values():
        st.info("This sentence is longer than a link may carry: copy it into the page instead.")
        return
    st.markdown(" · ".join(f"[{label}]({url})" for label, url in urls.items()), help=None)

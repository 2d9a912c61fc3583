"""The search controls: greedy, beam search or sampling (the temperature / top-k / top-p / seed controls), and "Draw
again" (the step page's candidate bars: ui.step.next_token).

Links carry `search=sample&temperature=0.8&top_k=50&top_p=0.9&seed=1`; `read_sampling` checks every value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import streamlit as st

from transformer.decoding.search import SearchSettings
from transformer.decoding.settings import MAX_SEED
from ui.shared.state import links
from ui.shared.state.links import as_param, quoted
from ui.shared.state.page_state import link, link_problems, share

PARAMS = ("temperature", "top_k", "top_p", "seed")
TEMPERATURE_RANGE, TOP_K_RANGE, TOP_P_RANGE = (0.05, 3.0), (0, 200), (0.05, 1.0)
DEFAULTS = {name: getattr(SearchSettings(), name) for name in PARAMS}  # the package's defaults, one owner
# What the beam controls open on: the app's beam and n-best (the package's default is greedy), the package's alpha.
BEAM_DEFAULTS = {"method": "greedy", "beam": 4, "alpha": SearchSettings().alpha, "nbest": 3}
SAMPLING_HELP = ("Each token is drawn from the model's distribution: **temperature** < 1 sharpens it (towards "
                 "greedy), > 1 flattens it; **top-k** keeps only the k most probable tokens (0: all); **top-p** "
                 "keeps the smallest set of most probable tokens whose probability adds up to p (1: all). The same "
                 "**seed** draws the same sample.")


def read_sampling(params: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The sampling values a link gives and that are valid, and a sentence per value refused."""
    values: dict[str, Any] = {}
    problems = []
    checks = {"temperature": (float, TEMPERATURE_RANGE), "top_k": (int, TOP_K_RANGE), "top_p": (float, TOP_P_RANGE),
              "seed": (int, (0, MAX_SEED - 1))}
    for name, (kind, (lo, hi)) in checks.items():
        if name not in params:
            continue
        try:
            value = kind(params[name])
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            problems.append(f"{name} {quoted(params[name])} in the link is not between {lo} and {hi}.")
        else:
            values[name] = round(value, 2) if kind is float else value
    return values, problems


def sampling_params(values: Mapping[str, Any] | None) -> dict[str, str | None]:
    """The link parameters of a sampling search (None: not sampling, so removed from the link)."""
    if values is None:
        return {name: None for name in PARAMS}
    return {"search": "sample", "beam": None, "alpha": None, "nbest": None,
            **{name: as_param(values[name]) for name in PARAMS}}


def _draw_again(key: str) -> None:
    st.session_state[f"{key}_seed"] = (st.session_state.get(f"{key}_seed", 0) + 1) % MAX_SEED


def sampling_controls(key: str, link: Mapping[str, str], columns: list) -> tuple[SearchSettings, list[str]]:
    """The sliders (seeded from the link once) in three columns, and "Draw again": the settings and link problems."""
    values, problems = read_sampling(link)
    for name, default in DEFAULTS.items():
        if name in values or f"{key}_{name}" not in st.session_state:
            st.session_state[f"{key}_{name}"] = values.get(name, default)
    c1, c2, c3 = columns
    temperature = c1.slider("Temperature", *TEMPERATURE_RANGE, step=0.05, key=f"{key}_temperature", help=SAMPLING_HELP)
    top_k = c2.slider("top-k (0: all)", *TOP_K_RANGE, key=f"{key}_top_k")
    top_p = c3.slider("top-p (1: all)", *TOP_P_RANGE, step=0.05, key=f"{key}_top_p")
    d1, d2 = st.columns([1, 3])
    seed = d1.number_input("Seed", 0, MAX_SEED - 1, step=1, key=f"{key}_seed")
    d2.button("Draw again", key=f"{key}_draw_again", on_click=_draw_again, args=(key,), icon=":material/casino:",
              help="Another sample: the next seed.")
    settings = SearchSettings(do_sample=True, temperature=float(temperature), top_k=int(top_k), top_p=float(top_p),
                              seed=int(seed), record_steps=False)
    return settings, problems


def search_settings(key: str):
    """Greedy search, beam search or sampling controls, seeded from the link and shared back into it; returns a
    SearchSettings."""
    values, problems = links.read_search(link())
    link_problems(problems)
    for name, default in BEAM_DEFAULTS.items():
        if name in values or f"{key}_{name}" not in st.session_state:  # set before the widgets, which get no default
            st.session_state[f"{key}_{name}"] = values.get(name, default)
    # The methods on a line of their own: in a quarter of the page "sample" went to a second line at 1280 px.
    method = st.radio("Search", list(links.METHODS), horizontal=True, key=f"{key}_method")
    c2, c3, c4 = st.columns(3)
    if method == "sample":
        settings, problems = sampling_controls(key, link(), [c2, c3, c4])
        link_problems(problems)
        share(**sampling_params(dataclasses.asdict(settings)))
        return settings
    if method == "greedy":
        share(**links.search_params("greedy"))
        return SearchSettings(record_steps=False)
    beam = c2.slider("Beam size", *links.BEAM_RANGE, key=f"{key}_beam")
    alpha = c3.slider("Length penalty α", *links.ALPHA_RANGE, step=0.1, key=f"{key}_alpha",
                      help="GNMT penalty ((5 + length) / 6)^α: 0 ranks by total log-probability, "
                           "larger values favour longer outputs.")
    st.session_state[f"{key}_nbest"] = min(st.session_state[f"{key}_nbest"], beam)
    nbest = c4.slider("n-best", 1, beam, key=f"{key}_nbest")
    share(**links.search_params("beam", beam, alpha, nbest))
    return SearchSettings(beam_size=beam, nbest=nbest, alpha=alpha)

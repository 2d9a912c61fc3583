"""Sampling in the app: the temperature / top-k / top-p / seed controls beside greedy and beam search, "Draw
again", and the candidate bars of a decoding step with their numbers (greedy, beam and sampling alike).

Links carry `search=sample&temperature=0.8&top_k=50&top_p=0.9&seed=1`; `read_sampling` checks every value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import streamlit as st

from transformer.decoding.search import SearchSettings, SearchStep
from transformer.decoding.session import DecodingSession
from transformer.decoding.settings import MAX_SEED
from ui.shared import candidate_bars, heatmaps
from ui.shared.bidi import isolate
from ui.shared.text import code

PARAMS = ("temperature", "top_k", "top_p", "seed")
TEMPERATURE_RANGE, TOP_K_RANGE, TOP_P_RANGE = (0.05, 3.0), (0, 200), (0.05, 1.0)
DEFAULTS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0}
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
            problems.append(f"{name} {params[name]!r} in the link is not between {lo} and {hi}.")
        else:
            values[name] = round(value, 2) if kind is float else value
    return values, problems


def sampling_params(values: Mapping[str, Any] | None) -> dict[str, str | None]:
    """The link parameters of a sampling search (None: not sampling, so removed from the link)."""
    if values is None:
        return {name: None for name in PARAMS}
    return {"search": "sample", "beam": None, "alpha": None, "nbest": None,
            **{name: f"{values[name]:g}" for name in PARAMS}}


def _draw_again(key: str) -> None:
    st.session_state[f"{key}_seed"] = (st.session_state[f"{key}_seed"] + 1) % MAX_SEED


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


def redraw(previous: DecodingSession | None, session: DecodingSession) -> None:
    """After "Draw again" (the same sampling but the seed), take the new draw to the step the old one was at."""
    if previous is None or not session.settings.do_sample or \
            dataclasses.replace(previous.settings, seed=session.settings.seed) != session.settings or \
            previous.src_ids != session.src_ids or previous.model is not session.model:
        return
    while session.n_steps < previous.n_steps and session.step() is not None:
        pass


def step_candidates(container: Any, step: SearchStep, hyp_index: int, pieces, *, rows: int, key: str,
                    filename: str) -> None:
    """One hypothesis's candidate bars at a step, with their numbers; its chosen (kept or drawn) tokens marked."""
    hyp = step.live[hyp_index]
    c = hyp.candidates
    chosen = {n.token for n in step.nodes if n.parent == hyp_index and n.status != "pruned"}
    bars = candidate_bars.ordered(c.tokens, pieces(c.tokens), c.probs, chosen, c.tempered, c.sampled)
    sampling = c.sampled is not None
    title = "next token: model → temperature → drawn from" if sampling else f"top {len(c.tokens)} next tokens"
    fig = candidate_bars.candidates_figure(bars, rows=rows, title=title, kept=c.kept)
    container.plotly_chart(fig, key=key, config=heatmaps.chart_config(filename, st.session_state.get("chart_format",
                                                                                                      "png")))
    drawn = [code(isolate(piece)) for piece, mark in zip(bars.labels, bars.chosen) if mark]
    if sampling:
        container.caption(f"{candidate_bars.MARK}marks the token drawn ({', '.join(drawn)}). Grey: the model's "
                          "probability; orange: after temperature; blue: what is left after top-k and top-p, "
                          f"renormalised ({c.kept} token{'s' if c.kept != 1 else ''}), which the token was drawn from.")
    else:
        container.caption(f"{candidate_bars.MARK}marks the token{'s' if len(drawn) > 1 else ''} chosen "
                          f"({', '.join(drawn) or 'none: this hypothesis was pruned'}).")

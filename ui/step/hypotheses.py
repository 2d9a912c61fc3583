"""The step-by-step page's hypotheses: which one the page follows, and the n-best list with its scores explained.

A hypothesis is followed by its prefix (ui.shared.models.translation_gate.follow_prefix). The page only says that "the
hypothesis you followed has left the beam" when the user picked one other than the best: the best one is what the page
shows by default, and it leaving the beam (finishing, say) is no news. The step panel reads a hypothesis's
log-probability (the sum of its tokens' log-probabilities); the finished list ranks by the normalised score, that
log-probability divided by the length penalty. Both are written with ui.shared.text.plain.score's precision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import streamlit as st

from transformer.decoding.search import Hypothesis, SearchSettings, length_penalty
from ui.shared.models.translation_gate import follow_prefix
from ui.shared.state.page_state import choice_box
from ui.shared.text.plain import code, score

FOLLOWED = "step_followed"  # session state: True once the user picked a hypothesis other than the best
OPENED = "step_opened"  # session state: the tokens of the finished hypothesis whose attention is open


def followed_prefix(prefixes: list[tuple[int, ...]], name: Callable[[Sequence[int]], str]) -> tuple[int, ...]:
    """The live prefix the step panel shows: the one the user follows (the Hypothesis box), else the best."""
    picked = st.session_state.get("step_hyp")
    if picked is not None and follow_prefix(picked, prefixes) is None:
        if st.session_state.get(FOLLOWED):
            st.info(f"The hypothesis you followed, {code(name(picked))}, has left the beam (finished or pruned); "
                    "showing the best live one.")
        st.session_state.step_hyp = prefixes[0]
        st.session_state[FOLLOWED] = False
    if len(prefixes) > 1:
        choice_box(st, "Hypothesis", prefixes, key="step_hyp", follow=lambda old, opts: follow_prefix(old, opts) or 0,
                   format_func=lambda p: f"{prefixes.index(p)}: {name(p)}")
    current = st.session_state.get("step_hyp")
    if current not in prefixes:
        return prefixes[0]
    st.session_state[FOLLOWED] = st.session_state.get(FOLLOWED, False) or prefixes.index(current) > 0
    return current


def forget_followed() -> None:
    """A new sentence or search: nothing followed or opened yet."""
    for key in ("step_hyp", FOLLOWED, OPENED):
        st.session_state.pop(key, None)


def opened_hypothesis(finished: Sequence[Hypothesis], labels: list[str]) -> Hypothesis:
    """The finished hypothesis whose attention the page opens: a radio over the n best, the pick kept by the
    hypothesis's tokens, never by its rank. The n-best list re-sorts as hypotheses finish, and the browser keeps
    a radio's checked label across reruns: the radio's key carries a digest of its labels, so a re-sorted list
    is a new radio, checked at the hypothesis the user picked (at the best until they pick one, or when theirs
    left the list)."""
    tokens = [tuple(h.tokens) for h in finished]
    picked = st.session_state.get(OPENED)
    index = tokens.index(picked) if picked in tokens else 0
    widget = f"step_pick_{hashlib.blake2s(chr(10).join(labels).encode(), digest_size=6).hexdigest()}"
    pick = st.radio("Open a hypothesis to see its attention", range(len(labels)), index=index,
                    format_func=labels.__getitem__, key=widget, on_change=_opened, args=(widget, tokens))
    return finished[pick]


def _opened(widget: str, tokens: list[tuple[int, ...]]) -> None:
    if (index := st.session_state.get(widget)) is not None:
        st.session_state[OPENED] = tokens[index]


def penalty_note(settings: SearchSettings) -> str | None:
    """Why a finished hypothesis's normalised score is not the log-probability the step panel showed (None for
    greedy search and sampling, which rank nothing and have no length penalty)."""
    if settings.beam_size == 1:
        return None
    if settings.alpha == 0:
        return "α = 0: each normalised score is the hypothesis's log-probability, the sum shown in the step panel."
    what = "((5 + length) / 6)" if settings.length_penalty == "gnmt" else "length"
    return (f"**Log-probability** is the sum of the tokens' log-probabilities, the number the step panel shows. "
            f"**Normalised score** is that log-probability divided by the length penalty {what}^α "
            f"(α = {settings.alpha:g}), which ranks the hypotheses: without it a longer output, with more negative "
            "terms in its sum, would always lose.")


def nbest_label(text: str, hyp: Hypothesis, settings: SearchSettings) -> str:
    """A finished hypothesis: its log-probability, and for beam search the penalty and normalised score it ranks by."""
    if settings.beam_size == 1:
        return f"{text or '∅'}  (log-probability {score(hyp.score)})"
    penalty = length_penalty(len(hyp.tokens), settings)
    return (f"{text or '∅'}  (log-probability {score(hyp.score)} / penalty {penalty:.3f} = normalised score "
            f"{score(hyp.normalized_score)})")

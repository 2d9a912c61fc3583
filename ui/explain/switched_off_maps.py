"""The maps of "Switch heads off": open on the head just switched off, and say what a switched-off head's map is.

Switching a head off zeroes its columns of W^O (transformer.explain.interventions): the head still computes its
attention weights from its queries and keys, and they are drawn; only its output no longer reaches the layer.
"""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from transformer.explain.interventions import Head

_SHOWN = "ex_ab_jumped"  # session state: the heads that were off when the maps last jumped

OFF_NOTE = ("A switched-off head still computes its attention weights (its queries and keys are untouched), so its "
            "map is drawn; only its output is removed (its columns of $W^O$ are zero), so nothing it reads reaches "
            "the layer's output. The other heads' maps change where their inputs changed.")


def jump_to_switched_off(off: Iterable[Head], key: str) -> None:
    """Before the map picker `key` is drawn: when heads were switched off since the last run, show the newest one
    (its family, layer and head) rather than the picker's last choice."""
    off = sorted(set(map(tuple, off)))
    before = set(map(tuple, st.session_state.get(_SHOWN, [])))
    st.session_state[_SHOWN] = off
    new = [head for head in off if head not in before]
    if not new:
        return
    family, layer, head = new[-1]
    st.session_state[f"{key}_family"], st.session_state[f"{key}_layer"] = family, layer
    st.session_state[f"{key}_head"] = head


def map_titles(off: Iterable[Head], family: str, layer: int, head: int | None) -> tuple[str, str, str]:
    """The titles of the trained model's and the changed model's maps (which head they show) and the changed map's
    subtitle: whether the head is one of those switched off ("" when not), on a line of its own in a half-width
    column."""
    where = f"layer {layer}, " + ("mean of heads" if head is None else f"head {head}")  # the family: the radio above
    is_off = head is not None and (family, layer, head) in set(map(tuple, off))
    return f"trained model · {where}", f"heads off · {where}", "(this head is off)" if is_off else ""

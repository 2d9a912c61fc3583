"""The explored model: the sidebar's picker over shipped checkpoints and runs, the cached Translator of the chosen
one (loaded once per server and checkpoint version), and the note shown while every decode slot is taken."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import streamlit as st

from transformer.data.tokenizer import TokenizerError
from ui.shared.models import language_choice
from ui.shared.models.catalog import (
    PAGE_SIZE,
    checkpoint_stamp,
    checkpoints_dir,
    find_model,
    find_models,
    is_model_path,
    runs_dir,
)
from ui.shared.state import class_mode, links
from ui.shared.state.page_state import link, link_problems, share
from ui.shared.text.plain import code, plain

if TYPE_CHECKING:  # torch and the model load on a model page's first call, never on the Train page or the guide
    from transformer.decoding.translate import Translator
    from ui.shared.models.translation_gate import OnWait

MODEL_KEY = "model_path"  # session state: the checkpoint directory this user explores


SHOWN_MODELS = "_models_shown"  # session state: how many models the picker lists


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load(path: str, stamp: float) -> Translator:
    """One model per server and checkpoint version (stamp), with its Translator; pages only read them."""
    import torch

    from transformer.decoding.translate import Translator
    from transformer.model.checkpoint import load_checkpoint
    from ui.shared.models.translation_gate import DECODE_THREADS

    torch.set_num_threads(DECODE_THREADS)  # the decode slots (translation_gate) share the cores
    return Translator(load_checkpoint(path, "cpu"))


def model_picker() -> None:
    """Sidebar select box over shipped checkpoints and run checkpoints, a page of them at a time (and the link's, found
    by its key); the choice lives in session state."""
    shown = st.session_state.setdefault(SHOWN_MODELS, PAGE_SIZE)
    choices = find_models(shown + 1)  # one more than shown: whether there are more
    more, choices = len(choices) > shown, choices[:shown]
    asked = link().get("model")
    if asked is not None and asked not in {c.key for c in choices}:
        choices += [c for c in [find_model(asked)] if c is not None]
    if not choices:
        st.sidebar.info("No model yet.")
        return
    by_key = {c.key: c.path for c in choices}
    key, problems = links.read_model(link(), list(by_key))
    link_problems(problems)
    if key is not None:
        open_model(by_key[key])
    paths = [c.path for c in choices]
    labels = {c.path: c.label for c in choices}
    current = st.session_state.get(MODEL_KEY)
    if current not in paths:
        # A model opened from the Train page may not be listed under that exact label yet.
        current = paths[0] if current is None or not is_model_path(current) else current
        if current not in paths:
            paths.append(current)
            labels[current] = current
    if class_mode.is_on():  # the key alone: the whole label does not fit the sidebar's box at the class's size
        labels.update({c.path: c.key for c in choices})
    st.sidebar.selectbox("Model", paths, index=paths.index(current), format_func=lambda p: labels.get(p, p),
                         key="_model_select", on_change=_picked)
    st.session_state[MODEL_KEY] = current
    if more:
        st.sidebar.button(f"Show {PAGE_SIZE} more models", key="_more_models", on_click=_more_models,
                          help="Runs are listed newest first, a page at a time.")
    summaries = {c.path: c.summary for c in choices}
    if summaries.get(current):
        st.sidebar.caption(plain(summaries[current]))  # words from a metadata file: text, never Markdown
    keys = {c.path: c.key for c in choices}
    if current in keys:
        share(model=keys[current])


def _more_models() -> None:
    st.session_state[SHOWN_MODELS] += PAGE_SIZE


def _picked() -> None:
    # A callback may run after its key was dropped (open_model, between the browser's widget state and its rerun):
    # every callback reads its widget with .get and does nothing without it (tests/app/test_home.py).
    if (path := st.session_state.get("_model_select")) is not None:
        st.session_state[MODEL_KEY] = path


def open_model(path: str) -> None:
    """Make path the explored model (e.g. from the Train page)."""
    st.session_state[MODEL_KEY] = path
    st.session_state.pop("_model_select", None)


def current_translator(required: bool = True) -> Translator | None:
    """The chosen model's Translator (its checkpoint: `.checkpoint`), or None after saying on the page why
    there is none."""
    from transformer.model.checkpoint import CheckpointError

    path = st.session_state.get(MODEL_KEY)
    if path is None:
        if required:
            st.info(
                f"No model found in `{checkpoints_dir()}` or `{runs_dir()}`. Train one on the **Train** page "
                "(the *tiny* preset learns visible alignments in a few minutes on a laptop CPU), or from a shell:\n\n"
                "`python -m transformer.training --corpus bible --src en --tgt fr --preset tiny --out runs/tiny`"
            )
        return None
    if not is_model_path(path):
        st.error(f"The explorer opens models from {code(checkpoints_dir())} and {code(runs_dir())} only.")
        return None
    try:
        return language_choice.chosen(_load(path, checkpoint_stamp(path)), path)
    except (CheckpointError, TokenizerError, OSError) as e:  # a checkpoint without tokenizer.json included
        st.error(f"This checkpoint cannot be loaded: {code(e)}")
        return None


@contextmanager
def decode_turn() -> Iterator[OnWait]:
    """An on_wait for ui.shared.models.translation_gate:
    while every decode slot of the server is taken, this place on the page
    says so; the note goes once the work is done. Nothing is drawn unless it waits: an element drawn on some runs only
    would move the elements after it, and Streamlit would redraw them (closing an open expander)."""
    shown = []

    def waiting(running: int, waiting: int) -> None:
        shown.append(st.info(f"Waiting for a free slot: {running} translations are running on this server and "
                             f"{waiting} request{'s' if waiting > 1 else ''} (yours included) wait their turn.",
                             icon=":material/hourglass_top:"))

    try:
        yield waiting
    finally:
        for note in shown:
            note.empty()

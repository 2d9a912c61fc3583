"""Train: start a training run in the background, follow it live, stop, resume, open it in the explorer."""

import time

import streamlit as st

from ui.shared.models.catalog import PAGE_SIZE, runs_dir
from ui.shared.page import page_setup
from ui.shared.state.page_state import choice_box
from ui.shared.training import jobs
from ui.train.command_form import corpus_args, model_args
from ui.train.live_run import live_run


def start_form() -> None:
    if st.session_state.pop("train_fresh_name", False) or "train_name" not in st.session_state:
        # set before the widget: a box created with a new default keeps showing the old text in the browser
        st.session_state.train_name = time.strftime("run-%Y%m%d-%H%M%S")
    with st.expander("Start a new run", expanded=not jobs.list_runs(runs_dir(), limit=1)):
        name = st.text_input("Run name", key="train_name")
        corpus = corpus_args()
        args = model_args(corpus)
        if st.button("Start training", key="train_start", type="primary"):
            if corpus is None:
                st.error("Choose the corpus first (see above).")
                return
            try:
                info = jobs.start_run(runs_dir(), name, corpus.args + args, corpus_tsv=corpus.upload)
            except ValueError as e:
                st.error(str(e))
                return
            st.session_state.train_run = info.name
            st.session_state.train_fresh_name = True  # a fresh name for the next run
            st.rerun()


def main() -> None:
    page_setup("train")
    st.title("Train")
    st.markdown("Training runs as a background process of `python -m transformer.training`: it keeps going when you "
                "reload the page or close the browser, and **Stop** saves a checkpoint that **Resume** continues from.")
    start_form()
    runs, more = listed_runs()
    if not runs:
        st.info(f"No runs yet in `{runs_dir()}`.")
        return
    states = {r.name: r.state for r in runs}
    name = choice_box(st, "Run", list(states), key="train_run", format_func=lambda n: f"{n} ({states[n]})",
                      help="Its state as of the page's last update; the panel below follows it live.")
    if more:
        st.button(f"Show {PAGE_SIZE} more runs", key="train_more", on_click=_more_runs,
                  help="Runs are listed newest first, a page at a time.")
    live_run(runs_dir() / name)


def listed_runs() -> tuple[list[jobs.RunInfo], bool]:
    """The newest runs, a page at a time (and the picked one wherever it is); whether there are more."""
    shown = st.session_state.setdefault("train_shown", PAGE_SIZE)
    runs = jobs.list_runs(runs_dir(), limit=shown + 1)
    more, runs = len(runs) > shown, runs[:shown]
    picked = st.session_state.get("train_run")
    if picked and picked not in {r.name for r in runs} and jobs.is_run(runs_dir() / picked):
        runs.append(jobs.run_info(runs_dir() / picked))
    return runs, more


def _more_runs() -> None:
    st.session_state.train_shown += PAGE_SIZE


main()

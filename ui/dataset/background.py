"""A split's table computed in the background (a thread holding one of the server's decode slots, as Explain heads'
importance does), one job per server for a model version, split and lenses, its progress polled by a fragment.
Its rows are cached on disk (`transformer.explain.dataset_cache`) under the app's cache folder, never in the
repository: EXPLORER_CACHE, else $XDG_CACHE_HOME/attention-explorer, else ~/.cache/attention-explorer.

A job stops within a sentence when asked: by its Stop button (the rows done are kept and it goes on from there
later), or by the server's exit (`translation_gate.start_background`), so a Ctrl+C never aborts the process.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import streamlit as st

from transformer.decoding.translate import Translator
from transformer.explain.dataset import DatasetResult, Split, dataset_table
from ui.shared.models.catalog import checkpoint_stamp
from ui.shared.models.translation_gate import Background, decode_slot, start_background
from ui.shared.text.plain import plain

MAX_SECONDS = 120  # one computation's cap; the rows done are cached and the next one goes on from there


def cache_dir() -> Path:
    if os.environ.get("EXPLORER_CACHE"):
        return Path(os.environ["EXPLORER_CACHE"]) / "datasets"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attention-explorer" / "datasets"


class DatasetJob:
    """One table being computed: its progress, then its result or the error that stopped it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.work: Background | None = None
        self.done = self.total = 0
        self.result: DatasetResult | None = None
        self.error: str | None = None
        self.seconds = 0.0

    @property
    def running(self) -> bool:
        return self.work is not None and self.work.running

    @property
    def thread(self) -> threading.Thread | None:
        return None if self.work is None else self.work.thread

    def start(self, translator: Translator, split: Split, lenses: tuple[str, ...]) -> None:
        with self.lock:
            if self.running:
                return
            self.error, self.result, self.done, self.total = None, None, 0, len(split.pairs)
            self.work = start_background("dataset-table", lambda stop: self._run(translator, split, lenses, stop))

    def stop(self) -> None:
        """Ask the computation to stop after the sentence it is on; its result keeps the rows done."""
        if self.work is not None:
            self.work.stop.set()

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def _run(self, translator: Translator, split: Split, lenses: tuple[str, ...], stop: threading.Event) -> None:
        started = time.perf_counter()
        try:
            with decode_slot(stop=stop):  # one of the server's decode slots for the whole computation
                self.result = dataset_table(translator, split, lenses=lenses, cache_dir=cache_dir(),
                                            max_seconds=MAX_SECONDS, progress=self._progress, stop=stop)
        except Exception as e:  # shown on the page, which offers to try again
            self.error = f"{type(e).__name__}: {e}"
        self.seconds = time.perf_counter() - started


@st.cache_resource(max_entries=16)
def _job(path: str, stamp: float, split_key: str, sentences: int, lenses: tuple[str, ...]) -> DatasetJob:
    return DatasetJob()


@st.fragment(run_every=1.0)
def _progress(job: DatasetJob) -> None:
    if not job.running:
        st.rerun(scope="app")
    st.progress(job.done / max(job.total, 1), text=f"{job.done:,} of {job.total:,} sentences translated and scored")
    if st.button("Stop", key="ds_stop", help="Stop after the sentence being scored: the rows done are kept, and "
                 "*Go on from there* computes the rest later."):
        job.stop()


def table_in_background(translator: Translator, split: Split, lenses: tuple[str, ...]) -> DatasetResult | None:
    """The split's result once computed; meanwhile a progress bar (None). Starts on the first visit: the rows
    already cached come back at once."""
    path = str(translator.checkpoint.path)
    job = _job(path, checkpoint_stamp(path), split.key, len(split.pairs), lenses)
    st.session_state["ds_job"] = job  # for tests: the job of this page's choices
    if job.result is None and not job.running:
        if job.error:
            st.error(f"The computation failed: {job.error}")
            if not st.button("Try again", key="ds_retry"):
                return None
        job.start(translator, split, lenses)
        time.sleep(0.2)  # a cached table is back by now: no progress bar flashes
    if job.running:
        _progress(job)
        return None
    result = job.result
    if result is not None and result.table.empty:  # stopped before its first rows: nothing to score or slice
        st.info(plain(result.notes[-1][0].upper() + result.notes[-1][1:]))
    if result is not None and not result.complete and st.button("Go on from there", key="ds_more", type="primary"):
        job.result = None
        job.start(translator, split, lenses)
        st.rerun()
    return None if result is None or result.table.empty else result

"""The Explain page's views of every head at once: statistics and roles over a dev sample, importance by ablation
(computed in the background, cached per checkpoint), and a probe's attention across a training run.

Every number comes from `transformer.explain`; this module draws widgets and figures only.
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import streamlit as st

from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from transformer.data.spec import LOCAL_KINDS
from transformer.decoding.translate import Translator
from transformer.explain import (
    STATISTICS,
    HeadImportance,
    head_importance,
    head_labels,
    head_statistics,
    intervened,
    probe_history,
    sample_bleu,
)
from transformer.explain.history import probe_labels
from transformer.explain.interventions import Head
from transformer.runs import probe_steps, read_metrics, read_probe_maps, read_probe_snapshot
from ui.explain import head_maps, importance_ties
from ui.explain.one_sentence import NAMES, SHORT, head_name
from ui.shared import heatmaps
from ui.shared.attention.families import FAMILIES
from ui.shared.charts import training_curves
from ui.shared.charts.show import chart
from ui.shared.models.catalog import checkpoint_stamp, no_corpus, runs_dir
from ui.shared.models.corpus_access import corpus_readable
from ui.shared.models.loading import decode_turn
from ui.shared.models.teaching_model import is_teaching
from ui.shared.models.translation_gate import Background, Stopped, decode_slot, start_background
from ui.shared.state import class_mode
from ui.shared.state.page_state import choice_box
from ui.shared.text.plain import code, plain
from ui.shared.training import jobs

SAMPLE_SIZES = (8, 16, 32, 64, 128)


@st.cache_data(max_entries=4, show_spinner="Loading the corpus's dev sentences…")
def _corpus_pairs(corpus: str) -> list[tuple[str, str]]:
    from transformer.data.corpora.base import CorpusError
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec

    try:
        loaded = load_corpus(CorpusSpec.from_dict(json.loads(corpus)).for_evaluation())
    except (CorpusError, OSError, ValueError, ImportError):
        return []
    return list(loaded.dev) + list(loaded.test)


def dev_pairs(translator: Translator, n: int) -> list[tuple[str, str]]:
    """The first n dev (then test) pairs of the corpus the model was trained on; [] when it cannot be loaded."""
    corpus = translator.checkpoint.metadata.get("corpus")
    if not isinstance(corpus, dict) or corpus.get("kind") not in LOCAL_KINDS or not corpus_readable(corpus):
        return []
    return _corpus_pairs(json.dumps(corpus, sort_keys=True))[:n]


def reference_of(translator: Translator, source: str) -> str:
    """The corpus's translation of source when it is one of its dev or test sentences, or, for the teaching model,
    the grammar's French of any sentence the grammar parses (train sentences included); else ""."""
    found = next((tgt for src, tgt in dev_pairs(translator, 100_000) if src == source), "")
    if not found and is_teaching(translator.checkpoint.metadata):
        pair = align(normalize_text(source))
        found = pair.tgt if pair is not None else ""
    return found


def _stamp(translator: Translator) -> tuple[str, float]:
    path = str(translator.checkpoint.path)
    return path, checkpoint_stamp(path)


# ----------------------------------------------------------------------------- 3. statistics and roles


@st.cache_resource(max_entries=8, show_spinner="Reading every head's attention over the sample…")
def _statistics(path: str, stamp: float, n: int, _translator: Translator, _pairs: list[tuple[str, str]]):
    with decode_slot():
        return head_statistics(_translator.model, _translator.tokenizer, _pairs)


def statistics_view(translator: Translator) -> None:
    n = st.select_slider("Dev sentences", SAMPLE_SIZES, value=32, key="ex_stats_n")
    pairs = dev_pairs(translator, n)
    if not pairs:
        st.info(no_corpus(translator.checkpoint.metadata))
        return
    stats = _statistics(*_stamp(translator), len(pairs), translator, pairs)
    c1, c2 = st.columns([2, 1])
    family = c1.radio("Attention", list(FAMILIES), format_func=FAMILIES.get, key="ex_stats_family", horizontal=True)
    usable = [s for s in STATISTICS if not stats.get(family, s).isnan().all()]
    statistic = choice_box(c2, "Statistic", usable, key="ex_stats_name", format_func=STATISTICS.get,
                           follow=lambda old, opts: 0)
    labels = head_labels(stats, family)
    hover = [[f"{SHORT[family]} layer {layer}, head {head}<br><b>{plain_html(lab.describe())}</b><br>" +
              "<br>".join(f"{STATISTICS[k]}: {v:.2f}" for k, v in lab.numbers.items() if not math.isnan(v))
              for head, lab in enumerate(row)] for layer, row in enumerate(labels)]
    values = stats.get(family, statistic).numpy()
    bounded = statistic not in ("entropy", "distance")
    fig = head_maps.heads_map(values, title=f"{FAMILIES[family]}: {STATISTICS[statistic]}", hover=hover,
                                    labels=[[lab.role for lab in row] for row in labels],
                                    zmax=1.0 if bounded else None)
    chart(st, fig, key="ex_stats_map", filename=f"head-statistics-{family}-{statistic}", theme=None)
    st.caption(f"Mean over every query row of {stats.sentences} dev sentences, each target teacher-forced. A bold "
               "line names a role when one statistic is clear-cut (e.g. more than half the weight on the previous "
               "token); hover a head for all its numbers.")
    roles = [(layer, head, lab.describe()) for layer, row in enumerate(labels) for head, lab in enumerate(row)
             if lab.role]
    if roles:
        st.dataframe(pd.DataFrame(roles, columns=["layer", "head", "role"]), key="ex_stats_roles", hide_index=True)
    else:
        st.caption("No head of this family has a clear-cut role here: each spreads its weight over several kinds "
                   "of tokens. The numbers still compare heads with one another.")


def plain_html(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


# ----------------------------------------------------------------------------- 2. importance


@dataclass
class ImportanceJob:
    """One background computation of head importance; its progress and result are read by every session. It stops
    after the head it is on when the server exits (`translation_gate.start_background`)."""

    done: int = 0
    total: int = 0
    result: HeadImportance | None = None
    error: str | None = None
    seconds: float = 0.0
    work: Background | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def running(self) -> bool:
        return self.work is not None and self.work.running

    @property
    def thread(self) -> threading.Thread | None:
        return None if self.work is None else self.work.thread

    def start(self, translator: Translator, pairs, bleu_pairs) -> None:
        with self.lock:
            if self.running or self.result is not None:
                return
            self.error = None
            self.work = start_background("head-importance",
                                         lambda stop: self._run(translator, pairs, bleu_pairs, stop))

    def _run(self, translator: Translator, pairs, bleu_pairs, stop: threading.Event) -> None:
        def progress(done: int, total: int, _head: Head | None) -> None:
            self.done, self.total = done, total
            if stop.is_set():  # head_importance's one hook between heads: leave through it
                raise Stopped(f"stopped after {done} of {total} heads")

        started = time.perf_counter()
        try:
            with decode_slot(stop=stop):  # one of the server's decode slots for the whole computation
                self.result = head_importance(translator.model, translator.tokenizer, pairs, bleu_pairs=bleu_pairs,
                                              progress=progress)
        except Exception as e:  # shown on the page, which offers to try again
            self.error = f"{type(e).__name__}: {e}"
        self.seconds = time.perf_counter() - started


@st.cache_resource(max_entries=8)
def importance_job(path: str, stamp: float, n_ll: int, n_bleu: int) -> ImportanceJob:
    """The job of one checkpoint version and sample: computed once per server, then cached."""
    return ImportanceJob()


@st.fragment(run_every=1.0)
def _importance_progress(job: ImportanceJob) -> None:
    if not job.running:
        st.rerun(scope="app")
    st.progress(job.done / max(job.total, 1), text=f"{job.done} of {job.total or '…'} heads switched off so far")


def _open_in_ablation(heads: list[Head]) -> None:
    st.session_state["ex_off"] = sorted(set(heads))
    st.session_state["ex_view"] = "ablate"


def _head_clicked(family: str) -> None:
    cell = head_maps.picked_cell((st.session_state.get(f"ex_imp_map_{family}") or {}).get("selection") or {})
    if cell is not None:
        _open_in_ablation([*st.session_state.get("ex_off", []), (family, *cell)])


def importance_view(translator: Translator) -> None:
    c1, c2 = st.columns(2)
    n_ll = c1.select_slider("Dev sentences for the log-likelihood", SAMPLE_SIZES, value=64, key="ex_imp_n")
    n_bleu = c2.select_slider("Of which translated for BLEU", (0, *SAMPLE_SIZES[:3]), value=16, key="ex_imp_bleu")
    pairs = dev_pairs(translator, n_ll)
    if not pairs:
        st.info(no_corpus(translator.checkpoint.metadata))
        return
    job = importance_job(*_stamp(translator), len(pairs), min(n_bleu, len(pairs)))
    st.session_state["ex_imp_job"] = job  # for tests: the job of this page's choices
    if job.result is None and not job.running:
        if job.error:
            st.error(f"The computation failed: {code(job.error)}")
        st.markdown("Each head is switched off alone and the dev sample scored again (Michel et al., 2019): the drop "
                    "in log-likelihood per token, and in BLEU, is what the head is worth. It runs in the background "
                    "on one core; the result is kept for this checkpoint.")
        if st.button("Compute head importance", key="ex_imp_start", type="primary"):
            job.start(translator, pairs, pairs[: min(n_bleu, len(pairs))])
            st.rerun()
        return
    if job.running:
        _importance_progress(job)
        return
    result = job.result
    st.caption(f"Computed in {job.seconds:.0f} s over {result.sentences} sentences (log-likelihood per token "
               f"{result.base_log_likelihood:.3f})" + (f" and {result.bleu_sentences} for BLEU ({result.base_bleu:.1f})"
                                                       if result.bleu is not None else "") + ". Click a head to "
               "switch it off in *Switch heads off*.")
    by = "log_likelihood"
    if result.bleu is not None:
        by = st.radio("Importance as the drop in", ["log_likelihood", "bleu"], horizontal=True, key="ex_imp_by",
                      format_func={"log_likelihood": "log-likelihood per token", "bleu": "BLEU"}.get)
    values = result.log_likelihood if by == "log_likelihood" else result.bleu
    top = max(float(np.abs(v.numpy()).max()) for v in values.values()) or 1.0
    columns, width = class_mode.map_columns(len(FAMILIES))
    for column, family in zip(columns, FAMILIES):
        fig = head_maps.heads_map(values[family].numpy(), title=SHORT[family], diverging=True, zmax=top,
                                        fmt=".3f" if by == "log_likelihood" else ".1f")
        chart(column, fig, key=f"ex_imp_map_{family}", filename=f"head-importance-{family}", theme=None,
              share=width,
              on_select=lambda f=family: _head_clicked(f), selection_mode="points")
    ranked = result.ranked(by)
    st.markdown("**The most important heads**")
    tied = {i for first, end, _ in result.ties(by) for i in range(first, end)}
    for i, (head, value) in enumerate(ranked[:5]):
        c1, c2 = st.columns([3, 1])
        c1.markdown(f"{i + 1}. {head_name(head)}: {importance_ties.value_text(value, by)}"
                    + (" (tie)" if i in tied else ""))
        c2.button("Switch it off", key=f"ex_imp_off_{i}", on_click=_open_in_ablation, args=([head],))
    note = importance_ties.ranking_note(result, by, 5)
    if note:
        st.info(note, icon=":material/balance:")
    _keep_top(translator, result, by, pairs[: result.bleu_sentences or 16])


def _keep_top(translator: Translator, result: HeadImportance, by: str, bleu_pairs) -> None:
    n_heads = len(result.ranked(by))
    st.markdown("**Keep only the top k heads**: every other head off.")
    c1, c2, c3 = st.columns([2, 1, 1])
    k = c1.slider("k", 1, n_heads, max(1, n_heads // 4), key="ex_imp_k")
    kept = result.keep_top(k, by)
    note = importance_ties.keep_note(result, k, by)
    if note:
        st.info(note, icon=":material/balance:")
    scores = st.session_state.setdefault("ex_imp_kept", {})
    if c2.button("Measure BLEU", key="ex_imp_measure"):
        with decode_turn() as on_wait, decode_slot(on_wait):
            scores[(by, k)] = sample_bleu(intervened(translator.model, kept), translator.tokenizer, bleu_pairs)
    c3.button("Open in Switch heads off", key="ex_imp_open", on_click=_open_in_ablation, args=(sorted(kept.heads_off),))
    if scores:
        st.dataframe(pd.DataFrame([(b, kk, s) for (b, kk), s in sorted(scores.items())],
                                  columns=["ranked by", "heads kept", "BLEU"]), key="ex_imp_kept_table",
                     hide_index=True)
        if result.base_bleu is not None:
            st.caption(f"With every head: BLEU {result.base_bleu:.1f} on the same {len(bleu_pairs)} sentences.")


# ----------------------------------------------------------------------------- 7. across training


def training_view() -> None:
    runs = [r for r in jobs.list_runs(runs_dir()) if probe_steps(r.root)]
    if not runs:
        st.info(f"No run under {code(runs_dir())} has probe snapshots yet: start one on the Train page.")
        return
    names = [r.name for r in runs]
    name = st.selectbox("Run", names, key="ex_run")
    run = runs[names.index(name)]
    steps = probe_steps(run.root)
    snapshot = read_probe_snapshot(run.root, steps[-1])
    if snapshot is None or not snapshot.probes:
        st.info("The newest snapshot cannot be read yet; refresh in a moment.")
        return
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    probe = c1.selectbox("Probe sentence", list(range(len(snapshot.probes))), key="ex_probe",
                         format_func=lambda i: snapshot.probes[i].source[:60])
    family = c2.radio("Attention", list(FAMILIES), format_func=FAMILIES.get, key="ex_tr_family")
    n_layers, n_heads = read_probe_maps(run.root, steps[-1], probe)[family].shape[:2]
    layer = choice_box(c3, "Layer", list(range(n_layers)), key="ex_tr_layer", follow=lambda o, opts: len(opts) - 1)
    head = c4.selectbox("Head", [-1, *range(n_heads)], key="ex_tr_head",
                        format_func=lambda h: "mean of heads" if h == -1 else f"head {h}")
    frames = probe_history(run.root, probe, family, layer, None if head == -1 else head)
    if not frames:
        st.info("No snapshot of this probe can be read.")
        return
    by_step = {f.step: f for f in frames}
    if run.active and st.button("Refresh", key="ex_tr_refresh", icon=":material/refresh:"):
        st.rerun()
    step = st.select_slider("Snapshot", list(by_step), value=list(by_step)[-1], key=f"ex_tr_step_{len(by_step)}",
                            format_func=lambda s: f"step {s}")
    frame = by_step[step]
    rows, cols = probe_labels(frame.record, family)
    st.markdown(f"**Step {step}.** {plain(frame.record.source)} → *{plain(frame.record.translation) or '∅'}*")
    head_text = "mean of heads" if head == -1 else f"head {head}"
    title = f"{FAMILIES[family]}, layer {layer}, {head_text}"
    chart(st, heatmaps.attention_heatmap(frame.weights.numpy(), rows, cols, title=title, query_name=NAMES[family][0],
                                        key_name=NAMES[family][1]), key="ex_tr_map", filename=f"{title}-step-{step}",
          theme=None)
    st.altair_chart(training_curves.training_curves(read_metrics(run.root), cursor=step), width="content",
                    key="ex_tr_curves")
    st.caption("The red rule is the snapshot above; hover a panel to read every curve at a step.")
    player = st.expander("Play every snapshot as an animation", key="ex_tr_animation_open", on_change="rerun")
    with player:
        if player.open:  # built and drawn only while open
            animation = [(f.step, f.weights.numpy(), *probe_labels(f.record, family)) for f in frames]
            chart(st, head_maps.training_animation(animation, title=title, query_name=NAMES[family][0],
                                                         key_name=NAMES[family][1]),
                  key="ex_tr_animation", filename=f"{title}-animation", theme=None)
    st.caption(f"Run {code(run.name)}: {run.state}, {len(frames)} snapshots, one per evaluation."
               + (" It is still training: Refresh picks up new snapshots." if run.active else ""))

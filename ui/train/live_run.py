"""The Train page's live view of one run: status, progress, controls, curves and the probe sentence's attention,
redrawn every 2 s."""

from __future__ import annotations

import time

import streamlit as st

from transformer.charts.heatmap import heatmap
from transformer.charts.training_curves import training_curves
from transformer.runs import RunFiles, probe_steps, read_metrics, read_probe_maps, read_probe_snapshot
from ui.shared.charts.show import chart
from ui.shared.models.loading import open_model
from ui.shared.models.teaching_model import probe_gold_cells
from ui.shared.state import class_mode
from ui.shared.text.plain import code, plain
from ui.shared.training import jobs
from ui.train import metric_curves


def _charts(records: list[dict]) -> None:
    chart(st, training_curves(records, sizes=class_mode.sizes()), key="train_curves", filename="training-curves")
    st.caption("Loss, dev BLEU / chrF and learning rate on one step axis: hover a panel to read every curve at "
               "that step.")
    (c1, c2), share = class_mode.map_columns(2)  # one under the other in class mode: half a page is too narrow
    sizes = class_mode.sizes(share)
    chart(c1, metric_curves.metric_curves(records, ["tokens_per_s"], title="tokens / s", sizes=sizes),
          key="train_tps_chart", filename="tokens-per-second")
    aer_keys = sorted(k for r in records for k in r if k.startswith("dev_aer_layer"))
    if aer_keys:  # a corpus with gold word links (the teaching corpus)
        chart(c2, metric_curves.metric_curves(records, ["dev_aer_best", *dict.fromkeys(aer_keys)],
                                              title="dev alignment error rate %", y_title="AER % (lower is better)",
                                              sizes=sizes),
              key="train_aer_chart", filename="dev-aer")
        chart(c1, metric_curves.metric_curves(records, ["dev_exact"], title="dev exact-match sentences %",
                                              y_title="exact match %", sizes=sizes),
              key="train_exact_chart", filename="dev-exact-match")


def _probes(root) -> None:
    steps = probe_steps(root)
    if not steps:
        st.caption("The probe sentence's attention appears here after the first evaluation.")
        return
    index = st.slider("Snapshot", 0, len(steps) - 1, len(steps) - 1, format="%d",
                      help="One snapshot per evaluation; moves to the newest when a new one arrives.") \
        if len(steps) > 1 else 0
    snapshot = read_probe_snapshot(root, steps[index])
    if snapshot is None or not snapshot.probes:
        st.caption("This snapshot cannot be read.")
        return
    record = snapshot.probes[0]
    cross = read_probe_maps(root, steps[index])["cross"][-1].mean(0).numpy()  # (T, S): last layer, mean of heads
    st.markdown(f"**Step {steps[index]}.** {plain(record.source)} → *{plain(record.translation) or '∅'}*")
    cells = probe_gold_cells(record)
    drawn = heatmap(cross, record.tgt_pieces, record.src_pieces, title="cross-attention, last layer, mean of heads",
                    row_title="target query", col_title="source key", outlines={"gold link": cells},
                    sizes=class_mode.sizes())
    if cells:
        st.caption("Orange outlines: the teaching grammar's gold links, shown once the model's output is the "
                   "grammar's French.")
    chart(st, drawn, key="train_probe", filename=f"probe-step-{steps[index]}-cross-attention")


def _controls(info: jobs.RunInfo) -> None:
    c1, c2, c3 = st.columns(3)
    if info.active and c1.button("Stop (saves a checkpoint)", key="train_stop"):
        jobs.stop_run(info.root)
        st.toast("Stopping: the run saves a checkpoint first.")
    latest = RunFiles(info.root).checkpoint("latest")
    if not info.active and latest.is_dir():  # where Stop was: the controls start at the left
        more = c1.number_input("Resume until step", info.step + 1, 10_000_000, jobs.resume_target(info),
                               key=f"train_more_{info.name}_{info.max_steps}")
        if c1.button("Resume", key="train_resume"):
            try:
                jobs.resume_run(info.root, int(more))
            except ValueError as e:
                st.error(str(e))
    best = RunFiles(info.root).checkpoint("best")
    target = best if best.is_dir() else latest
    if target.is_dir() and c3.button("Open in the explorer", key="train_open"):
        open_model(str(target))
        st.switch_page("pages/1_Translate.py")


SETUP_NAMES = {"self_attention": "self-attention"}


def _setup(choices: tuple[jobs.SetupChoice, ...]) -> None:
    """How the run computes: its precision in one line, every decision with its reason in an expander."""
    if not choices:
        return
    by_name = {c.name: c for c in choices}
    if "precision" in by_name:
        precision = by_name["precision"]
        st.caption(f"Precision **{plain(precision.value)}**: {plain(precision.reason)}.")
    with st.expander("How this run computes, and why"):
        st.markdown("\n".join(f"- **{SETUP_NAMES.get(c.name, c.name)}**: {plain(c.value)} ({plain(c.reason)})"
                               for c in choices))


@st.fragment(run_every=2)
def live_run(root) -> None:
    """Status, progress, curves and probe attention of one run, redrawn every 2 s."""
    info = jobs.run_info(root)
    seen = st.session_state.setdefault("train_seen_state", {})
    previous, seen[info.name] = seen.get(info.name), info.state
    if previous is not None and previous != info.state:
        st.rerun(scope="app")  # the buttons and the Run box outside this fragment show the state too
    records = read_metrics(RunFiles(root).metrics)
    st.markdown(f"**Run {code(info.name)}: {info.state}**" + (f" (pid {info.pid})" if info.active else ""))
    if info.state in ("crashed", "failed"):
        st.error(f"Training {info.state}: {plain(info.error or 'no error recorded')}")
        st.code(jobs.log_tail(root) or "(empty log)", language="text")
    if info.max_steps:
        eta = jobs.eta_seconds(records, info.max_steps)
        left = f", about {eta / 60:.1f} min left" if eta and info.active else ""
        text = f"step {info.step} / {info.max_steps}{left}"
        st.progress(min(info.step / info.max_steps, 1.0), text=text)
    elif info.state == "starting":
        st.progress(0.0, text="starting: loading the corpus and training the tokenizer…")
    _setup(info.setup)
    _controls(info)
    if records:
        _charts(records)
        _probes(root)
    elif info.state != "crashed":
        st.info("No metrics yet.")
    st.caption(f"updated {time.strftime('%H:%M:%S')}")

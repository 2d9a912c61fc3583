"""The training loop: a generator of metric records over a run directory.

`Trainer(run_dir).fit()` prepares data, tokenizer and model (training.setup; or restores them from the
run's latest checkpoint), then trains and yields one dict per log or eval point. It writes metrics.jsonl,
status.json, checkpoints (training.run) and probe attention maps itself, in the formats of transformer.runs,
and the same metrics and probes as TensorBoard event files (training.tensorboard_log, best effort); it never
prints. It holds the run's lock from construction to the end of fit (or close), so two trainings never write
one run. A resume after a kill continues from the latest checkpoint and first drops the metrics and probes
logged after it, so that each step is logged once. A failed write (disk full) stops the run with a
TrainingError; the previous checkpoint stays intact.

How the run computes is decided once at setup (training.setup.setup_decisions) and recorded with reasons in
status.json's `setup` and in the log. Under torchrun each rank trains on its own shard of batches through
DistributedDataParallel; rank 0 alone writes and evaluates (training.dev_eval); training.distributed forms
the process group without hanging.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from transformer import memory
from transformer.files import write_json_atomic
from transformer.runs import (
    RunFiles,
    RunInUseError,
    RunLock,
    append_metrics,
    discard_probes_after,
    read_status,
    truncate_metrics,
    write_probes,
    write_status,
)
from transformer.training import distributed
from transformer.training.batching import collate, make_batches
from transformer.training.dev_eval import Pairs, on_device
from transformer.training.distributed import COLLECTIVE_TIMEOUT, START_TIMEOUT, DistributedStartError
from transformer.training.precision import autocast
from transformer.training.recipe import TrainConfig, TrainState, learning_rate
from transformer.training.run import RunCheckpoints, TrainingError, load_run_spec, writing
from transformer.training.setup import Prepared, prepare_run
from transformer.training.tensorboard_log import RunBoard

log = logging.getLogger(__name__)


class Trainer:
    """One run directory's training: `fit()` prepares, trains, evaluates and saves, yielding each metric record."""

    def __init__(self, root: str | Path, *, overrides: dict[str, Any] | None = None,
                 start_timeout: float = START_TIMEOUT, collective_timeout: float = COLLECTIVE_TIMEOUT):
        """overrides replace TrainConfig fields of the stored spec (e.g. max_steps when resuming)."""
        self.files = RunFiles(Path(root))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.is_main = self.rank == 0
        self.lock = RunLock(self.files)
        self.board = RunBoard(None)  # opened by fit once the run's resume point is known
        self.setup: dict[str, dict[str, Any]] = {}
        if self.is_main and self.files.root.is_dir():
            try:
                self.lock.acquire()
            except RunInUseError as e:
                raise TrainingError(str(e)) from e
        try:
            distributed.start(self.rank, self.world_size, start_timeout, collective_timeout)
            self.spec = load_run_spec(root)
            if overrides:
                self.spec = replace(self.spec, train=replace(self.spec.train, **overrides))
                if self.is_main:
                    write_json_atomic(self.files.run_json, self.spec.to_dict())
        except DistributedStartError as e:
            self.close()
            raise TrainingError(str(e)) from e
        except BaseException:
            self.close()
            raise
        self.config = self.spec.train
        self.stop_requested = False
        self.ended_by = ""  # which limit ended the run, once fit has finished it

    def _write_status(self, state: str, **fields: Any) -> None:
        """status.json, with the run's setup decisions (precision and the rest, each with its reason) once known."""
        write_status(self.files, state, **fields, **({"setup": self.setup} if self.setup else {}))

    def close(self) -> None:
        """Release the run (fit does this when it ends); the lock also goes when the process dies."""
        self.lock.release()
        self.board.close()
        distributed.stop(self.world_size)

    def request_stop(self) -> None:
        """Ask the loop to save a checkpoint and return after the current step (signal-safe)."""
        self.stop_requested = True

    # ------------------------------------------------------------------------- setup

    def fit(self) -> Iterator[dict[str, Any]]:
        c = self.config
        state, ddp = TrainState(), None
        try:
            if self.is_main:  # at once, so that a watcher never sees the previous state of a resumed run
                with writing(self.files, self.files.status):
                    write_status(self.files, "starting", step=read_status(self.files.status).get("step", 0),
                                 max_steps=c.max_steps)
            memory.start_trimming(memory.TRAINING_TRIM_EVERY, collect=False)  # glibc's heap grows otherwise
            run = prepare_run(self.files, self.spec, self.world_size, self.is_main)
            state = run.state
            ddp = self._prepare(run)
            if self.is_main:
                with writing(self.files, self.files.status):
                    self._write_status("running", step=state.step, max_steps=c.max_steps)
            yield from self._loop(ddp, run.optimizer, run.train, state)
        except Exception as e:  # a bad corpus as much as a NaN: the app shows this error
            if self.is_main:
                with contextlib.suppress(OSError):  # the disk that just failed may refuse this too
                    self._write_status("failed", step=state.step, error=str(e))
            raise
        finally:
            # DDP's reducer holds the process group: gone before the group is, or a rank can abort at exit
            # ("terminate called without an active exception", 1 run in 7 of the two-rank test)
            del ddp
            gc.collect()
            self.close()

    def _prepare(self, run: Prepared):
        """Take over a prepared run; drop what a killed run logged after its checkpoint; the step to train with."""
        self.device, self.model, self.loss_fn, self.evaluator = run.device, run.model, run.loss_fn, run.evaluator
        self.pad_id = run.tokenizer.specials.pad  # what the batches are padded with
        self.checkpoints = RunCheckpoints(self.files, run.model, run.tokenizer, run.meta, self.config.keep_last)
        if self.is_main:  # what a killed run logged after its latest checkpoint is logged again from here
            with writing(self.files, self.files.metrics):
                dropped = truncate_metrics(self.files.metrics, run.state.step)
                discard_probes_after(self.files, run.state.step)
            if dropped:
                log.info("dropped %d metric records logged after step %d", dropped, run.state.step)
            self.board = RunBoard(self.files.tensorboard, purge_step=run.state.step)
        self.precision = run.decisions["precision"].value
        self.setup = {name: d.to_dict() for name, d in run.decisions.items()}
        for name, decision in run.decisions.items():
            log.info("%s: %s (%s)", name, decision.value, decision.reason)
        step = self.loss_fn
        if self.world_size > 1:
            step = torch.nn.parallel.DistributedDataParallel(step)
        if self.config.compile:
            step = torch.compile(step, dynamic=True)
        return step

    # ------------------------------------------------------------------------- the loop

    def _loop(self, ddp, optimizer, train: Pairs, state: TrainState) -> Iterator[dict[str, Any]]:
        c, model = self.config, self.model
        scaler = torch.amp.GradScaler(enabled=self.precision == "fp16" and self.device.type == "cuda")
        lengths = [(len(s), len(t) - 1) for s, t in train]
        interval = Interval()
        started, elapsed_before = time.perf_counter(), state.elapsed
        while state.step < c.max_steps and (c.max_epochs is None or state.epoch < c.max_epochs):
            batches = make_batches(lengths, c.max_tokens, shuffle=True, seed=c.seed + state.epoch)
            per_rank = len(batches) // self.world_size  # equal counts, so no rank waits forever in DDP
            batches = batches[self.rank : per_rank * self.world_size : self.world_size]
            if not batches:  # or the epochs would turn forever without a step
                raise TrainingError(f"the training split makes no batch (of --max-tokens {c.max_tokens}) for each of "
                                    f"{self.world_size} process(es)")
            while state.batch < len(batches) and state.step < c.max_steps:
                group = [collate([train[i] for i in batches[b]], self.pad_id) for b in
                         range(state.batch, min(state.batch + c.accumulation, len(batches)))]
                state.batch += len(group)
                model.train()
                n_tokens = sum(b.n_tokens for b in group)
                loss_sum = 0.0
                for micro in group:
                    with autocast(self.device, self.precision):
                        loss = ddp(*on_device(micro, self.device), c.label_smoothing)
                    scaler.scale(loss / n_tokens).backward()
                    loss_sum += loss.item()
                if not math.isfinite(loss_sum):
                    raise TrainingError(
                        f"loss became {loss_sum} at step {state.step + 1}; stopped. The last good checkpoint "
                        f"is {self.files.checkpoint('latest')} (try a lower learning rate or fp32)")
                scaler.unscale_(optimizer)
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip_grad_norm or float("inf"))
                lr = learning_rate(state.step + 1, c)
                for group_ in optimizer.param_groups:
                    group_["lr"] = lr
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                state.step += 1
                interval.add(loss_sum, n_tokens, float(grad_norm))
                state.elapsed = elapsed_before + time.perf_counter() - started
                # the run's last step, whichever limit ends it: it evaluates and saves, so that a finished run always
                # leaves its checkpoints (--max-epochs once ended a run after 3 steps with none)
                last = state.step >= c.max_steps or (c.max_epochs is not None and state.batch >= len(batches)
                                                     and state.epoch + 1 >= c.max_epochs)
                if state.step % c.log_every == 0 or last or self.stop_requested:
                    yield self._log_record(state, interval, lr)
                    interval = Interval()
                if state.step % c.eval_every == 0 or last:
                    yield self._evaluate(state)
                if state.step % c.save_every == 0 or last or self.stop_requested:
                    if self.is_main:
                        self.checkpoints.save_latest(optimizer, state)
                    distributed.barrier(self.world_size)
                if self.stop_requested:
                    if self.is_main:
                        self._write_status("stopped", step=state.step, max_steps=c.max_steps)
                    return
            if state.batch >= len(batches):
                state.epoch += 1
                state.batch = 0
        checksums = distributed.param_checksums(model, self.world_size)
        self.ended_by = ended_by(c, state.step)
        if self.is_main:
            self._write_status("finished", step=state.step, max_steps=c.max_steps, best_bleu=state.best_bleu,
                               ended_by=self.ended_by, **({"rank_param_checksums": checksums} if checksums else {}))

    def _log_record(self, state: TrainState, interval: Interval, lr: float) -> dict[str, Any]:
        seconds = max(time.perf_counter() - interval.start, 1e-9)
        record = {
            "step": state.step, "epoch": state.epoch, "train_loss": interval.loss / max(interval.tokens, 1),
            "lr": lr, "tokens_per_s": interval.tokens * self.world_size / seconds,
            "grad_norm": interval.grad_norm / max(interval.steps, 1), "elapsed": state.elapsed,
        }
        if self.is_main:
            with writing(self.files, self.files.metrics):
                append_metrics(self.files.metrics, record)
                self._write_status("running", step=state.step, max_steps=self.config.max_steps)
            self.board.scalars(record)
        return record

    # ------------------------------------------------------------------------- eval, probes, checkpoints

    def _evaluate(self, state: TrainState) -> dict[str, Any]:
        record: dict[str, Any] = {"step": state.step, "elapsed": state.elapsed}
        if self.is_main:
            record |= self.evaluator.measure()
            probes = self.evaluator.probe()
            with writing(self.files, self.files.probes):
                write_probes(self.files, state.step, probes.records, probes.maps)
            self.board.probes(state.step, [r.source for r in probes.records],
                              [r.translation for r in probes.records], probes.maps)
            with writing(self.files, self.files.metrics):
                append_metrics(self.files.metrics, record)
            self.board.scalars(record)
            self.board.flush()
            if state.best_bleu is None or record["dev_bleu"] > state.best_bleu:
                state.best_bleu = record["dev_bleu"]
                self.checkpoints.write("best", state)
        distributed.barrier(self.world_size)
        return record


def ended_by(config: TrainConfig, step: int) -> str:
    """Which limit ended a finished run, and, when --max-epochs came first, what that cut short."""
    if step >= config.max_steps:
        return f"reached --max-steps {config.max_steps}"
    cut = (f", before the first scheduled evaluation (step {config.eval_every}): it evaluated and saved at step {step}"
           if step < config.eval_every else "")
    return f"--max-epochs {config.max_epochs} ended it at step {step} of --max-steps {config.max_steps}{cut}"


@dataclass
class Interval:
    """What the steps since the last log record added up to."""

    loss: float = 0.0
    tokens: int = 0
    grad_norm: float = 0.0
    steps: int = 0
    start: float = field(default_factory=time.perf_counter)

    def add(self, loss: float, tokens: int, grad_norm: float) -> None:
        self.loss += loss
        self.tokens += tokens
        self.grad_norm += grad_norm
        self.steps += 1

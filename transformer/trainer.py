"""The training loop: a generator of metric records over a run directory.

`Trainer(run_dir).fit()` prepares data, tokenizer and model (or restores them from the run's latest
checkpoint), then trains and yields one dict per log or eval point. It writes metrics.jsonl,
status.json, checkpoints and probe attention maps itself (in the formats of `transformer.rundir`), and the same
metrics and probes as TensorBoard event files (transformer.tensorboard_log, best effort); it never prints.
It holds the run's lock from construction to the end of fit (or close), so two trainings never write one run.
A resume after a kill continues from the latest checkpoint and first drops the metrics and probes logged after
it, so that each step is logged once. A failed write (disk full) stops the run with a TrainingError; the
previous checkpoint stays intact.

How the run computes is decided once at setup and recorded with reasons in status.json's `setup` (e.g.
`setup.precision = {"value": "bf16", "reason": "this CPU has AVX-512 BF16"}`) and in the log: the precision
(transformer.precision), the loss on real tokens only (transformer.loss), cheap dropout masks, fused QKV, compile.

Under torchrun each rank trains on its own shard of batches through DistributedDataParallel; rank 0 alone
writes and evaluates (transformer.dev_eval); transformer.distributed forms the process group without hanging.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import math
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from transformer import distributed, memory
from transformer.batching import collate, make_batches
from transformer.checkpoint import (
    TOKENIZER_FILE,
    Checkpoint,
    copy_checkpoint,
    load_checkpoint,
    recover_interrupted_saves,
    save_checkpoint,
    write_json_atomic,
)
from transformer.config import ModelConfig, strict_from_dict
from transformer.data import CorpusSpec, load_corpus
from transformer.dev_eval import DevEvaluator, Pairs, on_device
from transformer.distributed import COLLECTIVE_TIMEOUT, START_TIMEOUT, DistributedStartError
from transformer.loss import TokenLoss
from transformer.model import Transformer
from transformer.precision import Decision, autocast, resolve_precision
from transformer.rundir import (
    RunFiles,
    RunInUseError,
    RunLock,
    append_metrics,
    discard_probes_after,
    read_run_json,
    read_status,
    truncate_metrics,
    write_probes,
    write_status,
)
from transformer.tensorboard_log import RunBoard
from transformer.tokenizer import PAD_ID, Tokenizer, train_tokenizer
from transformer.training import (
    FUSED_OPTIMIZER_DEVICES,
    TokenizerSettings,
    TrainConfig,
    TrainState,
    learning_rate,
    load_training_state,
    make_optimizer,
    resolve_device,
    save_training_state,
)
from transformer.translate import Translator

log = logging.getLogger(__name__)
__all__ = ["COLLECTIVE_TIMEOUT", "START_TIMEOUT", "RunSpec", "Trainer", "TrainingError", "create_run", "load_run_spec"]


class TrainingError(RuntimeError):
    """Training cannot go on; the message says why and what was kept."""


@dataclass(frozen=True)
class RunSpec:
    """Everything run.json holds: enough to start the run again or resume it."""

    corpus: CorpusSpec
    tokenizer: TokenizerSettings
    model: dict[str, Any]  # ModelConfig fields except vocabulary sizes (set from the tokenizer)
    train: TrainConfig
    preset: str | None = None
    # A trained checkpoint to start from (fine-tuning): its weights, architecture and vocabulary replace
    # `model` and `tokenizer`, which then only record what the run was asked for.
    init_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"corpus": self.corpus.to_dict(), "tokenizer": dataclasses.asdict(self.tokenizer),
                "model": dict(self.model), "train": dataclasses.asdict(self.train), "preset": self.preset}
        return data | ({"init_from": self.init_from} if self.init_from else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(CorpusSpec.from_dict(data["corpus"]), strict_from_dict(TokenizerSettings, data["tokenizer"]),
                   data["model"], strict_from_dict(TrainConfig, data["train"]), data.get("preset"),
                   data.get("init_from"))


def create_run(root: str | Path, spec: RunSpec) -> Path:
    """Make a new run directory holding run.json; refuses to overwrite an existing run."""
    files = RunFiles(Path(root))
    if files.run_json.exists():
        raise TrainingError(f"{root} already holds a run; resume it with --resume, or choose another --out")
    files.root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(files.run_json, spec.to_dict())
    return files.root


def load_run_spec(root: str | Path) -> RunSpec:
    try:
        data = read_run_json(root)
    except (OSError, ValueError) as e:
        raise TrainingError(f"{root}: run.json cannot be read ({e})") from e
    if data is None:
        raise TrainingError(f"{root} is not a run directory (no run.json)")
    return RunSpec.from_dict(data)


@contextlib.contextmanager
def writing(files: RunFiles, what: str | Path) -> Iterator[None]:
    """A failed write (disk full, read-only folder) becomes a TrainingError that says what was kept."""
    try:
        yield
    except OSError as e:
        latest = files.checkpoint("latest")
        kept = f"the previous checkpoint {latest} is intact" if latest.is_dir() else "no checkpoint was saved yet"
        raise TrainingError(f"could not write {what}: {e}; stopped, and {kept}") from e


def encode_pairs(pairs, tokenizer: Tokenizer, max_len: int) -> Pairs:
    encoded = [(tokenizer.encode_source(s), tokenizer.encode_target(t)) for s, t in pairs]
    kept = [(s, t) for s, t in encoded if len(s) <= max_len and len(t) - 1 <= max_len]
    if len(kept) < len(encoded):
        log.info("dropped %d pairs longer than max_len %d tokens", len(encoded) - len(kept), max_len)
    return kept


def model_config_for(spec: RunSpec, tokenizer: Tokenizer) -> ModelConfig:
    fields = dict(spec.model)
    fields.setdefault("share_embeddings", tokenizer.shared)
    fields.setdefault("tie_output", True)
    return ModelConfig(**fields, src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size,
                       pad_id=PAD_ID)


def setup_decisions(config: TrainConfig, device: torch.device) -> dict[str, Decision]:
    """How a run computes, each choice with its reason: status.json's `setup`, logged by the CLI."""
    compile_reason = ("asked for (--compile)" if config.compile else
                      "off by default: on a 2-core CPU compiling takes minutes and gained little (BENCHMARKS.md)")
    return {
        "device": Decision(device.type, "auto: the first of cuda, mps and cpu that is available"
                           if config.device == "auto" else f"asked for (--device {config.device})"),
        "precision": resolve_precision(config.precision, device),
        "loss": Decision("real tokens only", "output projection, log-softmax and loss skip padding; "
                         "one fused backward for the label-smoothed cross-entropy"),
        "dropout": Decision("cheap masks", "16 random bits per element instead of a Bernoulli draw"),
        "self_attention": Decision("fused QKV", "queries, keys and values in one matrix product"),
        "optimizer": (Decision(f"{config.optimizer}, fused", "one kernel updates every parameter")
                      if device.type in FUSED_OPTIMIZER_DEVICES else
                      Decision(config.optimizer, f"torch has no fused kernel on {device.type}")),
        "compile": Decision(config.compile, compile_reason),
    }


def setup_device(config: TrainConfig, world_size: int) -> torch.device:
    if config.threads:
        torch.set_num_threads(config.threads)
    device = resolve_device(config.device)
    if world_size > 1 and device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    return device


@dataclass
class Prepared:
    """A run ready for its first step, or for its next one when resumed."""

    device: torch.device
    tokenizer: Tokenizer
    model: Transformer
    loss_fn: TokenLoss  # the model's loss on real tokens, what a training step calls
    optimizer: torch.optim.Optimizer
    train: Pairs
    state: TrainState
    evaluator: DevEvaluator
    decisions: dict[str, Decision]
    meta: dict[str, Any]  # the checkpoints' metadata besides the step


def run_tokenizer(files: RunFiles, spec: RunSpec, corpus, is_main: bool, world_size: int) -> Tokenizer:
    """The run's tokenizer: trained by rank 0 on the corpus, or taken from --init-from's checkpoint, then saved."""
    # Rank 0 alone decides whether to train: another rank that saw the file rank 0 had just written would
    # skip the barrier below and hang the run (seen under load).
    if is_main and not files.tokenizer.is_file() and spec.init_from:
        source = Path(spec.init_from) / TOKENIZER_FILE
        if not source.is_file():
            raise TrainingError(f"--init-from {spec.init_from}: the checkpoint has no {TOKENIZER_FILE}")
        tokenizer = Tokenizer.load(source)  # the weights are loaded once, by prepare_run
        log.info("vocabulary of %s: %s, %d tokens", spec.init_from, tokenizer.kind, tokenizer.src_vocab_size)
        with writing(files, files.tokenizer):
            tokenizer.save(files.tokenizer)
    elif is_main and not files.tokenizer.is_file():
        s = spec.tokenizer
        log.info("training a %s tokenizer (%d tokens) on %d pairs", s.kind, s.vocab_size, len(corpus.train))
        tokenizer = train_tokenizer(corpus.train, kind=s.kind, vocab_size=s.vocab_size, shared=s.shared,
                                    min_frequency=s.min_frequency)
        with writing(files, files.tokenizer):
            tokenizer.save(files.tokenizer)
    distributed.barrier(world_size)
    return Tokenizer.load(files.tokenizer)


def prepare_run(files: RunFiles, spec: RunSpec, world_size: int, is_main: bool) -> Prepared:
    """Data, tokenizer, model and optimizer, restored from the latest checkpoint when there is one."""
    c = spec.train
    device = setup_device(c, world_size)
    torch.manual_seed(c.seed)
    if is_main:  # a kill may have cut a checkpoint's swap in two; the tokenizer barrier follows
        recover_interrupted_saves(files.checkpoints)
    corpus = load_corpus(spec.corpus)
    tokenizer = run_tokenizer(files, spec, corpus, is_main, world_size)
    latest = files.checkpoint("latest")
    if latest.is_dir() or spec.init_from:
        checkpoint = load_checkpoint(latest if latest.is_dir() else spec.init_from, device)
        model, model_config = checkpoint.model, checkpoint.config
        if not latest.is_dir():
            log.info("starting from the weights of %s (%s)", spec.init_from,
                     checkpoint.metadata.get("description", "no description"))
    else:
        model_config = model_config_for(spec, tokenizer)
        model = Transformer(model_config).to(device)
    train = encode_pairs(corpus.train, tokenizer, model_config.max_len)
    dev = encode_pairs(corpus.dev, tokenizer, model_config.max_len)
    optimizer = make_optimizer(model, c)
    state = TrainState()
    if latest.is_dir():
        state = load_training_state(latest, optimizer)
        log.info("resumed from %s at step %d", latest, state.step)
    loss_fn = TokenLoss(model)
    translator = Translator(Checkpoint(files.root, model_config, model, tokenizer), batch_size=64)
    evaluator = DevEvaluator(corpus, dev, translator, loss_fn, max_tokens=c.max_tokens, n_sentences=c.eval_sentences)
    meta = {"corpus": spec.corpus.to_dict(), "description": corpus.description,
            "n_params": sum(p.numel() for p in model.parameters())}
    return Prepared(device, tokenizer, model, loss_fn, optimizer, train, state, evaluator, setup_decisions(c, device),
                    meta)


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
        self.checkpoints = RunCheckpoints(self.files, run, self.config.keep_last)
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
            while state.batch < len(batches) and state.step < c.max_steps:
                group = [collate([train[i] for i in batches[b]]) for b in
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
                last = state.step >= c.max_steps
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
        if self.is_main:
            self._write_status("finished", step=state.step, max_steps=c.max_steps, best_bleu=state.best_bleu,
                               **({"rank_param_checksums": checksums} if checksums else {}))

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


class RunCheckpoints:
    """A run's checkpoints: `latest` with the optimizer (what --resume continues), `best` by dev BLEU, and a copy
    of each saved step, the last keep_last of them kept. Rank 0 writes them."""

    def __init__(self, files: RunFiles, run: Prepared, keep_last: int):
        self.files, self.keep_last = files, keep_last
        self.model, self.tokenizer, self.meta = run.model, run.tokenizer, run.meta

    def write(self, name: str, state: TrainState, optimizer=None) -> Path:
        metadata = {**self.meta, "step": state.step, "epoch": state.epoch, "elapsed": state.elapsed,
                    "best_dev_bleu": state.best_bleu, "run": str(self.files.root)}
        saved = dataclasses.replace(state)  # as it is now, not as the loop goes on
        extra = None if optimizer is None else (lambda d: save_training_state(d, optimizer, saved))
        with writing(self.files, f"the checkpoint {self.files.checkpoint(name)}"):
            return save_checkpoint(self.files.checkpoint(name), self.model, tokenizer=self.tokenizer,
                                   metadata=metadata, write_extra=extra)

    def save_latest(self, optimizer, state: TrainState) -> None:
        path = self.write("latest", state, optimizer)
        if self.keep_last > 0:
            step_path = self.files.checkpoint(f"step-{state.step:07d}")
            with writing(self.files, f"the checkpoint {step_path}"):
                copy_checkpoint(path, step_path)
            for old in sorted(self.files.checkpoints.glob("step-*"))[: -self.keep_last]:
                shutil.rmtree(old, ignore_errors=True)


@dataclass
class Interval:
    """What the steps since the last log record added up to."""

    loss: float = 0.0
    tokens: int = 0
    grad_norm: float = 0.0
    steps: int = 0
    start: float = dataclasses.field(default_factory=time.perf_counter)

    def add(self, loss: float, tokens: int, grad_norm: float) -> None:
        self.loss += loss
        self.tokens += tokens
        self.grad_norm += grad_norm
        self.steps += 1

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
writes. Every rank checks in at the launcher's store before the process group forms: a rank that does not
come within start_timeout is an error that names it, not a hang.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from transformer.batching import Batch, collate, make_batches
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
from transformer.evaluate import corpus_scores, translate_texts
from transformer.explain import AlignedExample, cross_attention_aer, format_links
from transformer.loss import TokenLoss
from transformer.model import Transformer
from transformer.precision import Decision, autocast, resolve_precision
from transformer.rundir import (
    ProbeRecord,
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
    learning_rate,
    load_training_state,
    make_optimizer,
    resolve_device,
    save_training_state,
)
from transformer.translate import Translator

log = logging.getLogger(__name__)
N_PROBES = 3
START_TIMEOUT = 300.0  # seconds the ranks of a distributed run wait for each other at start
COLLECTIVE_TIMEOUT = 1800.0  # seconds a rank waits in a barrier, e.g. while rank 0 evaluates


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


class Trainer:
    def __init__(self, root: str | Path, *, overrides: dict[str, Any] | None = None,
                 start_timeout: float = START_TIMEOUT, collective_timeout: float = COLLECTIVE_TIMEOUT):
        """overrides replace TrainConfig fields of the stored spec (e.g. max_steps when resuming)."""
        self.files = RunFiles(Path(root))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.is_main = self.rank == 0
        self.lock = RunLock(self.files)
        if self.is_main and self.files.root.is_dir():
            try:
                self.lock.acquire()
            except RunInUseError as e:
                raise TrainingError(str(e)) from e
        try:
            if self.world_size > 1 and not dist.is_initialized():
                self._start_distributed(start_timeout, collective_timeout)
            self.spec = load_run_spec(root)
            if overrides:
                self.spec = replace(self.spec, train=replace(self.spec.train, **overrides))
                if self.is_main:
                    write_json_atomic(self.files.run_json, self.spec.to_dict())
        except BaseException:
            self.close()
            raise
        self.config = self.spec.train
        self.stop_requested = False
        self.board = RunBoard(None)  # opened by fit once the run's resume point is known

    def _write_status(self, state: str, **fields: Any) -> None:
        """status.json, with the run's setup decisions (precision and the rest, each with its reason) once known."""
        setup = getattr(self, "setup", None)
        write_status(self.files, state, **fields, **({"setup": setup} if setup else {}))

    def close(self) -> None:
        """Release the run (fit does this when it ends); the lock also goes when the process dies."""
        self.lock.release()
        if hasattr(self, "board"):
            self.board.close()
        if self.world_size > 1 and dist.is_initialized():
            dist.destroy_process_group()

    def _start_distributed(self, start_timeout: float, collective_timeout: float) -> None:
        """Form the process group once every rank has checked in, or name the ranks that did not come."""
        addr, port = os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500"))
        where = f"the rendezvous store at {addr}:{port}"
        # torchrun's agent hosts the store; a bare launch (WORLD_SIZE, RANK, MASTER_*) has rank 0 host it
        hosted_by_agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        try:
            store = dist.TCPStore(addr, port, self.world_size, is_master=self.is_main and not hosted_by_agent,
                                  timeout=timedelta(seconds=start_timeout), wait_for_workers=False)
        except (RuntimeError, dist.DistError) as e:
            raise TrainingError(f"distributed start: rank {self.rank} could not reach {where} within "
                                f"{start_timeout:g} s ({e})") from e
        store = dist.PrefixStore(f"attention-explorer/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)
        store.set(f"arrived/{self.rank}", str(os.getpid()))
        deadline = time.monotonic() + start_timeout
        while missing := [r for r in range(self.world_size) if not store.check([f"arrived/{r}"])]:
            if time.monotonic() > deadline:
                raise TrainingError(
                    f"distributed start timed out after {start_timeout:g} s: rank {', '.join(map(str, missing))} "
                    f"of {self.world_size} did not join at {where} (reported by rank {self.rank}); "
                    "see that rank's log for why it is late or gone")
            time.sleep(0.05)
        log.info("rank %d: all %d ranks joined", self.rank, self.world_size)
        # gloo for CPU tensors, NCCL for GPU ones where this build of torch has it
        dist.init_process_group("cpu:gloo,cuda:nccl" if dist.is_nccl_available() else "gloo", store=store,
                                rank=self.rank, world_size=self.world_size,
                                timeout=timedelta(seconds=collective_timeout))
        dist.barrier()

    def request_stop(self) -> None:
        """Ask the loop to save a checkpoint and return after the current step (signal-safe)."""
        self.stop_requested = True

    # ------------------------------------------------------------------------- setup

    def _setup_device(self) -> torch.device:
        if self.config.threads:
            torch.set_num_threads(self.config.threads)
        device = resolve_device(self.config.device)
        if self.world_size > 1 and device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        return device

    def _tokenizer(self, corpus) -> Tokenizer:
        # Rank 0 alone decides whether to train: another rank that saw the file rank 0 had just written would
        # skip the barrier below and hang the run (seen under load).
        if self.is_main and not self.files.tokenizer.is_file() and self.spec.init_from:
            source = Path(self.spec.init_from) / TOKENIZER_FILE
            if not source.is_file():
                raise TrainingError(f"--init-from {self.spec.init_from}: the checkpoint has no {TOKENIZER_FILE}")
            tokenizer = Tokenizer.load(source)  # the weights are loaded once, by _prepare
            log.info("vocabulary of %s: %s, %d tokens", self.spec.init_from, tokenizer.kind, tokenizer.src_vocab_size)
            with self._writing(self.files.tokenizer):
                tokenizer.save(self.files.tokenizer)
        elif self.is_main and not self.files.tokenizer.is_file():
            s = self.spec.tokenizer
            log.info("training a %s tokenizer (%d tokens) on %d pairs", s.kind, s.vocab_size, len(corpus.train))
            tokenizer = train_tokenizer(corpus.train, kind=s.kind, vocab_size=s.vocab_size, shared=s.shared,
                                        min_frequency=s.min_frequency)
            with self._writing(self.files.tokenizer):
                tokenizer.save(self.files.tokenizer)
        self._barrier()
        return Tokenizer.load(self.files.tokenizer)

    def _barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    @contextlib.contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """A failed write (disk full, read-only folder) becomes a TrainingError that says what was kept."""
        try:
            yield
        except OSError as e:
            latest = self.files.checkpoint("latest")
            kept = f"the previous checkpoint {latest} is intact" if latest.is_dir() else "no checkpoint was saved yet"
            raise TrainingError(f"could not write {what}: {e}; stopped, and {kept}") from e

    def _encode(self, pairs, tokenizer: Tokenizer, max_len: int) -> list[tuple[list[int], list[int]]]:
        encoded = [(tokenizer.encode_source(s), tokenizer.encode_target(t)) for s, t in pairs]
        kept = [(s, t) for s, t in encoded if len(s) <= max_len and len(t) - 1 <= max_len]
        if len(kept) < len(encoded):
            log.info("dropped %d pairs longer than max_len %d tokens", len(encoded) - len(kept), max_len)
        return kept

    def _model_config(self, tokenizer: Tokenizer) -> ModelConfig:
        fields = dict(self.spec.model)
        fields.setdefault("share_embeddings", tokenizer.shared)
        fields.setdefault("tie_output", True)
        return ModelConfig(**fields, src_vocab_size=tokenizer.src_vocab_size,
                           tgt_vocab_size=tokenizer.tgt_vocab_size, pad_id=PAD_ID)

    # ------------------------------------------------------------------------- the loop

    def fit(self) -> Iterator[dict[str, Any]]:
        c = self.config
        state = {"step": 0, "epoch": 0, "batch": 0, "elapsed": 0.0, "best_bleu": None}
        try:
            if self.is_main:  # at once, so that a watcher never sees the previous state of a resumed run
                with self._writing(self.files.status):
                    write_status(self.files, "starting", step=read_status(self.files.status).get("step", 0),
                                 max_steps=c.max_steps)
            ddp, optimizer, train = self._prepare(state)
            if self.is_main:
                with self._writing(self.files.status):
                    self._write_status("running", step=state["step"], max_steps=c.max_steps)
            yield from self._loop(ddp, optimizer, train, state)
        except Exception as e:  # a bad corpus as much as a NaN: the app shows this error
            if self.is_main:
                with contextlib.suppress(OSError):  # the disk that just failed may refuse this too
                    self._write_status("failed", step=state["step"], error=str(e))
            raise
        finally:
            self.close()

    def _prepare(self, state: dict[str, Any]):
        """Data, tokenizer, model and optimizer, restored from the latest checkpoint when there is one."""
        c = self.config
        device = self._setup_device()
        torch.manual_seed(c.seed)
        if self.is_main:  # a kill may have cut a checkpoint's swap in two; the tokenizer barrier follows
            recover_interrupted_saves(self.files.checkpoints)
        corpus = load_corpus(self.spec.corpus)
        tokenizer = self._tokenizer(corpus)
        latest = self.files.checkpoint("latest")
        if latest.is_dir() or self.spec.init_from:
            checkpoint = load_checkpoint(latest if latest.is_dir() else self.spec.init_from, device)
            model, model_config = checkpoint.model, checkpoint.config
            if not latest.is_dir():
                log.info("starting from the weights of %s (%s)", self.spec.init_from,
                         checkpoint.metadata.get("description", "no description"))
        else:
            model_config = self._model_config(tokenizer)
            model = Transformer(model_config).to(device)
        train = self._encode(corpus.train, tokenizer, model_config.max_len)
        self.dev = self._encode(corpus.dev, tokenizer, model_config.max_len)
        self.dev_pairs, self.probes = corpus.dev, self._pick_probes(corpus.dev)
        self.gold = [AlignedExample(s, t, corpus.alignments[(s, t)]) for s, t in corpus.dev[: c.eval_sentences]
                     if (s, t) in corpus.alignments]
        self.probe_links = {s: corpus.alignments.get((s, t)) for s, t in corpus.dev if s in self.probes}
        optimizer = make_optimizer(model, c)
        if latest.is_dir():
            state |= load_training_state(latest, optimizer)
            log.info("resumed from %s at step %d", latest, state["step"])
        if self.is_main:  # what a killed run logged after its latest checkpoint is logged again from here
            with self._writing(self.files.metrics):
                dropped = truncate_metrics(self.files.metrics, state["step"])
                discard_probes_after(self.files, state["step"])
            if dropped:
                log.info("dropped %d metric records logged after step %d", dropped, state["step"])
            self.board = RunBoard(self.files.tensorboard, purge_step=state["step"])
        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.loss_fn = TokenLoss(model)
        self.setup = self._decide_setup()
        for name, decision in self.setup.items():
            log.info("%s: %s (%s)", name, decision["value"], decision["reason"])
        self.translator = Translator(Checkpoint(self.files.root, model_config, model, tokenizer), batch_size=64)
        self.meta = {"corpus": self.spec.corpus.to_dict(), "description": corpus.description,
                     "n_params": sum(p.numel() for p in model.parameters())}
        step = self.loss_fn
        if self.world_size > 1:
            step = torch.nn.parallel.DistributedDataParallel(step)
        if self.config.compile:
            step = torch.compile(step, dynamic=True)
        return step, optimizer, train

    def _decide_setup(self) -> dict[str, dict[str, Any]]:
        """How this run computes, each choice with its reason: status.json's `setup`, logged by the CLI."""
        precision = resolve_precision(self.config.precision, self.device)
        self.precision = precision.value
        compile_reason = ("asked for (--compile)" if self.config.compile else
                          "off by default: on a 2-core CPU compiling takes minutes and gained little (BENCHMARKS.md)")
        decisions = {
            "device": Decision(self.device.type, "auto: the first of cuda, mps and cpu that is available"
                               if self.config.device == "auto" else f"asked for (--device {self.config.device})"),
            "precision": precision,
            "loss": Decision("real tokens only", "output projection, log-softmax and loss skip padding; "
                             "one fused backward for the label-smoothed cross-entropy"),
            "dropout": Decision("cheap masks", "16 random bits per element instead of a Bernoulli draw"),
            "self_attention": Decision("fused QKV", "queries, keys and values in one matrix product"),
            "optimizer": (Decision(f"{self.config.optimizer}, fused", "one kernel updates every parameter")
                          if self.device.type in FUSED_OPTIMIZER_DEVICES else
                          Decision(self.config.optimizer, f"torch has no fused kernel on {self.device.type}")),
            "compile": Decision(self.config.compile, compile_reason),
        }
        return {name: d.to_dict() for name, d in decisions.items()}

    def _loop(self, ddp, optimizer, train, state) -> Iterator[dict[str, Any]]:
        c, model = self.config, self.model
        scaler = torch.amp.GradScaler(enabled=self.precision == "fp16" and self.device.type == "cuda")
        lengths = [(len(s), len(t) - 1) for s, t in train]
        interval = {"loss": 0.0, "tokens": 0, "grad_norm": 0.0, "steps": 0, "start": time.perf_counter()}
        started, elapsed_before = time.perf_counter(), state["elapsed"]
        while state["step"] < c.max_steps and (c.max_epochs is None or state["epoch"] < c.max_epochs):
            batches = make_batches(lengths, c.max_tokens, shuffle=True, seed=c.seed + state["epoch"])
            per_rank = len(batches) // self.world_size  # equal counts, so no rank waits forever in DDP
            batches = batches[self.rank : per_rank * self.world_size : self.world_size]
            while state["batch"] < len(batches) and state["step"] < c.max_steps:
                group = [collate([train[i] for i in batches[b]]) for b in
                         range(state["batch"], min(state["batch"] + c.accumulation, len(batches)))]
                state["batch"] += len(group)
                model.train()
                n_tokens = sum(b.n_tokens for b in group)
                loss_sum = 0.0
                for micro in group:
                    with autocast(self.device, self.precision):
                        loss = ddp(*self._on_device(micro), c.label_smoothing)
                    scaler.scale(loss / n_tokens).backward()
                    loss_sum += loss.item()
                if not math.isfinite(loss_sum):
                    raise TrainingError(
                        f"loss became {loss_sum} at step {state['step'] + 1}; stopped. The last good checkpoint "
                        f"is {self.files.checkpoint('latest')} (try a lower learning rate or fp32)")
                scaler.unscale_(optimizer)
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip_grad_norm or float("inf"))
                lr = learning_rate(state["step"] + 1, c)
                for group_ in optimizer.param_groups:
                    group_["lr"] = lr
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                state["step"] += 1
                interval["loss"] += loss_sum
                interval["tokens"] += n_tokens
                interval["grad_norm"] += float(grad_norm)
                interval["steps"] += 1
                state["elapsed"] = elapsed_before + time.perf_counter() - started
                last = state["step"] >= c.max_steps
                if state["step"] % c.log_every == 0 or last or self.stop_requested:
                    yield self._log_record(state, interval, lr)
                    interval = {"loss": 0.0, "tokens": 0, "grad_norm": 0.0, "steps": 0,
                                "start": time.perf_counter()}
                if state["step"] % c.eval_every == 0 or last:
                    yield self._evaluate(state)
                if state["step"] % c.save_every == 0 or last or self.stop_requested:
                    self._save(optimizer, state)
                if self.stop_requested:
                    if self.is_main:
                        self._write_status("stopped", step=state["step"], max_steps=c.max_steps)
                    return
            if state["batch"] >= len(batches):
                state["epoch"] += 1
                state["batch"] = 0
        checksums = self._rank_checksums()
        if self.is_main:
            self._write_status("finished", step=state["step"], max_steps=c.max_steps,
                         best_bleu=state["best_bleu"], **({"rank_param_checksums": checksums} if checksums else {}))

    def _rank_checksums(self) -> list[float] | None:
        """Under DDP, every rank's sum of parameters: equal when the replicas stayed in sync."""
        if self.world_size == 1:
            return None
        local = torch.stack([p.detach().double().sum() for p in self.model.parameters()]).sum().reshape(1)
        gathered = [torch.zeros_like(local) for _ in range(self.world_size)]
        dist.all_gather(gathered, local)
        return [t.item() for t in gathered]

    def _log_record(self, state, interval, lr) -> dict[str, Any]:
        seconds = max(time.perf_counter() - interval["start"], 1e-9)
        record = {
            "step": state["step"], "epoch": state["epoch"],
            "train_loss": interval["loss"] / max(interval["tokens"], 1),
            "lr": lr, "tokens_per_s": interval["tokens"] * self.world_size / seconds,
            "grad_norm": interval["grad_norm"] / max(interval["steps"], 1),
            "elapsed": state["elapsed"],
        }
        if self.is_main:
            with self._writing(self.files.metrics):
                append_metrics(self.files.metrics, record)
                self._write_status("running", step=state["step"], max_steps=self.config.max_steps)
            self.board.scalars(record)
        return record

    # ------------------------------------------------------------------------- eval, probes, checkpoints

    def _on_device(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return batch.src.to(self.device), batch.tgt_in.to(self.device), batch.tgt_out.to(self.device)

    @torch.no_grad()
    def _dev_loss(self) -> float:
        self.model.eval()
        total, tokens = 0.0, 0
        lengths = [(len(s), len(t) - 1) for s, t in self.dev]
        for batch_ids in make_batches(lengths, self.config.max_tokens, shuffle=False, seed=0):
            b = collate([self.dev[i] for i in batch_ids])
            total += self.loss_fn(*self._on_device(b)).item()  # fp32, no label smoothing
            tokens += b.n_tokens
        return total / max(tokens, 1)

    def _evaluate(self, state) -> dict[str, Any]:
        record: dict[str, Any] = {"step": state["step"], "elapsed": state["elapsed"]}
        if self.is_main:
            record["dev_loss"] = self._dev_loss()
            n = self.config.eval_sentences
            sources = [s for s, _ in self.dev_pairs[:n]]
            refs = [t for _, t in self.dev_pairs[:n]]
            hyps = translate_texts(self.translator, sources)
            record |= {f"dev_{k}": v for k, v in corpus_scores(hyps, refs).items() if k in ("bleu", "chrf")}
            record["dev_exact"] = 100.0 * sum(h == r for h, r in zip(hyps, refs)) / max(len(refs), 1)
            if self.gold:
                record |= self._alignment_scores()
            with self._writing(self.files.probes):
                self._save_probes(state["step"])
            with self._writing(self.files.metrics):
                append_metrics(self.files.metrics, record)
            self.board.scalars(record)
            self.board.flush()
            if state["best_bleu"] is None or record["dev_bleu"] > state["best_bleu"]:
                state["best_bleu"] = record["dev_bleu"]
                self._write_checkpoint("best", state)
        self._barrier()
        return record

    def _alignment_scores(self) -> dict[str, Any]:
        """AER (%) of the best cross-attention head and of each decoder layer's mean of heads (numbered from 0,
        as the explorer numbers them)."""
        aer = cross_attention_aer(self.model, self.tokenizer, self.gold)
        layer, head, best = aer.best
        return {"dev_aer_best": 100.0 * best, "dev_aer_best_head": f"layer {layer} head {head}",
                **{f"dev_aer_layer{i}": 100.0 * value for i, value in enumerate(aer.layer_mean)}}

    def _pick_probes(self, dev_pairs) -> list[str]:
        """A few mid-length dev sentences, the same on every run, whose attention is saved at each eval."""
        medium = [s for s, _ in dev_pairs if 8 <= len(s.split()) <= 16]
        return (medium or [s for s, _ in dev_pairs])[:N_PROBES]

    def _save_probes(self, step: int) -> None:
        """Each probe's translation and all its attention maps, stacked per family as (L, H, L_q, L_k)."""
        self.model.eval()
        records, maps = [], []
        for sentence in self.probes:
            translation = self.translator.translate(sentence, attention=True)
            a = translation.attention
            maps.append({family: torch.stack(getattr(a, family)) for family in ("enc_self", "dec_self", "cross")})
            links = self.probe_links.get(sentence)
            records.append(ProbeRecord(sentence, translation.text, a.source_pieces, a.target_pieces,
                                       a.target_input_pieces, None if links is None else format_links(links)))
        write_probes(self.files, step, records, maps)
        self.board.probes(step, [r.source for r in records], [r.translation for r in records], maps)

    def _write_checkpoint(self, name: str, state, optimizer=None) -> Path:
        metadata = {**self.meta, "step": state["step"], "epoch": state["epoch"], "elapsed": state["elapsed"],
                    "best_dev_bleu": state["best_bleu"], "run": str(self.files.root)}
        resume_state = {k: state[k] for k in ("step", "epoch", "batch", "elapsed", "best_bleu")}
        extra = None if optimizer is None else (lambda d: save_training_state(d, optimizer, resume_state))
        with self._writing(f"the checkpoint {self.files.checkpoint(name)}"):
            return save_checkpoint(self.files.checkpoint(name), self.model, tokenizer=self.tokenizer,
                                   metadata=metadata, write_extra=extra)

    def _save(self, optimizer, state) -> None:
        if self.is_main:
            path = self._write_checkpoint("latest", state, optimizer)
            if self.config.keep_last > 0:
                step_path = self.files.checkpoint(f"step-{state['step']:07d}")
                with self._writing(f"the checkpoint {step_path}"):
                    copy_checkpoint(path, step_path)
                steps = sorted(self.files.checkpoints.glob("step-*"))
                for old in steps[: -self.config.keep_last]:
                    shutil.rmtree(old, ignore_errors=True)
        self._barrier()

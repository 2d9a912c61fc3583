"""The training loop: a generator of metric records over a run directory.

`Trainer(run_dir).fit()` prepares data, tokenizer and model (or restores them from the run's latest
checkpoint), then trains and yields one dict per log or eval point. It writes metrics.jsonl,
status.json, checkpoints and probe attention maps itself; it never prints. Under torchrun each
rank trains on its own shard of batches through DistributedDataParallel; rank 0 alone writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
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
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import save_file

from transformer.batching import Batch, collate, make_batches
from transformer.checkpoint import Checkpoint, load_checkpoint, save_checkpoint, write_json_atomic
from transformer.config import ModelConfig, strict_from_dict
from transformer.data import CorpusSpec, load_corpus
from transformer.evaluate import corpus_scores, translate_texts
from transformer.explain import AlignedExample, cross_attention_aer, format_links
from transformer.model import Transformer
from transformer.tokenizer import PAD_ID, Tokenizer, train_tokenizer
from transformer.training import (
    RunFiles,
    TokenizerSettings,
    TrainConfig,
    append_metrics,
    learning_rate,
    load_training_state,
    make_optimizer,
    read_status,
    resolve_device,
    save_training_state,
    write_status,
)
from transformer.translate import Translator

log = logging.getLogger(__name__)
N_PROBES = 3


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

    def to_dict(self) -> dict[str, Any]:
        return {"corpus": self.corpus.to_dict(), "tokenizer": dataclasses.asdict(self.tokenizer),
                "model": dict(self.model), "train": dataclasses.asdict(self.train), "preset": self.preset}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(CorpusSpec.from_dict(data["corpus"]), strict_from_dict(TokenizerSettings, data["tokenizer"]),
                   data["model"], strict_from_dict(TrainConfig, data["train"]), data.get("preset"))


def create_run(root: str | Path, spec: RunSpec) -> Path:
    """Make a new run directory holding run.json; refuses to overwrite an existing run."""
    files = RunFiles(Path(root))
    if files.run_json.exists():
        raise TrainingError(f"{root} already holds a run; resume it with --resume, or choose another --out")
    files.root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(files.run_json, spec.to_dict())
    return files.root


def load_run_spec(root: str | Path) -> RunSpec:
    path = RunFiles(Path(root)).run_json
    if not path.is_file():
        raise TrainingError(f"{root} is not a run directory (no run.json)")
    return RunSpec.from_dict(json.loads(path.read_text(encoding="utf-8")))


class Trainer:
    def __init__(self, root: str | Path, *, overrides: dict[str, Any] | None = None):
        """overrides replace TrainConfig fields of the stored spec (e.g. max_steps when resuming)."""
        self.files = RunFiles(Path(root))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.is_main = self.rank == 0
        if self.world_size > 1 and not dist.is_initialized():
            # gloo for CPU tensors, NCCL for GPU ones where this build of torch has it
            dist.init_process_group("cpu:gloo,cuda:nccl" if dist.is_nccl_available() else "gloo")
            dist.barrier()  # rank 0 has created the run directory
        self.spec = load_run_spec(root)
        if overrides:
            self.spec = replace(self.spec, train=replace(self.spec.train, **overrides))
            if self.is_main:
                write_json_atomic(self.files.run_json, self.spec.to_dict())
        self.config = self.spec.train
        self.stop_requested = False

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
        if self.files.tokenizer.is_file():
            return Tokenizer.load(self.files.tokenizer)
        if self.is_main:
            s = self.spec.tokenizer
            log.info("training a %s tokenizer (%d tokens) on %d pairs", s.kind, s.vocab_size, len(corpus.train))
            train_tokenizer(corpus.train, kind=s.kind, vocab_size=s.vocab_size, shared=s.shared,
                            min_frequency=s.min_frequency).save(self.files.tokenizer)
        self._barrier()
        return Tokenizer.load(self.files.tokenizer)

    def _barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

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
        if self.is_main:  # at once, so that a watcher never sees the previous state of a resumed run
            write_status(self.files, "starting", step=read_status(self.files.status).get("step", 0),
                         max_steps=c.max_steps)
        state = {"step": 0, "epoch": 0, "batch": 0, "elapsed": 0.0, "best_bleu": None}
        try:
            ddp, optimizer, train = self._prepare(state)
            if self.is_main:
                write_status(self.files, "running", step=state["step"], max_steps=c.max_steps)
            yield from self._loop(ddp, optimizer, train, state)
        except Exception as e:  # a bad corpus as much as a NaN: the app shows this error
            if self.is_main:
                write_status(self.files, "failed", step=state["step"], error=str(e))
            raise
        finally:
            if self.world_size > 1 and dist.is_initialized():
                dist.destroy_process_group()

    def _prepare(self, state: dict[str, Any]):
        """Data, tokenizer, model and optimizer, restored from the latest checkpoint when there is one."""
        c = self.config
        device = self._setup_device()
        torch.manual_seed(c.seed)
        corpus = load_corpus(self.spec.corpus)
        tokenizer = self._tokenizer(corpus)
        latest = self.files.checkpoint("latest")
        if latest.is_dir():
            checkpoint = load_checkpoint(latest, device)
            model, model_config = checkpoint.model, checkpoint.config
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
        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.translator = Translator(Checkpoint(self.files.root, model_config, model, tokenizer), batch_size=64)
        self.meta = {"corpus": self.spec.corpus.to_dict(), "description": corpus.description,
                     "n_params": sum(p.numel() for p in model.parameters())}
        ddp = torch.nn.parallel.DistributedDataParallel(model) if self.world_size > 1 else model
        return ddp, optimizer, train

    def _autocast(self):
        if self.config.precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.config.precision == "bf16" else torch.float16
        return torch.autocast(self.device.type, dtype=dtype)

    def _loop(self, ddp, optimizer, train, state) -> Iterator[dict[str, Any]]:
        c, model = self.config, self.model
        scaler = torch.amp.GradScaler(enabled=c.precision == "fp16" and self.device.type == "cuda")
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
                    with self._autocast():
                        loss = self._loss_sum(ddp, micro, c.label_smoothing)
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
                        write_status(self.files, "stopped", step=state["step"], max_steps=c.max_steps)
                    return
            if state["batch"] >= len(batches):
                state["epoch"] += 1
                state["batch"] = 0
        checksums = self._rank_checksums()
        if self.is_main:
            write_status(self.files, "finished", step=state["step"], max_steps=c.max_steps,
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
            append_metrics(self.files.metrics, record)
            write_status(self.files, "running", step=state["step"], max_steps=self.config.max_steps)
        return record

    # ------------------------------------------------------------------------- eval, probes, checkpoints

    def _loss_sum(self, model, batch: Batch, label_smoothing: float = 0.0) -> torch.Tensor:
        """Cross-entropy summed over the batch's real target tokens (pads ignored), in fp32."""
        logits = model(batch.src.to(self.device), batch.tgt_in.to(self.device)).logits  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1).float(), batch.tgt_out.to(self.device).flatten(),
                               ignore_index=PAD_ID, label_smoothing=label_smoothing, reduction="sum")

    @torch.no_grad()
    def _dev_loss(self) -> float:
        self.model.eval()
        total, tokens = 0.0, 0
        lengths = [(len(s), len(t) - 1) for s, t in self.dev]
        for batch_ids in make_batches(lengths, self.config.max_tokens, shuffle=False, seed=0):
            b = collate([self.dev[i] for i in batch_ids])
            total += self._loss_sum(self.model, b).item()
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
            self._save_probes(state["step"])
            append_metrics(self.files.metrics, record)
            if state["best_bleu"] is None or record["dev_bleu"] > state["best_bleu"]:
                state["best_bleu"] = record["dev_bleu"]
                self._write_checkpoint("best", state)
        self._barrier()
        return record

    def _alignment_scores(self) -> dict[str, Any]:
        """AER (%) of the best cross-attention head and of each decoder layer's mean of heads (layers from 1)."""
        aer = cross_attention_aer(self.model, self.tokenizer, self.gold)
        layer, head, best = aer.best
        return {"dev_aer_best": 100.0 * best, "dev_aer_best_head": f"layer {layer + 1} head {head + 1}",
                **{f"dev_aer_layer{i + 1}": 100.0 * value for i, value in enumerate(aer.layer_mean)}}

    def _pick_probes(self, dev_pairs) -> list[str]:
        """A few mid-length dev sentences, the same on every run, whose attention is saved at each eval."""
        medium = [s for s, _ in dev_pairs if 8 <= len(s.split()) <= 16]
        return (medium or [s for s, _ in dev_pairs])[:N_PROBES]

    def _save_probes(self, step: int) -> None:
        """Each probe's translation and all its attention maps, stacked per family as (L, H, L_q, L_k)."""
        self.model.eval()
        tensors, probes = {}, []
        for i, sentence in enumerate(self.probes):
            translation = self.translator.translate(sentence, attention=True)
            maps = translation.attention
            for family in ("enc_self", "dec_self", "cross"):
                tensors[f"{i}.{family}"] = torch.stack(getattr(maps, family)).cpu().contiguous()
            probes.append({"source": sentence, "translation": translation.text, "src_pieces": maps.source_pieces,
                           "tgt_pieces": maps.target_pieces, "tgt_input_pieces": maps.target_input_pieces})
            if self.probe_links.get(sentence) is not None:
                probes[-1]["gold_links"] = format_links(self.probe_links[sentence])
        self.files.probes.mkdir(exist_ok=True)
        name = f"step-{step:07d}"
        save_file(tensors, str(self.files.probes / f"{name}.safetensors"))
        write_json_atomic(self.files.probes / f"{name}.json", {"step": step, "probes": probes})

    def _write_checkpoint(self, name: str, state, optimizer=None) -> Path:
        metadata = {**self.meta, "step": state["step"], "epoch": state["epoch"], "elapsed": state["elapsed"],
                    "best_dev_bleu": state["best_bleu"], "run": str(self.files.root)}
        resume_state = {k: state[k] for k in ("step", "epoch", "batch", "elapsed", "best_bleu")}
        extra = None if optimizer is None else (lambda d: save_training_state(d, optimizer, resume_state))
        return save_checkpoint(self.files.checkpoint(name), self.model, tokenizer=self.tokenizer, metadata=metadata,
                               write_extra=extra)

    def _save(self, optimizer, state) -> None:
        if self.is_main:
            path = self._write_checkpoint("latest", state, optimizer)
            if self.config.keep_last > 0:
                shutil.copytree(path, self.files.checkpoint(f"step-{state['step']:07d}"), dirs_exist_ok=True)
                steps = sorted(self.files.checkpoints.glob("step-*"))
                for old in steps[: -self.config.keep_last]:
                    shutil.rmtree(old, ignore_errors=True)
        self._barrier()

"""A run made ready for its first step (or its next one, resumed): data, tokenizer, model, optimizer, evaluator.

How the run computes is decided here once and recorded with reasons (`setup_decisions`): status.json's
`setup` and the log carry them, e.g. `{"precision": {"value": "bf16", "reason": "this CPU has AVX-512 BF16"}}`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from transformer.data.load import load_corpus
from transformer.data.tokenizer import TokenizerLike, load_tokenizer, train_tokenizer
from transformer.decoding.translate import Translator
from transformer.model.checkpoint import TOKENIZER_FILE, Checkpoint, load_checkpoint, recover_interrupted_saves
from transformer.model.config import ModelConfig
from transformer.model.hf.card import provenance
from transformer.model.layers import Transformer
from transformer.model.loss import TokenLoss
from transformer.runs import RunFiles
from transformer.training import cores, distributed
from transformer.training.dev_eval import DevEvaluator, Pairs
from transformer.training.precision import Decision, resolve_precision
from transformer.training.recipe import (
    FUSED_OPTIMIZER_DEVICES,
    TrainConfig,
    TrainState,
    load_training_state,
    make_optimizer,
    resolve_device,
)
from transformer.training.run import RunSpec, TrainingError, best_saved_score, resume_point, writing

log = logging.getLogger(__name__)


def encode_pairs(pairs, tokenizer: TokenizerLike, max_len: int) -> Pairs:
    encoded = [(tokenizer.encode_source(s), tokenizer.encode_target(t)) for s, t in pairs]
    kept = [(s, t) for s, t in encoded if len(s) <= max_len and len(t) - 1 <= max_len]
    if len(kept) < len(encoded):
        log.info("dropped %d pairs longer than max_len %d tokens", len(encoded) - len(kept), max_len)
    return kept


def model_config_for(spec: RunSpec, tokenizer: TokenizerLike) -> ModelConfig:
    fields = dict(spec.model)
    fields.setdefault("share_embeddings", tokenizer.shared)
    fields.setdefault("tie_output", True)
    return ModelConfig(**fields, src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size,
                       pad_id=tokenizer.specials.pad)


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
        "threads": Decision(*cores.applied(torch.get_num_threads())),
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
    tokenizer: TokenizerLike
    model: Transformer
    loss_fn: TokenLoss  # the model's loss on real tokens, what a training step calls
    optimizer: torch.optim.Optimizer
    train: Pairs
    state: TrainState
    evaluator: DevEvaluator
    decisions: dict[str, Decision]
    meta: dict[str, Any]  # the checkpoints' metadata besides the step


def run_tokenizer(files: RunFiles, spec: RunSpec, corpus, is_main: bool, world_size: int) -> TokenizerLike:
    """The run's tokenizer: trained by rank 0 on the corpus, or taken from --init-from's checkpoint, then saved."""
    # Rank 0 alone decides whether to train: another rank that saw the file rank 0 had just written would
    # skip the barrier below and hang the run (seen under load).
    if is_main and not files.tokenizer.is_file() and spec.init_from:
        source = Path(spec.init_from) / TOKENIZER_FILE
        if not source.is_file():
            raise TrainingError(f"--init-from {spec.init_from}: the checkpoint has no {TOKENIZER_FILE}")
        tokenizer = load_tokenizer(source)  # the weights are loaded once, by prepare_run
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
    return load_tokenizer(files.tokenizer)


def prepare_run(files: RunFiles, spec: RunSpec, world_size: int, is_main: bool) -> Prepared:
    """Data, tokenizer, model and optimizer, restored from the latest checkpoint when there is one."""
    c = spec.train
    device = setup_device(c, world_size)
    torch.manual_seed(c.seed)
    if is_main:  # a kill may have cut a checkpoint's swap in two; the tokenizer barrier follows
        recover_interrupted_saves(files.checkpoints)
    corpus = load_corpus(spec.corpus)
    tokenizer = run_tokenizer(files, spec, corpus, is_main, world_size)
    latest = resume_point(files)  # checkpoints/latest, or the newest intact step-N when latest is lost
    if latest is not None or spec.init_from:
        checkpoint = load_checkpoint(latest if latest is not None else spec.init_from, device)
        model, model_config = checkpoint.model, checkpoint.config
        inherited = provenance(checkpoint.metadata)  # an imported model's source and licence stay with its weights
        if latest is None:
            log.info("starting from the weights of %s (%s)", spec.init_from,
                     checkpoint.metadata.get("description", "no description"))
    else:
        model_config = model_config_for(spec, tokenizer)
        model = Transformer(model_config).to(device)
        inherited = {}
    train = encode_pairs(corpus.train, tokenizer, model_config.max_len)
    dev = encode_pairs(corpus.dev, tokenizer, model_config.max_len)
    for name, split, pairs in (("train", corpus.train, train), ("dev", corpus.dev, dev)):
        if not pairs:  # no batch to train on loops forever at step 0; no dev sentence fails the first evaluation
            raise TrainingError(f"the {name} split is empty: the corpus gave {len(split)} {name} pair(s), none of them "
                                f"within the model's {model_config.max_len} tokens. Give a larger corpus, or shorter "
                                "sentences")
    optimizer = make_optimizer(model, c)
    state = TrainState()
    if latest is not None:
        state = load_training_state(latest, optimizer)
        log.info("resumed from %s at step %d", latest, state.step)
    kept = best_saved_score(files)
    if kept is not None and (state.best_bleu is None or kept > state.best_bleu):
        state.best_bleu = kept  # best/ holds a better model than the resume point knew of: only beat it
    loss_fn = TokenLoss(model)
    translator = Translator(Checkpoint(files.root, model_config, model, tokenizer), batch_size=64)
    evaluator = DevEvaluator(corpus, dev, translator, loss_fn, max_tokens=c.max_tokens, n_sentences=c.eval_sentences)
    meta = {"corpus": spec.corpus.to_dict(), "description": corpus.description,
            "n_params": sum(p.numel() for p in model.parameters()), **inherited}
    return Prepared(device, tokenizer, model, loss_fn, optimizer, train, state, evaluator, setup_decisions(c, device),
                    meta)

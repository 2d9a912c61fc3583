"""Translate one sentence for the explorer: search, per-token probabilities, n-best, attention. No streamlit."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from transformer.decoding import SearchSettings, search
from transformer.tokenizer import EOS_ID, UNK_ID
from ui.attention import AttentionSet, compute_attention

MAX_WORDS = 200


@dataclass
class Candidate:
    text: str
    pieces: list[str]  # output tokens, </s> included when finished
    probs: list[float]  # per token
    score: float  # the normalised score beam search ranks by
    finished: bool


@dataclass
class Result:
    source: str
    best: Candidate
    nbest: list[Candidate]
    attention: AttentionSet  # of the best output
    warnings: list[str] = field(default_factory=list)


def prepare_source(tokenizer, text: str, max_len: int) -> tuple[list[int], list[str]]:
    """Source ids and warnings; ValueError with a readable message for input that cannot be translated."""
    text = text.strip()
    if not text:
        raise ValueError("Type a sentence to translate.")
    if len(text.split()) > MAX_WORDS:
        raise ValueError(f"That is more than {MAX_WORDS} words; try a single sentence.")
    ids = tokenizer.encode_source(text)
    warnings = []
    if len(ids) > max_len:
        ids = ids[: max_len - 1] + [EOS_ID]
        warnings.append(f"The sentence was cut to the model's {max_len} source tokens.")
    unknown = [p for i, p in zip(ids, tokenizer.source_pieces(ids)) if i == UNK_ID]
    if unknown:
        warnings.append(f"{len(unknown)} token(s) are not in the model's vocabulary and read as <unk>.")
    return ids, warnings


def translate(checkpoint, text: str, settings: SearchSettings) -> Result:
    model, tokenizer = checkpoint.model, checkpoint.tokenizer
    src_ids, warnings = prepare_source(tokenizer, text, model.config.max_len)
    device = next(model.parameters()).device
    result = search(model, torch.tensor([src_ids], device=device), settings)[0]
    nbest = [Candidate(tokenizer.decode_target(h.tokens), tokenizer.target_pieces(h.tokens),
                       [math.exp(lp) for lp in h.log_probs], h.normalized_score, h.finished) for h in result.hypotheses]
    best = result.best
    if not best.finished:
        warnings.append("The output hit the length limit before the model ended it with </s>.")
    attention = compute_attention(model, tokenizer, src_ids, best.tokens[: model.config.max_len - 1])
    return Result(text, nbest[0], nbest, attention, warnings)

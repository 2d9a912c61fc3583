"""What a search returns and records: hypotheses, steps, candidates, and the beam tree's nodes.

Shared by every decoding engine (`transformer.decoding.search`, `transformer.decoding.beam`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer.data.tokenizer import SpecialIds
from transformer.decoding.settings import SearchSettings, length_penalty
from transformer.model.layers import Transformer

Rows = tuple[list[Tensor], list[Tensor]]  # per-layer self- and cross-attention rows of one or more queries
STATUSES = ("live", "finished", "stopped", "pruned")


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Candidates:
    """The next tokens a step considered, most probable first (ties: the lower id first), each with its numbers."""

    tokens: list[int]  # the settings' `candidates` most probable, and a sampled token from further down if drawn
    probs: list[float]  # the model's probabilities
    tempered: list[float] | None = None  # sampling: after temperature
    sampled: list[float] | None = None  # sampling: after temperature, top-k and top-p: what the draw used
    kept: int | None = None  # sampling: how many tokens top-k and top-p left to draw from


@dataclass
class HypothesisStep:
    """What the decoder saw and predicted for one hypothesis at one step."""

    prefix: list[int]  # tokens fed so far, the start token first; the last one is this step's query
    score: float  # cumulative log-probability of prefix
    candidates: Candidates
    self_attention: Tensor | None  # (n_layers, H, len(prefix)): the query's row over the prefix
    cross_attention: Tensor | None  # (n_layers, H, S): the query's row over the source


@dataclass(frozen=True)
class Node:
    """A candidate continuation considered at a step, and its fate: the edges of the beam tree."""

    parent: int  # index into the step's `live` hypotheses
    token: int
    log_prob: float  # of token after the parent's prefix
    score: float  # cumulative log-probability, token included
    status: str  # "live" (kept), "finished" (ended by </s>), "stopped" (hit the length limit), "pruned"
    slot: int = -1  # for "live": its index among the next step's live hypotheses


@dataclass
class SearchStep:
    live: list[HypothesisStep]  # the hypotheses fed at this step (greedy: one)
    nodes: list[Node]  # candidates considered, best score first (greedy: the one chosen)


@dataclass
class Hypothesis:
    tokens: list[int]  # output ids after the start token, ending with </s> when finished
    log_probs: list[float]  # per token
    score: float  # sum of log_probs
    normalized_score: float  # score / length_penalty(len(tokens)): what beam search ranks by
    finished: bool  # False: cut at the length limit (or still live in a session)


@dataclass
class SearchMaps:
    """Every attention map of a sentence's best hypothesis, as its search computed them: what a teacher-forced pass
    over the source and start + output[:-1] gives (rows are queries; the query of row t emitted token t)."""

    enc_self: list[Tensor]  # n_encoder_layers x (H, S, S)
    dec_self: list[Tensor]  # n_decoder_layers x (H, T, T)
    cross: list[Tensor]  # n_decoder_layers x (H, T, S)


@dataclass
class DecodeResult:
    hypotheses: list[Hypothesis]  # n-best, best first; greedy gives one
    steps: list[SearchStep] | None = None  # when record_steps
    maps: SearchMaps | None = None  # greedy search and sampling, when asked for (of sample 0)

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]


def hypothesis(tokens: list[int], log_probs: list[float], finished: bool, settings: SearchSettings) -> Hypothesis:
    score = sum(log_probs)
    return Hypothesis(tokens, log_probs, score, score / length_penalty(len(tokens), settings), finished)


def candidates(logp: Tensor, n: int, drawn: int | None = None, tempered_row: Tensor | None = None,
               sampled_row: Tensor | None = None) -> Candidates:
    """logp (V,) -> the n most probable tokens (and drawn when it is not one of them), probability then id order."""
    probs = logp.exp()
    top = probs.topk(min(n, probs.numel())).indices.tolist()
    if drawn is not None and drawn not in top:
        top.append(drawn)
    values = probs[top].tolist()
    order = sorted(range(len(top)), key=lambda i: (-values[i], top[i]))  # stable between runs and steps
    tokens = [top[i] for i in order]
    if sampled_row is None:
        return Candidates(tokens, [values[i] for i in order])
    return Candidates(tokens, [values[i] for i in order], tempered_row[tokens].tolist(), sampled_row[tokens].tolist(),
                      int(sampled_row.gt(0).sum()))


def hypothesis_step(prefix: list[int], score: float, found: Candidates, rows: Rows | None,
                     src_len: int) -> HypothesisStep:
    """rows = (self, cross) per-layer lists of (H, T) and (H, S_batch)."""
    self_att = cross_att = None
    if rows is not None:
        self_att = torch.stack(rows[0])  # (n_layers, H, T)
        cross_att = torch.stack(rows[1])[:, :, :src_len]  # (n_layers, H, S): the batch's padding cut off
    return HypothesisStep(prefix, score, found, self_att, cross_att)


def next_token_log_probs(logits: Tensor, specials: SpecialIds) -> Tensor:
    """logits (B, V) -> log-probabilities (B, V), with specials.never ruled out (-inf): never an output (our
    <pad> and <s>; Marian's pad).

    The other tokens keep the model's own probabilities (no renormalisation), so scores stay what a
    teacher-forced pass gives.
    """
    logp = logits.float().log_softmax(-1)
    logp[:, list(specials.never)] = -math.inf
    return logp


def source_lengths(model: Transformer, src: Tensor) -> list[int]:
    """Real lengths of the right-padded src (B, S); refuses a model left in training mode."""
    if model.training:
        raise ValueError("decoding needs model.eval(): dropout would make the output random")
    return (src != model.config.pad_id).sum(1).tolist()

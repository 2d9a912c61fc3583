"""Sampling the next token: temperature, top-k and top-p (nucleus), as Hugging Face's `generate` applies them.

The distribution a token is drawn from is built from the model's next-token log-probabilities in three
steps, in this order (HF's logits warpers: temperature, then top-k, then top-p):

1. temperature T: p_T(w) proportional to p(w) ** (1 / T), i.e. softmax(logits / T) (Ackley, Hinton and
   Sejnowski, 1985; T -> 0 is greedy search, T = 1 the model itself, T > 1 flatter);
2. top-k: keep the k most probable tokens (Fan, Lewis and Dauphin, 2018, "Hierarchical Neural Story
   Generation"); tokens tied with the k-th are kept too;
3. top-p, the nucleus: keep the smallest set of most probable tokens whose probability, renormalised after
   step 2, sums to at least p (Holtzman et al., 2020, "The Curious Case of Neural Text Degeneration"), the
   most probable token always;

then renormalise what is kept. A token is drawn by inverting the cumulative distribution at a uniform
number from the sample's own generator, seeded from (seed, sample index): a draw depends only on the seed,
the sample index and the model's numbers, not on which other sentences share the batch.
"""

from __future__ import annotations

import hashlib
import math

import torch
from torch import Tensor


def _scaled(logp: Tensor, temperature: float) -> Tensor:
    """logp (A, V) -> (A, V) float64 (logp - max) / temperature: softmax's input, measured from each row's best token
    so that no temperature overflows it (logp / 1e-320 is -inf for every token, and softmax then NaN); as the
    temperature goes to 0 every other token goes to -inf, which is greedy search."""
    logp = logp.double()
    return (logp - logp.max(-1, keepdim=True).values) / temperature


def tempered(logp: Tensor, temperature: float) -> Tensor:
    """logp (A, V) log-probabilities -> (A, V) float64 probabilities softmax(logp / temperature)."""
    return _scaled(logp, temperature).softmax(-1)


def sampling_distribution(logp: Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> Tensor:
    """logp (A, V) -> the (A, V) float64 distribution a token is drawn from: temperature, top-k, top-p, renormalised.

    Tokens ruled out in logp (-inf: <pad>, <s>) stay at probability 0.
    """
    scores = _scaled(logp, temperature)  # (A, V)
    if 0 < top_k < scores.size(-1):
        kth = scores.topk(top_k, dim=-1).values[:, -1:]  # (A, 1)
        scores = scores.masked_fill(scores < kth, -math.inf)
    if top_p < 1:
        probs, order = scores.softmax(-1).sort(dim=-1, descending=True)  # (A, V) each
        before = probs.cumsum(-1) - probs  # mass of the more probable tokens
        drop = before >= top_p  # the nucleus is already complete without this token (never the first)
        scores = scores.masked_fill(drop.scatter(-1, order, drop), -math.inf)
    return scores.softmax(-1)


def draw(probs: Tensor, uniforms: Tensor) -> Tensor:
    """probs (A, V), uniforms (A,) in [0, 1) -> tokens (A,): the inverse of each row's cumulative distribution.

    A token of probability 0 is never drawn (a rounding at the top end falls back to the last possible token).
    """
    cdf = probs.double().cumsum(-1)  # (A, V)
    x = uniforms.double().to(cdf.device)[:, None] * cdf[:, -1:]  # (A, 1)
    tokens = torch.searchsorted(cdf, x, right=True).clamp_(max=probs.size(-1) - 1)  # (A, 1)
    last_possible = probs.size(-1) - 1 - probs.gt(0).flip(-1).int().argmax(-1, keepdim=True)  # (A, 1)
    tokens = torch.where(probs.gather(-1, tokens) > 0, tokens, last_possible)
    return tokens[:, 0]


def sample_generator(seed: int, sample: int) -> torch.Generator:
    """The random stream of one sample: the same (seed, sample) gives the same draws.

    The CPU generator (a Mersenne Twister) keeps 32 bits of its seed, so the pair is hashed down to 32 bits.
    """
    digest = hashlib.blake2s(f"{seed}:{sample}".encode(), digest_size=4).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest, "little"))


def uniforms(generators: list[torch.Generator]) -> Tensor:
    """One uniform number in [0, 1) from each generator: (A,) float64."""
    return torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in generators])


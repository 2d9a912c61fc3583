"""Per-head statistics of attention maps over a sample (Voita et al., 2019; Clark et al., 2019), and the
plain-language role a clear-cut statistic suggests.

Each statistic is a mean over the query rows of every sentence of the sample, for one head; for a row of
weights w over the keys k of query q:

    entropy      -sum_k w_k log w_k (nats; 0 log 0 = 0)
    spread       entropy / log(number of keys the query may read): 1 is a uniform row (rows of one key left out)
    distance     sum_k w_k |k - q|: how far, in tokens, the head looks (self-attention only)
    previous     w_{q-1}; same w_q; next w_{q+1} (self-attention only; a decoder query q read token q)
    bos, eos     the weight on the decoder's start token (key 0 of decoder self-attention: <s>, or Marian's
                 <pad>), on </s>
    punctuation  the weight on punctuation pieces ("," "." "▁;" ...)
    diagonal     the weight within one position of the length-scaled diagonal k = q (S - 1) / (T - 1)
                 (cross-attention only): what a monotonic alignment head puts there

A statistic that does not apply to a family is NaN.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.data.tokenizer import EOS, Tokenizer
from transformer.model.layers import Transformer

STATISTICS = {
    "entropy": "entropy of a row (nats)",
    "spread": "entropy / log(keys): 1 is uniform",
    "distance": "mean distance to the keys (tokens)",
    "previous": "weight on the previous token",
    "same": "weight on its own token",
    "next": "weight on the next token",
    "bos": "weight on the start token",
    "eos": "weight on </s>",
    "punctuation": "weight on punctuation",
    "diagonal": "weight near the diagonal",
}
SELF_ONLY = ("distance", "previous", "same", "next")

# (statistic, threshold, role): a head gets the role of the statistic that passes its threshold by most
RULES = (
    ("previous", 0.5, "previous-token head"),
    ("next", 0.5, "next-token head"),
    ("same", 0.5, "attends to its own token"),
    ("eos", 0.5, "attends to </s>"),
    ("bos", 0.5, "attends to the start token"),
    ("punctuation", 0.5, "attends to punctuation"),
    ("diagonal", 0.6, "diagonal alignment head"),
    ("spread", 0.85, "broad head: spreads its weight over the sentence"),
)


def is_punctuation(piece: str) -> bool:
    bare = piece.lstrip("▁")
    return bool(bare) and all(unicodedata.category(c).startswith("P") for c in bare)


def map_statistics(weights: Tensor, key_pieces: Sequence[str], *, family: str, mask: Tensor | None = None
                   ) -> dict[str, Tensor]:
    """Per-row statistics of one map, weights (H, L_q, L_k): statistic -> (H, L_q); NaN where undefined.

    mask (L_q, L_k), True where the query may read the key (default: the causal mask for dec_self, all keys
    otherwise), gives the number of keys for `spread`.
    """
    weights = weights.double()
    H, Lq, Lk = weights.shape
    if mask is None:
        mask = torch.ones(Lq, Lk, dtype=torch.bool)
        if family == "dec_self":
            mask = mask.tril()
    q = torch.arange(Lq, dtype=torch.double)[:, None]  # (L_q, 1)
    k = torch.arange(Lk, dtype=torch.double)[None, :]  # (1, L_k)
    entropy = -(weights * weights.clamp(min=1e-300).log()).sum(-1)  # (H, L_q)
    n_keys = mask.sum(-1).double()  # (L_q,)
    spread = torch.where(n_keys > 1, entropy / n_keys.clamp(min=2).log(), torch.full_like(entropy, math.nan))

    def on(columns: Sequence[bool]) -> Tensor:
        return (weights * torch.tensor(columns, dtype=torch.double)).sum(-1)

    nan = torch.full((H, Lq), math.nan, dtype=torch.double)
    starts = [family == "dec_self" and j == 0 for j in range(Lk)]  # the start token, whatever its piece
    stats = {"entropy": entropy, "spread": spread, "bos": on(starts),
             "eos": on([p == EOS for p in key_pieces]), "punctuation": on([is_punctuation(p) for p in key_pieces])}
    if family == "cross":
        centre = q * (Lk - 1) / max(Lq - 1, 1)  # (L_q, 1)
        stats["diagonal"] = (weights * ((k - centre).abs() <= 1.0)).sum(-1)
        stats.update({name: nan for name in SELF_ONLY})
    else:
        stats["distance"] = (weights * (k - q).abs()).sum(-1)
        for name, offset in (("previous", -1), ("same", 0), ("next", 1)):
            stats[name] = (weights * (k - q == offset)).sum(-1)
        stats["diagonal"] = nan
    return stats


@dataclass
class HeadStatistics:
    """values[family][statistic] is (L, H): the mean over every query row of the sample."""

    values: dict[str, dict[str, Tensor]]
    sentences: int

    def get(self, family: str, statistic: str) -> Tensor:
        return self.values[family][statistic]


@dataclass
class StatisticsAccumulator:
    """Sums of per-row statistics, sentence by sentence; `result()` averages them."""

    sums: dict[str, dict[str, list[Tensor]]] = field(default_factory=dict)  # family -> stat -> layers x (H,)
    counts: dict[str, dict[str, list[Tensor]]] = field(default_factory=dict)
    sentences: int = 0

    def add(self, maps: Mapping[str, Sequence[Tensor]], key_pieces: Mapping[str, Sequence[str]]) -> None:
        """maps[family] is per layer (H, L_q, L_k) of one sentence; key_pieces[family] labels its columns."""
        for family, layers in maps.items():
            for layer, weights in enumerate(layers):
                for name, rows in map_statistics(weights.cpu(), key_pieces[family], family=family).items():
                    defined = ~rows.isnan()
                    total, count = rows.nan_to_num(0.0).sum(-1), defined.sum(-1).double()  # (H,) each
                    sums = self.sums.setdefault(family, {}).setdefault(name, [])
                    counts = self.counts.setdefault(family, {}).setdefault(name, [])
                    if layer == len(sums):
                        sums.append(torch.zeros_like(total))
                        counts.append(torch.zeros_like(count))
                    sums[layer] += total
                    counts[layer] += count
        self.sentences += 1

    def result(self) -> HeadStatistics:
        values = {family: {name: torch.stack([s / c for s, c in zip(layers, self.counts[family][name])])
                           for name, layers in by_name.items()}  # 0 / 0 = NaN: the statistic does not apply
                  for family, by_name in self.sums.items()}
        return HeadStatistics(values, self.sentences)


@torch.inference_mode()
def head_statistics(model: Transformer, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]],
                    batch_size: int = 32) -> HeadStatistics:
    """Statistics of every head over pairs, each target teacher-forced (its maps as in training)."""
    batch_size = checks.integer(batch_size, "batch_size", 1)
    config, device = model.config, next(model.parameters()).device
    accumulator = StatisticsAccumulator()
    encoded = []
    for src_text, tgt_text in pairs:
        src_ids, tgt_ids = tokenizer.encode_source(src_text), tokenizer.encode_target(tgt_text)
        if len(src_ids) <= config.max_len and len(tgt_ids) - 1 <= config.max_len:
            encoded.append((src_ids, tgt_ids[:-1]))  # the decoder reads start + the target but its </s>
    for start in range(0, len(encoded), batch_size):
        chunk = encoded[start : start + batch_size]
        src = _pad([s for s, _ in chunk], config.pad_id, device)  # (B, S)
        tgt = _pad([t for _, t in chunk], config.pad_id, device)  # (B, T)
        maps = model(src, tgt, return_attention=True).attention
        for b, (src_ids, tgt_in) in enumerate(chunk):
            S, T = len(src_ids), len(tgt_in)
            mine = {"enc_self": [w[b, :, :S, :S] for w in maps.enc_self],
                    "dec_self": [w[b, :, :T, :T] for w in maps.dec_self],
                    "cross": [w[b, :, :T, :S] for w in maps.cross]}
            src_pieces = tokenizer.source_pieces(src_ids)
            accumulator.add(mine, {"enc_self": src_pieces, "dec_self": tokenizer.target_pieces(tgt_in),
                                   "cross": src_pieces})
    return accumulator.result()


def _pad(rows: list[list[int]], pad_id: int, device: torch.device) -> Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long, device=device)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


@dataclass(frozen=True)
class HeadLabel:
    role: str  # "previous-token head", or "" when no statistic is clear-cut
    statistic: str  # the statistic behind the role ("" without one)
    value: float  # its value
    numbers: dict[str, float]  # every statistic of the head, for the hover

    def describe(self) -> str:
        """The role and the number behind it: "previous-token head (weight on the previous token: 0.82)"."""
        if not self.role:
            return "no clear-cut role"
        return f"{self.role} ({STATISTICS[self.statistic]}: {self.value:.2f})"


def head_labels(stats: HeadStatistics, family: str) -> list[list[HeadLabel]]:
    """[layer][head] labels: the rule passed by the largest margin over its threshold, if any."""
    family_stats = stats.values[family]
    n_layers, n_heads = next(iter(family_stats.values())).shape
    labels = []
    for layer in range(n_layers):
        row = []
        for head in range(n_heads):
            numbers = {name: float(values[layer, head]) for name, values in family_stats.items()}
            passed = [(numbers[name] - threshold, name, role) for name, threshold, role in RULES
                      if not math.isnan(numbers.get(name, math.nan)) and numbers[name] >= threshold]
            if passed:
                _, name, role = max(passed)
                row.append(HeadLabel(role, name, numbers[name], numbers))
            else:
                row.append(HeadLabel("", "", math.nan, numbers))
        labels.append(row)
    return labels


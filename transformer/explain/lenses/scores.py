"""Which lens to trust, measured: each lens's cross-attention maps scored against gold word links (AER) and
against the model's own behaviour (faithfulness to occlusion), per layer and head.

- AER (Och and Ney, 2003): pieces merged into words as `explain.alignment` does (target rows averaged, source
  columns summed), each target word linked to its argmax source word, scored against the sure and possible gold
  links, counts summed over the split.
- Faithfulness: occluding source word j (every one of its pieces replaced by <unk>) drops the log-probability
  of target word t (the sum of its pieces' log-probs, teacher-forced on the gold target) by d_tj. Per target
  word, Spearman's rank correlation between a lens's word-level source scores and d_t., averaged over every
  target word of the split with at least two source words and neither row constant. A lens's headline
  faithfulness is that of its best layer and head by AER: the map one would show as the alignment.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer.data.tokenizer import SpecialIds
from transformer.data.words import words
from transformer.explain.alignment import (
    AlignedExample,
    AlignmentCounts,
    argmax_links,
    count_links,
    piece_words,
    word_attention,
)
from transformer.explain.lenses.maps import HEADLESS, LENSES, check_lens
from transformer.explain.lenses.trace import trace
from transformer.explain.occlusion import n_words, occluded_rows
from transformer.model.layers import Transformer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LensScore:
    """One lens over a split: AER per layer and head (heads [layer][head], one column for a headless lens),
    per layer of the heads' mean, and faithfulness per layer and head."""

    lens: str
    heads: list[list[float]]  # AER [layer][head]
    layer_mean: list[float]  # AER of each layer's map: the mean of its heads, or the lens's own (norm-weighted)
    faithfulness_heads: list[list[float]]  # mean Spearman [layer][head]
    sentences: int
    skipped: int

    @property
    def best(self) -> tuple[int, int, float]:
        return min(((layer, head, aer) for layer, row in enumerate(self.heads) for head, aer in enumerate(row)),
                   key=lambda item: item[2])

    @property
    def faithfulness(self) -> float:
        layer, head, _ = self.best
        return self.faithfulness_heads[layer][head]

    def to_json(self) -> dict:
        layer, head, aer = self.best
        return {"best": {"layer": layer, "head": None if self.lens in HEADLESS else head, "aer": aer},
                "layer_mean_aer": self.layer_mean, "faithfulness": self.faithfulness,
                "layer_faithfulness": [row[0] if self.lens in HEADLESS else sum(row) / len(row)
                                       for row in self.faithfulness_heads],
                "sentences": self.sentences, "skipped": self.skipped}


def ranks(values: Tensor) -> Tensor:
    """Ranks from 1 along the last dim, ties sharing their mean rank: (..., N) -> (..., N)."""
    v = values.double()
    below = (v[..., :, None] > v[..., None, :]).sum(-1)  # how many are smaller
    equal = (v[..., :, None] == v[..., None, :]).sum(-1)  # itself included
    return below + (equal + 1) / 2.0


def spearman(a: Tensor, b: Tensor) -> Tensor:
    """Spearman's rho of each row of a and b, (..., N) -> (...); NaN where a row is constant (nothing to rank)."""
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    denominator = ra.norm(dim=-1) * rb.norm(dim=-1)
    return torch.where(denominator > 0, (ra * rb).sum(-1) / denominator.clamp(min=1e-300), float("nan"))


@torch.no_grad()
def occlusion_drops(model: Transformer, src_ids: Sequence[int], output_ids: Sequence[int],
                    src_words: Sequence[int | None], log_probs: Tensor, specials: SpecialIds) -> Tensor:
    """d[t, j] = log p(y_t) - log p(y_t | source word j's pieces all <unk>): (T, source words), one batch."""
    device = next(model.parameters()).device
    src = occluded_rows(list(src_ids), src_words, specials.unk).to(device)  # (Ws, S)
    tgt = torch.tensor([[specials.start, *output_ids[:-1]]], device=device).expand(src.size(0), -1)  # (Ws, T)
    logp = model(src, tgt).logits.float().log_softmax(-1)  # (Ws, T, V)
    target = torch.tensor(list(output_ids), device=device)
    occluded = logp.gather(2, target.expand(src.size(0), -1)[..., None])[..., 0]  # (Ws, T)
    return (log_probs[None] - occluded).T  # (T, Ws)


def _word_rows(per_piece: Tensor, tgt_words: Sequence[int | None]) -> Tensor:
    """(T, Ws) piece rows -> (Wt, Ws): a word's drop is the sum of its pieces' (its log-prob is their sum)."""
    rows = torch.zeros(n_words(tgt_words), len(tgt_words), dtype=per_piece.dtype)
    for t, w in enumerate(tgt_words):
        if w is not None:
            rows[w, t] = 1.0
    return rows @ per_piece


def _usable(tokenizer, ex: AlignedExample, max_len: int):
    """(source ids, output ids, their word indices) when the pieces map onto the gold words, else None."""
    src_ids, tgt_ids = tokenizer.encode_source(ex.src), tokenizer.encode_target(ex.tgt)
    output = tgt_ids[1:]
    src_words, tgt_words = piece_words(tokenizer.source_pieces(src_ids)), piece_words(tokenizer.target_pieces(output))
    n_src, n_tgt = n_words(src_words), n_words(tgt_words)
    fits = len(src_ids) <= max_len and len(tgt_ids) <= max_len
    if fits and n_src == len(words(ex.src)) and n_tgt == len(words(ex.tgt)) and n_src and n_tgt:
        return src_ids, output, src_words, tgt_words
    return None


class _Tally:
    """Counts and correlation sums of one lens."""

    def __init__(self, n_layers: int, n_heads: int):
        self.heads = [[AlignmentCounts() for _ in range(n_heads)] for _ in range(n_layers)]
        self.means = [AlignmentCounts() for _ in range(n_layers)]
        self.rho = [[0.0] * n_heads for _ in range(n_layers)]
        self.rho_n = [[0] * n_heads for _ in range(n_layers)]

    def add(self, cross: Sequence[Tensor], src_words, tgt_words, ex: AlignedExample, drops: Tensor,
            layer_maps: Sequence[Tensor] | None = None) -> None:
        """layer_maps: the lens's own map of each layer (1, T, S), else the layer is the mean of its heads."""
        for layer, maps in enumerate(cross):
            per_head = word_attention(maps.float().cpu(), tgt_words, src_words)  # (H', Wt, Ws)
            rho = spearman(per_head, drops.expand_as(per_head))  # (H', Wt)
            for head in range(per_head.size(0)):
                self.heads[layer][head] += count_links(argmax_links(per_head[head]), ex.links, ex.possible)
                kept = rho[head][~rho[head].isnan()]
                self.rho[layer][head] += kept.sum().item()
                self.rho_n[layer][head] += kept.numel()
            whole = (per_head.mean(dim=0) if layer_maps is None else
                     word_attention(layer_maps[layer].float().cpu(), tgt_words, src_words)[0])  # (Wt, Ws)
            self.means[layer] += count_links(argmax_links(whole), ex.links, ex.possible)

    def result(self, lens: str, sentences: int, skipped: int) -> LensScore:
        rho = [[s / n if n else float("nan") for s, n in zip(row, ns)] for row, ns in zip(self.rho, self.rho_n)]
        return LensScore(lens, [[c.aer for c in row] for row in self.heads], [c.aer for c in self.means], rho,
                         sentences, skipped)


def score_lenses(model: Transformer, tokenizer, examples: Sequence[AlignedExample],
                 lenses: Iterable[str] = tuple(LENSES)) -> dict[str, LensScore]:
    """Every lens's AER and faithfulness over the examples (teacher-forced on their gold targets)."""
    if model.training:
        raise ValueError("score the model in eval mode (dropout off): call model.eval() first")
    lenses = list(lenses)
    for lens in lenses:
        check_lens(lens)
    config = model.config
    tallies: dict[str, _Tally] = {}
    sentences = skipped = 0
    for index, ex in enumerate(examples):
        usable = _usable(tokenizer, ex, config.max_len - 1)
        if usable is None:
            skipped += 1
            continue
        src_ids, output, src_words, tgt_words = usable
        traced = trace(model, src_ids, output, specials=tokenizer.specials)
        drops = _word_rows(occlusion_drops(model, src_ids, output, src_words, traced.log_probs,
                                           tokenizer.specials).cpu(), tgt_words)
        for lens in lenses:
            maps = LENSES[lens](model, traced)
            tally = tallies.setdefault(lens, _Tally(len(maps.cross), maps.cross[0].size(0)))
            tally.add(maps.cross, src_words, tgt_words, ex, drops,
                      None if maps.layer_maps is None else maps.layer_maps.cross)
        sentences += 1
        if (index + 1) % 50 == 0:
            log.info("scored %d of %d sentences", index + 1, len(examples))
    return {lens: tally.result(lens, sentences, skipped) for lens, tally in tallies.items()}

"""What a training run measures on its dev split at each evaluation: the dev loss, greedy BLEU, chrF and exact
matches, the alignment error of the cross-attention heads where the corpus has gold word links, and the attention
maps of a few probe sentences. The trainer writes what this returns (transformer.runs owns the formats).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from transformer.data.corpora.base import ParallelCorpus
from transformer.decoding.evaluate import corpus_scores, translate_texts
from transformer.decoding.translate import Translator
from transformer.explain import AlignedExample, cross_attention_aer, format_links
from transformer.model.loss import TokenLoss
from transformer.runs import ProbeRecord
from transformer.training.batching import Batch, collate, make_batches

N_PROBES = 3
Pairs = list[tuple[list[int], list[int]]]  # (source ids, target ids) per sentence pair


def on_device(batch: Batch, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device)


def pick_probes(dev_pairs: list[tuple[str, str]]) -> list[str]:
    """A few mid-length dev sentences, the same on every run, whose attention is saved at each eval."""
    medium = [s for s, _ in dev_pairs if 8 <= len(s.split()) <= 16]
    return (medium or [s for s, _ in dev_pairs])[:N_PROBES]


@dataclass(frozen=True)
class Probes:
    """One evaluation's probe sentences: their records and maps per family, each (L, H, L_q, L_k)."""

    records: list[ProbeRecord]
    maps: list[dict[str, torch.Tensor]]


class DevEvaluator:
    """The dev split of a run and what is measured on it (by rank 0)."""

    def __init__(self, corpus: ParallelCorpus, dev: Pairs, translator: Translator, loss_fn: TokenLoss, *,
                 max_tokens: int, n_sentences: int):
        self.dev, self.translator, self.loss_fn = dev, translator, loss_fn
        self.max_tokens, self.n_sentences = max_tokens, n_sentences
        self.dev_pairs, self.probes = corpus.dev, pick_probes(corpus.dev)
        possible = corpus.possible_alignments
        self.gold = [AlignedExample(s, t, corpus.alignments[(s, t)], possible.get((s, t), frozenset()))
                     for s, t in corpus.dev[:n_sentences] if (s, t) in corpus.alignments]
        self.probe_links = {s: corpus.alignments.get((s, t)) for s, t in corpus.dev if s in self.probes}

    @property
    def model(self) -> torch.nn.Module:
        return self.translator.model

    @torch.no_grad()
    def dev_loss(self) -> float:
        self.model.eval()
        total, tokens = 0.0, 0
        lengths = [(len(s), len(t) - 1) for s, t in self.dev]
        for batch_ids in make_batches(lengths, self.max_tokens, shuffle=False, seed=0):
            b = collate([self.dev[i] for i in batch_ids], self.translator.specials.pad)
            total += self.loss_fn(*on_device(b, self.translator.device)).item()  # fp32, no label smoothing
            tokens += b.n_tokens
        return total / max(tokens, 1)

    def measure(self) -> dict[str, Any]:
        """dev_loss, dev_bleu, dev_chrf, dev_exact (%) and, with gold links, the heads' alignment error."""
        record: dict[str, Any] = {"dev_loss": self.dev_loss()}
        sources = [s for s, _ in self.dev_pairs[: self.n_sentences]]
        refs = [t for _, t in self.dev_pairs[: self.n_sentences]]
        hyps = translate_texts(self.translator, sources)
        record |= {f"dev_{k}": v for k, v in corpus_scores(hyps, refs).items() if k in ("bleu", "chrf")}
        record["dev_exact"] = 100.0 * sum(h == r for h, r in zip(hyps, refs)) / max(len(refs), 1)
        if self.gold:
            record |= self.alignment_scores()
        return record

    def alignment_scores(self) -> dict[str, Any]:
        """AER (%) of the best cross-attention head and of each decoder layer's mean of heads (numbered from 0,
        as the explorer numbers them)."""
        aer = cross_attention_aer(self.model, self.translator.tokenizer, self.gold)
        layer, head, best = aer.best
        return {"dev_aer_best": 100.0 * best, "dev_aer_best_head": f"layer {layer} head {head}",
                **{f"dev_aer_layer{i}": 100.0 * value for i, value in enumerate(aer.layer_mean)}}

    def probe(self) -> Probes:
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
        return Probes(records, maps)

"""Head importance in the manner of Michel et al. (2019), "Are Sixteen Heads Really Better than One?": what each
head is worth, as the drop in dev log-likelihood (and in BLEU on a small sample) when that head alone is removed.

The heads are switched off one at a time on a private copy of the model (its W^O columns zeroed and restored, as
`interventions.intervened` does), on top of a base intervention: a head the base already removed is worth
exactly 0.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import sacrebleu
import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.data.tokenizer import Tokenizer
from transformer.decoding.search import DEFAULT_SETTINGS, SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain.interventions import (
    FAMILIES,
    NO_CHANGE,
    Head,
    Intervention,
    attention_module,
    every_head,
    head_columns,
    intervened,
)
from transformer.model.checkpoint import Checkpoint
from transformer.model.layers import Transformer

Progress = Callable[[int, int, Head | None], None]  # (heads done, heads in all, the head just done)
Batch = tuple[Tensor, Tensor, Tensor]  # src (B, S), decoder input (B, T), target (B, T)
TIE = 1e-9  # importances closer than this are equal (BLEU drops of 0 are exactly 0.0)


@dataclass
class HeadImportance:
    """log_likelihood[family] (L, H): mean dev log-likelihood per target token of the base model minus that with
    the head also off (positive: the head helps). bleu[family] (L, H) likewise in BLEU points, when sampled."""

    log_likelihood: dict[str, Tensor]
    bleu: dict[str, Tensor] | None
    base_log_likelihood: float
    base_bleu: float | None
    sentences: int
    bleu_sentences: int
    base: Intervention = NO_CHANGE

    def ranked(self, by: str = "log_likelihood") -> list[tuple[Head, float]]:
        """Every head with its importance, most important first. Ties (BLEU on a small sample often leaves many
        heads at exactly 0) are broken by the drop in log-likelihood, then encoder first, then by layer and head."""
        values = self.log_likelihood if by == "log_likelihood" else self.bleu
        if values is None:
            raise ValueError("no BLEU was sampled")
        heads = [((family, layer, head), float(v[layer, head])) for family, v in values.items()
                 for layer in range(v.size(0)) for head in range(v.size(1))]
        order = {f: i for i, f in enumerate(FAMILIES)}

        def second(head: Head) -> float:  # the tie-break: 0 when ranking by log-likelihood itself
            family, layer, index = head
            return 0.0 if by == "log_likelihood" else -float(self.log_likelihood[family][layer, index])

        return sorted(heads, key=lambda item: (-item[1], second(item[0]), order[item[0][0]], item[0][1:]))

    def ties(self, by: str = "log_likelihood") -> list[tuple[int, int, float]]:
        """(first, end, value) of every run of two or more heads with the same importance, as positions in
        ranked(by): the heads at first..end-1 tie at value."""
        values = [value for _, value in self.ranked(by)]
        runs, first = [], 0
        for i in range(1, len(values) + 1):
            if i == len(values) or abs(values[i] - values[first]) > TIE:
                if i - first > 1:
                    runs.append((first, i, values[first]))
                first = i
        return runs

    def tie_at(self, k: int, by: str = "log_likelihood") -> tuple[int, int, float] | None:
        """The tie that keep_top(k, by) cuts through (some of its heads kept, others off), else None."""
        return next(((first, end, value) for first, end, value in self.ties(by) if first < k < end), None)

    def keep_top(self, k: int, by: str = "log_likelihood") -> Intervention:
        """The base intervention with every head but the k most important switched off (a tie cut at k is decided
        as ranked(by) breaks it)."""
        ranked = [head for head, _ in self.ranked(by)]
        return Intervention(self.base.heads_off | frozenset(ranked[k:]), self.base.positions, self.base.temperature)


def _encode(tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], max_len: int, pad_id: int, batch_size: int,
            device: torch.device) -> list[Batch]:
    rows = []
    for src_text, tgt_text in pairs:
        src_ids, tgt_ids = tokenizer.encode_source(src_text), tokenizer.encode_target(tgt_text)
        if len(src_ids) <= max_len and len(tgt_ids) - 1 <= max_len:
            rows.append((src_ids, tgt_ids))
    rows.sort(key=lambda r: len(r[0]) + len(r[1]))  # similar lengths together: less padding
    batches = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        S, T = max(len(s) for s, _ in chunk), max(len(t) for _, t in chunk) - 1
        src = torch.full((len(chunk), S), pad_id, dtype=torch.long)
        tgt = torch.full((len(chunk), T + 1), pad_id, dtype=torch.long)
        for i, (s, t) in enumerate(chunk):
            src[i, : len(s)], tgt[i, : len(t)] = torch.tensor(s), torch.tensor(t)
        batches.append((src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)))
    return batches


@torch.inference_mode()
def _log_likelihood(model: Transformer, batches: Sequence[Batch]) -> float:
    """Mean log-probability per real target token (</s> included), teacher-forced."""
    total, count = 0.0, 0
    for src, tgt_in, tgt_out in batches:
        logp = model(src, tgt_in).logits.float().log_softmax(-1)  # (B, T, V)
        real = tgt_out != model.config.pad_id
        total += float(logp.gather(-1, tgt_out[..., None])[..., 0][real].sum())
        count += int(real.sum())
    return total / max(count, 1)


def dev_log_likelihood(model: Transformer, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]],
                       batch_size: int = 32) -> float:
    """Mean log-probability per target token of the references of pairs (higher is better)."""
    batch_size = checks.integer(batch_size, "batch_size", 1)
    device = next(model.parameters()).device
    return _log_likelihood(model, _encode(tokenizer, pairs, model.config.max_len, model.config.pad_id, batch_size,
                                          device))


def sample_bleu(model: Transformer, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]],
                settings: SearchSettings = DEFAULT_SETTINGS) -> float:
    """Corpus BLEU (sacreBLEU) of the model's translations of pairs' sources against their targets."""
    if not pairs:
        return float("nan")
    translator = Translator(Checkpoint(None, model.config, model, tokenizer))
    hypotheses = [t.text for t in translator.translate_batch([s for s, _ in pairs], settings)]
    return sacrebleu.metrics.BLEU().corpus_score(hypotheses, [[t for _, t in pairs]]).score


@contextmanager
def _switched_off(model: Transformer, head: Head) -> Iterator[None]:
    """Zero one head's W^O columns of a private model for the block, then put them back."""
    family, layer, index = head
    weight = attention_module(model, family, layer).w_o.weight
    columns = head_columns(model, index)
    saved = weight[:, columns].clone()
    with torch.no_grad():
        weight[:, columns] = 0.0
    try:
        yield
    finally:
        with torch.no_grad():
            weight[:, columns] = saved


def head_importance(model: Transformer, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], *,
                    bleu_pairs: Sequence[tuple[str, str]] = (), base: Intervention = NO_CHANGE,
                    batch_size: int = 32, progress: Progress | None = None) -> HeadImportance:
    """Switch off each head alone (on top of base) and measure the drop in log-likelihood over pairs and, when
    bleu_pairs are given, in greedy BLEU over them. progress(done, total, head) is called after each head."""
    batch_size = checks.integer(batch_size, "batch_size", 1)
    work = intervened(model, base)
    if work is model:
        work = copy.deepcopy(model).eval()  # private: its heads are switched off in place
    device = next(work.parameters()).device
    batches = _encode(tokenizer, pairs, work.config.max_len, work.config.pad_id, batch_size, device)
    base_ll = _log_likelihood(work, batches)
    base_bleu = sample_bleu(work, tokenizer, bleu_pairs) if bleu_pairs else None
    heads = every_head(work)
    layers = {f: 1 + max(layer for g, layer, _ in heads if g == f) for f in FAMILIES}
    ll = {f: torch.zeros(layers[f], work.config.n_heads, dtype=torch.float64) for f in FAMILIES}
    bleu = {f: torch.zeros_like(ll[f]) for f in FAMILIES} if bleu_pairs else None
    if progress is not None:
        progress(0, len(heads), None)
    for done, head in enumerate(heads, 1):
        family, layer, index = head
        with _switched_off(work, head):
            ll[family][layer, index] = base_ll - _log_likelihood(work, batches)
            if bleu is not None:
                bleu[family][layer, index] = base_bleu - sample_bleu(work, tokenizer, bleu_pairs)
        if progress is not None:
            progress(done, len(heads), head)
    return HeadImportance(ll, bleu, base_ll, base_bleu, sum(b[0].size(0) for b in batches), len(bleu_pairs), base)

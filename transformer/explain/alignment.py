"""Word alignments read from attention, and their error rate.

Words here are what the tokenizer's pre-tokenizer cuts before any subword merge: runs of letters
and digits, an elided article or contraction keeping its apostrophe ("l'homme" -> "l'" "homme"),
and every punctuation mark on its own ("est-ce que" -> "est" "-" "ce" "que"). Gold alignments
(the teaching corpus) index these words, so pieces of the model map onto them without guessing.

An alignment is a set of (source word, target word) links, written "i-j" as in the alignment
literature (Och and Ney, 2003), with 0-based indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer.data.tokenizer import BOS, EOS, PAD
from transformer.data.words import Link, words

_CONTROL = frozenset((BOS, EOS, PAD))


def piece_words(pieces: Sequence[str]) -> list[int | None]:
    """The word index of each subword piece; None for <s>, </s> and <pad>.

    A piece starts a new word when it carries the word-start mark "▁", when it is a punctuation
    mark, or when the piece before it ended a word on its own (punctuation, or an apostrophe).
    """
    index: list[int | None] = []
    word, closed, mark_alone = -1, True, False
    for piece in pieces:
        if piece in _CONTROL:
            index.append(None)
            continue
        bare = piece.lstrip("▁")
        punctuation = len(bare) == 1 and not bare.isalnum() and bare not in "'_"
        # a "▁" with nothing after it (the vocabulary lacks "▁," say) belongs to the piece that follows
        if not mark_alone and (closed or piece.startswith("▁") or punctuation):
            word += 1
        index.append(word)
        mark_alone = bare == ""
        closed = punctuation or bare.endswith("'")
    return index


def word_attention(weights: Tensor, tgt_words: Sequence[int | None], src_words: Sequence[int | None]) -> Tensor:
    """Piece-level attention (T, S) -> word level (target words, source words).

    A target word's row is the mean of its pieces' rows; a source word's column is the sum of its
    pieces' columns, so each row still sums to at most 1 (what special tokens took is left out).
    """
    n_tgt = 1 + max((w for w in tgt_words if w is not None), default=-1)
    n_src = 1 + max((w for w in src_words if w is not None), default=-1)
    rows = torch.zeros(n_tgt, len(tgt_words), dtype=weights.dtype, device=weights.device)  # (Wt, T)
    for t, w in enumerate(tgt_words):
        if w is not None:
            rows[w, t] = 1.0
    rows = rows / rows.sum(dim=1, keepdim=True).clamp(min=1.0)
    cols = torch.zeros(len(src_words), n_src, dtype=weights.dtype, device=weights.device)  # (S, Ws)
    for s, w in enumerate(src_words):
        if w is not None:
            cols[s, w] = 1.0
    return rows @ weights @ cols  # (Wt, Ws)


def argmax_links(word_weights: Tensor) -> frozenset[Link]:
    """One link per target word: to the source word its row attends to most."""
    if word_weights.numel() == 0:
        return frozenset()
    best = word_weights.argmax(dim=-1).tolist()
    return frozenset((s, t) for t, s in enumerate(best))


@dataclass(frozen=True)
class AlignmentCounts:
    """Sums over sentences for a corpus-level AER (Och and Ney, 2003, Eq. 9)."""

    predicted: int = 0  # |A|
    sure: int = 0  # |S|
    hit_sure: int = 0  # |A ∩ S|
    hit_possible: int = 0  # |A ∩ P|, P including S

    def __add__(self, other: AlignmentCounts) -> AlignmentCounts:
        return AlignmentCounts(self.predicted + other.predicted, self.sure + other.sure,
                               self.hit_sure + other.hit_sure, self.hit_possible + other.hit_possible)

    @property
    def aer(self) -> float:
        """1 - (|A∩S| + |A∩P|) / (|A| + |S|); 0 is perfect, 1 shares no link."""
        total = self.predicted + self.sure
        return 1.0 - (self.hit_sure + self.hit_possible) / total if total else 0.0


def count_links(predicted: frozenset[Link], sure: frozenset[Link],
                possible: frozenset[Link] = frozenset()) -> AlignmentCounts:
    possible = possible | sure
    return AlignmentCounts(len(predicted), len(sure), len(predicted & sure), len(predicted & possible))


def alignment_error_rate(predicted: frozenset[Link], sure: frozenset[Link],
                         possible: frozenset[Link] = frozenset()) -> float:
    return count_links(predicted, sure, possible).aer


def link_cells(links: frozenset[Link], src_words: Sequence[int | None],
               tgt_words: Sequence[int | None]) -> list[tuple[int, int]]:
    """Word links as (row, column) cells of a piece-level cross-attention map: every piece pair."""
    cells = []
    for t, tw in enumerate(tgt_words):
        for s, sw in enumerate(src_words):
            if tw is not None and sw is not None and (sw, tw) in links:
                cells.append((t, s))
    return cells


@dataclass(frozen=True)
class AlignedExample:
    """A sentence pair with gold links over `words(src)` and `words(tgt)`."""

    src: str
    tgt: str
    links: frozenset[Link]  # sure links S
    possible: frozenset[Link] = frozenset()  # possible-only links (P minus S), e.g. inside an idiom's block


@dataclass(frozen=True)
class HeadAlignment:
    """Corpus-level AER of every cross-attention head, and of each layer's mean of heads."""

    heads: list[list[float]]  # [layer][head]
    layer_mean: list[float]  # [layer]
    sentences: int  # scored
    skipped: int  # whose pieces did not map onto their words (e.g. longer than max_len)

    @property
    def best(self) -> tuple[int, int, float]:
        """(layer, head, AER) of the head that aligns best."""
        return min(((layer, head, aer) for layer, row in enumerate(self.heads) for head, aer in enumerate(row)),
                   key=lambda item: item[2])


def _pad(rows: list[list[int]], pad_id: int, device: torch.device) -> Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long, device=device)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def _score_heads(cross: Sequence[Tensor], src_words: Sequence[int | None], tgt_words: Sequence[int | None],
                 links: frozenset[Link], heads: list[list[AlignmentCounts]], means: list[AlignmentCounts],
                 possible: frozenset[Link] = frozenset()) -> None:
    """Add one sentence's counts: cross is per layer (H, T, S), rows = emitted target pieces."""
    for layer, weights in enumerate(cross):
        per_head = word_attention(weights.float(), tgt_words, src_words)  # (H, Wt, Ws)
        for head in range(per_head.size(0)):
            heads[layer][head] += count_links(argmax_links(per_head[head]), links, possible)
        means[layer] += count_links(argmax_links(per_head.mean(dim=0)), links, possible)


def _empty_counts(n_layers: int, n_heads: int) -> tuple[list[list[AlignmentCounts]], list[AlignmentCounts]]:
    return [[AlignmentCounts() for _ in range(n_heads)] for _ in range(n_layers)], [AlignmentCounts()] * n_layers


def _result(heads, means, sentences: int, skipped: int) -> HeadAlignment:
    return HeadAlignment([[c.aer for c in row] for row in heads], [c.aer for c in means], sentences, skipped)


def sentence_aer(cross: Sequence[Tensor], src_pieces: Sequence[str], tgt_pieces: Sequence[str],
                 links: frozenset[Link], possible: frozenset[Link] = frozenset()) -> HeadAlignment:
    """AER of every head for one sentence whose maps are at hand (cross per layer (H, T, S), rows =
    the emitted `tgt_pieces`), e.g. a translation that equals its gold target."""
    heads, means = _empty_counts(len(cross), cross[0].size(0))
    _score_heads(cross, piece_words(src_pieces), piece_words(tgt_pieces), links, heads, means, possible)
    return _result(heads, means, 1, 0)


@torch.inference_mode()
def cross_attention_aer(model, tokenizer, examples: Sequence[AlignedExample], batch_size: int = 64) -> HeadAlignment:
    """Teacher-force each gold target, read word alignments off every cross-attention head by the
    argmax of each target word's row (pieces merged into words), and score them against gold."""
    config = model.config
    device = next(model.parameters()).device
    heads, means = _empty_counts(config.n_decoder_layers, config.n_heads)
    sentences = skipped = 0
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(examples), batch_size):
            chunk = []
            for ex in examples[start : start + batch_size]:
                src_ids, tgt_ids = tokenizer.encode_source(ex.src), tokenizer.encode_target(ex.tgt)
                src_words = piece_words(tokenizer.source_pieces(src_ids))
                tgt_words = piece_words(tokenizer.target_pieces(tgt_ids[1:]))  # row t emitted tgt_ids[t + 1]
                fits = len(src_ids) <= config.max_len and len(tgt_ids) - 1 <= config.max_len
                if fits and _n_words(src_words) == len(words(ex.src)) and _n_words(tgt_words) == len(words(ex.tgt)):
                    chunk.append((ex, src_ids, tgt_ids, src_words, tgt_words))
                else:
                    skipped += 1
            if not chunk:
                continue
            src = _pad([c[1] for c in chunk], config.pad_id, device)  # (B, S)
            tgt = _pad([c[2][:-1] for c in chunk], config.pad_id, device)  # (B, T)
            cross = model(src, tgt, return_attention=True).attention.cross  # layers x (B, H, T, S)
            for b, (ex, src_ids, tgt_ids, src_words, tgt_words) in enumerate(chunk):
                mine = [w[b, :, : len(tgt_ids) - 1, : len(src_ids)] for w in cross]  # layers x (H, T, S)
                _score_heads(mine, src_words, tgt_words, ex.links, heads, means, ex.possible)
            sentences += len(chunk)
    finally:
        model.train(was_training)
    return _result(heads, means, sentences, skipped)


def _n_words(index: Sequence[int | None]) -> int:
    return 1 + max((w for w in index if w is not None), default=-1)

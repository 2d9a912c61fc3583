"""One chunk of a split's table (`transformer.explain.dataset`): each sentence's row (translation and scores) and
the arrays the slices and the projector read (head statistics' sums, alignment counts per lens, token states).

A computation can be asked to stop (a `threading.Event`: a user's Stop, a server shutting down): it is checked
between the translator's batches and between sentences, and a chunk that stops returns the sentences it finished,
so that a caller waits at most one batch's translation or one sentence's lenses before it can exit.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import sacrebleu
import torch
from torch import Tensor

from transformer.data.corpora.base import Pair
from transformer.data.words import words
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain.alignment import AlignedExample, argmax_links, count_links, piece_words, word_attention
from transformer.explain.lenses.maps import HEADLESS, LENSES
from transformer.explain.lenses.trace import trace
from transformer.explain.statistics import STATISTICS, map_statistics

FAMILIES = ("enc_self", "dec_self", "cross")
SIDES = ("encoder", "decoder")


class _Stopped(Exception):
    """Raised from the translator's progress callback to leave a batch translation that was asked to stop."""


def _pad(rows: list[list[int]], pad_id: int, device: torch.device) -> Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long, device=device)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def _counts(cross: Sequence[Tensor], src_words, tgt_words, example: AlignedExample) -> Tensor:
    """(L, H', 4) link counts (predicted, sure, hit sure, hit possible) of every layer and head of one lens."""
    layers = []
    for weights in cross:  # (H', T, S)
        per_head = word_attention(weights.float().cpu(), tgt_words, src_words)  # (H', Wt, Ws)
        layers.append([list(vars(count_links(argmax_links(h), example.links, example.possible)).values())
                       for h in per_head])
    return torch.tensor(layers, dtype=torch.int32)


def _translate(translator: Translator, sources: list[str], settings: SearchSettings, stop: threading.Event | None):
    """The batch's translations, or None when stop was set before the last of the translator's batches."""
    def check(_done: int, _total: int) -> None:
        if stop is not None and stop.is_set():
            raise _Stopped

    try:
        check(0, len(sources))
        return translator.translate_batch(sources, settings, progress=check)
    except _Stopped:
        return None


@torch.inference_mode()
def chunk_rows(translator: Translator, pairs: Sequence[Pair], gold: Sequence[AlignedExample | None], start: int,
               lenses: Sequence[str], settings: SearchSettings, stop: threading.Event | None = None
               ) -> tuple[list[dict], dict[str, Tensor]]:
    """Rows and arrays of the split's sentences start, start + 1, ... (pairs and their gold links); fewer rows
    (the first ones, maybe none) when stop is set meanwhile."""
    model, tokenizer = translator.model, translator.tokenizer
    config, device = model.config, translator.device
    translations = _translate(translator, [s for s, _ in pairs], settings, stop)
    if translations is None:
        return [], {}
    src_ids = [t.source_ids for t in translations]
    ref_ids = [tokenizer.encode_target(r)[: config.max_len + 1] for _, r in pairs]
    src = _pad(src_ids, config.pad_id, device)  # (B, S)
    enc = model.encode(src, return_attention=True)
    dec = model.decode(_pad([r[:-1] for r in ref_ids], config.pad_id, device), enc.memory, src,
                       return_attention=True)  # teacher-forced on the reference, as head_statistics
    outputs = [t.token_ids[: config.max_len] for t in translations]
    first = translator.specials.start  # the decoder's first input (<s>, or pad for Marian)
    dec_states = model.decoder_states(_pad([[first, *o[:-1]] for o in outputs], config.pad_id, device),
                                      enc.memory, src)  # (B, T, D): teacher-forced on the translation
    rows, stats, aer, tokens = [], {f: [] for f in FAMILIES}, {lens: [] for lens in lenses}, {s: [] for s in SIDES}
    for b, ((source, reference), translation) in enumerate(zip(pairs, translations)):
        if stop is not None and stop.is_set():
            break
        S, T = len(src_ids[b]), len(ref_ids[b]) - 1
        bleu = sacrebleu.sentence_bleu(translation.text, [reference])
        rows.append({"source": source, "reference": reference, "translation": translation.text,
                     "chrf": sacrebleu.sentence_chrf(translation.text, [reference]).score, "bleu": bleu.score,
                     "length_ratio": bleu.sys_len / max(bleu.ref_len, 1),
                     "mean_prob": float(np.mean(translation.token_probs)) if translation.token_probs else 0.0,
                     "src_pieces": translation.source_pieces, "tgt_pieces": translation.target_pieces})
        src_pieces, ref_pieces = tokenizer.source_pieces(src_ids[b]), tokenizer.target_pieces(ref_ids[b][:-1])
        maps = {"enc_self": (enc.attention, S, S, src_pieces), "dec_self": (dec.self_attention, T, T, ref_pieces),
                "cross": (dec.cross_attention, T, S, src_pieces)}
        for family, (layers, rows_n, cols_n, keys) in maps.items():
            sums, counts = [], []
            for weights in layers:
                per_row = map_statistics(weights[b, :, :rows_n, :cols_n].cpu(), keys, family=family)
                sums.append(torch.stack([per_row[s].nan_to_num(0.0).sum(-1) for s in STATISTICS]))  # (stats, H)
                counts.append(torch.stack([(~per_row[s].isnan()).sum(-1).double() for s in STATISTICS]))
            stats[family].append(torch.stack([torch.stack(sums, 1), torch.stack(counts, 1)]))  # (2, stats, L, H)
        example = gold[b]
        usable = None
        if example is not None and lenses:
            src_words = piece_words(src_pieces)
            tgt_words = piece_words(tokenizer.target_pieces(ref_ids[b][1:]))  # row t emitted ref_ids[t + 1]
            if _n(src_words) == len(words(source)) and _n(tgt_words) == len(words(reference)):
                usable = src_words, tgt_words
        for lens in lenses:
            if usable is None:
                aer[lens].append(None)
            elif lens == "raw":  # the pass above already has them
                aer[lens].append(_counts([w[b, :, :T, :S] for w in dec.cross_attention], *usable, example))
            else:
                cross = LENSES[lens](model, trace(model, src_ids[b], ref_ids[b][1:], specials=tokenizer.specials)).cross
                aer[lens].append(_counts(cross, *usable, example))
        for side, states, length in (("encoder", enc.memory, S), ("decoder", dec_states, len(outputs[b]))):
            tokens[side].append(states[b, :length].float().cpu())
    if not rows:
        return [], {}
    arrays = {f"sentence.stats.{f}": torch.stack(v).float() for f, v in stats.items()}
    for lens, per_sentence in aer.items():
        shape = next((a.shape for a in per_sentence if a is not None), None)
        if shape is None:
            shape = _lens_shape(model, lens)
        arrays[f"sentence.aer.{lens}"] = torch.stack([a if a is not None else torch.full(shape, -1, dtype=torch.int32)
                                                      for a in per_sentence])
    for side, states in tokens.items():
        arrays[f"tokens.{side}.states"] = torch.cat(states)
        arrays[f"tokens.{side}.sentence"] = torch.cat([torch.full((len(s),), start + i, dtype=torch.int32)
                                                       for i, s in enumerate(states)])
        arrays[f"tokens.{side}.position"] = torch.cat([torch.arange(len(s), dtype=torch.int32) for s in states])
    return rows, arrays


def _n(index: Sequence[int | None]) -> int:
    return 1 + max((w for w in index if w is not None), default=-1)


def _lens_shape(model, lens: str) -> tuple[int, int, int]:
    return model.config.n_decoder_layers, 1 if lens in HEADLESS else model.config.n_heads, 4

"""A split as a table: every sentence's translation and scores, to see where a model fails across a set before
opening one sentence (after LIT, Tenney et al., "The Language Interpretability Tool", EMNLP 2020 demos).

    split = model_split(translator.checkpoint.metadata, "test", limit=500)   # or teaching_split, tsv_split
    result = dataset_table(translator, split, cache_dir=Path("~/.cache/attention-explorer").expanduser())
    result.table          # pandas: source, reference, translation, chrf, bleu, length_ratio, mean_prob, ...
    result.corpus_scores  # corpus BLEU and chrF as `transformer-evaluate` computes them (same function)

Per sentence: the greedy translation, sentence-level chrF and BLEU (sacreBLEU; BLEU with effective order, as
sentence BLEU must), the length ratio BLEU's brevity penalty reads (hypothesis / reference tokens), the mean
probability of the output tokens and, where the corpus has gold links (the teaching corpus), exact match, AER and
the grammar's constructions. Kept for the slices (`dataset_slices`): each sentence's head statistics' sums
(`statistics.map_statistics`, teacher-forced on the reference, as `head_statistics`), its alignment counts per
lens, layer and head (`alignment`, `lenses`), and its tokens' final encoder and decoder states (the projector).

Bounded: at most MAX_SENTENCES sentences, and `max_seconds` after which it stops with a note; stoppable: a `stop`
event, checked between sentences (`dataset_rows`), ends it early with the rows done; resumable: with a cache folder
the rows are saved after every chunk (`dataset_cache`, atomically) and a later call goes on from there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from torch import Tensor

from transformer.data.corpora.base import CorpusError, Pair, normalize_text
from transformer.data.spec import CorpusSpec
from transformer.data.words import words
from transformer.decoding.evaluate import corpus_scores, split_groups
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain.alignment import AlignedExample
from transformer.explain.dataset_cache import (
    CachedRows,
    DatasetCacheError,
    cache_path,
    concatenate,
    read_cache,
    write_cache,
)
from transformer.explain.dataset_rows import chunk_rows
from transformer.explain.lenses.maps import check_lens

log = logging.getLogger(__name__)

MAX_SENTENCES = 2000  # a split longer than this is refused: cut it with `limit`
CHUNK = 50  # sentences between two cache writes (and progress calls)
SPLITS = ("dev", "test")
LENGTH_EDGES = (5, 10, 15, 20, 30, 50)  # source words: the buckets 1-5, 6-10, ..., 51+


class DatasetError(ValueError):
    """A split cannot be tabulated (a bad TSV, an unknown split, too many sentences); the message says why."""


@dataclass(frozen=True)
class Split:
    """The sentences to tabulate, and what the corpus knows about them."""

    description: str
    key: str  # what the cache keys on: "model:test", "teaching:dev:2", "tsv:<digest>"
    pairs: tuple[Pair, ...]
    gold: tuple[AlignedExample | None, ...]  # gold links where the corpus has them
    constructions: tuple[tuple[str, ...], ...] | None  # the teaching grammar's, per sentence; None elsewhere
    note: str = ""  # e.g. "the first 500 of 1,234 sentences"

    @property
    def has_gold(self) -> bool:
        return any(g is not None for g in self.gold)


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise DatasetError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return split


def _check_limit(limit: int | None) -> int:
    if limit is None:
        return MAX_SENTENCES
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SENTENCES:
        raise DatasetError(f"limit must be a whole number from 1 to {MAX_SENTENCES}, got {limit!r}")
    return limit


def _build(description: str, key: str, pairs: Sequence[Pair], corpus_links: dict, possible: dict,
           teaching: bool, total: int, limit: int) -> Split:
    gold = tuple(AlignedExample(s, t, corpus_links[(s, t)], possible.get((s, t), frozenset()))
                 if (s, t) in corpus_links else None for s, t in pairs)
    kinds = None
    if teaching:
        from transformer.data.corpora.teaching.constructions import constructions
        from transformer.data.corpora.teaching.parser import parse

        kinds = tuple(tuple(sorted(constructions(c))) if (c := parse(s)) is not None else () for s, _ in pairs)
    note = f"the first {limit:,} of {total:,} sentences" if total > limit else ""
    return Split(description, key, tuple(pairs), gold, kinds, note)


def model_split(metadata: dict, split: str = "test", *, limit: int | None = None) -> Split:
    """The dev or test split of the corpus the model was trained on, as `transformer-evaluate` reads it (a mix:
    each part's split, one after the other; `limit` the first N of each part, as its --limit)."""
    _check_split(split)
    limit = _check_limit(limit)
    if not isinstance(metadata.get("corpus"), dict):
        raise DatasetError("the model's metadata.json does not say which corpus it was trained on: pick the "
                           "teaching corpus or upload a TSV")
    try:
        spec = CorpusSpec.from_dict(metadata["corpus"])
        corpus, groups = split_groups(spec, split)
    except (CorpusError, ValueError, OSError) as e:
        raise DatasetError(f"the model's corpus cannot be loaded here: {e}") from e
    pairs = [pair for group in groups for pair in group[:limit]]
    total = sum(len(group) for group in groups)
    if len(pairs) > MAX_SENTENCES:
        raise DatasetError(f"{len(pairs):,} sentences are more than {MAX_SENTENCES:,}: set a smaller limit")
    links, possible = dict(corpus.alignments), dict(corpus.possible_alignments)
    for part in corpus.parts:
        links.update(part.alignments)
        possible.update(part.possible_alignments)
    teaching = spec.kind == "teaching" or any(p.spec.kind == "teaching" for p in spec.parts)
    return _build(f"{split} split of {corpus.description}", f"model:{split}", pairs, links, possible, teaching,
                  total, len(pairs))  # a mix: the first `limit` of each part


def teaching_split(split: str = "test", *, limit: int | None = None, grammar: int | None = None) -> Split:
    """The teaching corpus's dev or test split (seed 0), with gold links and constructions."""
    from transformer.data.load import load_teaching

    _check_split(split)
    limit = _check_limit(limit)
    corpus = load_teaching(0, grammar, train_pairs=1)
    pairs = corpus.split(split)
    return _build(f"{split} split of {corpus.description}", f"teaching:{split}:{grammar}", pairs[:limit],
                  corpus.alignments, corpus.possible_alignments, True, len(pairs), min(limit, len(pairs)))


def read_tsv(text: str) -> list[Pair]:
    """`source<TAB>reference` lines (a third column is ignored, blank lines skipped), normalised as every corpus
    loader does; DatasetError naming the first bad line."""
    pairs = []
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3) or not fields[0].strip() or not fields[1].strip():
            raise DatasetError(f"line {number} is not `source<TAB>reference` (it has {len(fields)} tab-separated "
                               "column(s), or an empty one)")
        pairs.append((normalize_text(fields[0]), normalize_text(fields[1])))
    if not pairs:
        raise DatasetError("the TSV has no sentence pair")
    return pairs


def tsv_split(text: str, name: str = "uploaded TSV", *, limit: int | None = None) -> Split:
    """Pairs from a TSV's text (see read_tsv); gold links and constructions when they are teaching pairs."""
    import hashlib

    limit = _check_limit(limit)
    pairs = read_tsv(text)
    digest = hashlib.blake2s("\n".join(f"{s}\t{t}" for s, t in pairs).encode(), digest_size=10).hexdigest()
    return _build(name, f"tsv:{digest}", pairs[:limit], {}, {}, False, len(pairs), min(limit, len(pairs)))


# ----------------------------------------------------------------------------- computing the rows


@dataclass(frozen=True)
class DatasetResult:
    """A split's table and what the slices and the projector read (`dataset_slices`)."""

    split: Split
    table: pd.DataFrame  # one row per sentence done, in the split's order
    arrays: dict[str, Tensor]  # "sentence.*" (N, ...) per sentence; "tokens.<side>.*" per token
    lenses: tuple[str, ...]
    pieces: dict[str, list[list[str]]]  # side -> each sentence's source pieces (encoder) or output pieces (decoder)
    complete: bool  # False: stopped at the time cap or when asked (the rows done are kept)
    notes: tuple[str, ...]  # what the user should know: a cap, a stop, a cache file that was unusable

    @property
    def corpus_scores(self) -> dict:
        """Corpus BLEU and chrF over the rows done, with `transformer-evaluate`'s function."""
        return corpus_scores(list(self.table["translation"]), list(self.table["reference"]))


def aer(counts: Tensor) -> Tensor:
    """AER (Och and Ney, 2003) from summed link counts (..., 4) -> (...): 1 - (|A∩S| + |A∩P|) / (|A| + |S|);
    NaN where nothing was counted."""
    counts = counts.double()
    total = counts[..., 0] + counts[..., 1]
    return torch.where(total > 0, 1.0 - (counts[..., 2] + counts[..., 3]) / total.clamp(min=1), torch.nan)


def scored(counts: Tensor) -> Tensor:
    """Which sentences have alignment counts: (N, L, H, 4) -> (N,) (the others are -1: no usable gold links)."""
    return (counts >= 0).all(-1).all(-1).all(-1)


def best_head(counts: Tensor) -> tuple[int, int, float]:
    """(layer, head, AER) of the head with the lowest AER over the sentences of counts (N, L, H, 4)."""
    layers_heads = aer(counts[scored(counts)].sum(0)).nan_to_num(2.0)  # (L, H)
    flat = int(layers_heads.argmin())
    layer, head = divmod(flat, layers_heads.size(1))
    return layer, head, float(layers_heads[layer, head])


def length_bucket(n_words: int) -> str:
    """"1-5", "6-10", ..., "51+": the source's words in LENGTH_EDGES' buckets."""
    low = 1
    for edge in LENGTH_EDGES:
        if n_words <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def build_table(split: Split, rows: list[dict], arrays: dict[str, Tensor], lenses: Sequence[str]) -> pd.DataFrame:
    """The rows as a DataFrame, with the columns that need the whole split (AER: the lens's best head over it)."""
    table = pd.DataFrame([{k: v for k, v in r.items() if k not in ("src_pieces", "tgt_pieces")} for r in rows],
                         columns=["source", "reference", "translation", "chrf", "bleu", "length_ratio", "mean_prob"])
    table.insert(0, "sentence", range(len(rows)))
    n_words = [len(words(s)) for s in table["source"]]
    table["src_words"] = n_words
    table["length_bucket"] = [length_bucket(n) for n in n_words]
    if split.constructions is not None:
        table["constructions"] = [", ".join(c) for c in split.constructions[: len(rows)]]
    if split.has_gold:
        table["exact"] = table["translation"] == table["reference"]
        if lenses and len(rows):
            counts = arrays[f"sentence.aer.{lenses[0]}"]
            layer, head, _ = best_head(counts)
            per_sentence = aer(counts[:, layer, head]) * 100.0
            table["aer"] = torch.where(scored(counts), per_sentence, torch.nan).numpy()
    return table


def checkpoint_key(translator: Translator) -> dict:
    """What identifies the model in a cache key: its folder and its weights' time stamp."""
    path = Path(translator.checkpoint.path).resolve()
    weights = next(path.glob("*.safetensors"), None)
    return {"checkpoint": str(path), "stamp": weights.stat().st_mtime_ns if weights else 0}


def dataset_table(translator: Translator, split: Split, *, lenses: Sequence[str] = ("raw",),
                  cache_dir: str | Path | None = None, max_seconds: float | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  stop: threading.Event | None = None) -> DatasetResult:
    """Translate and score every sentence of split (greedy), chunk by chunk; see the module's docstring. Once stop
    is set it returns within one sentence (or one of the translator's batches) with the rows done, cached."""
    lenses = tuple(dict.fromkeys(lenses))
    for lens in lenses:
        check_lens(lens)
    if max_seconds is not None and not max_seconds > 0:
        raise DatasetError(f"max_seconds must be positive, got {max_seconds!r}")
    if translator.model.training:
        raise DatasetError("tabulate the model in eval mode (dropout off): call model.eval() first")
    key = {**checkpoint_key(translator), "split": split.key, "sentences": len(split.pairs), "lenses": list(lenses)}
    path = None if cache_dir is None else cache_path(Path(cache_dir), key)
    rows, arrays, notes = [], {}, [split.note] if split.note else []
    if path is not None:
        try:
            cached = read_cache(path, key)
        except DatasetCacheError as e:
            notes.append(f"The cache file was unusable and is recomputed: {e}")
            cached = None
        if cached is not None:
            rows, arrays = cached.rows, cached.arrays
    settings, started, total = SearchSettings(beam_size=1), time.perf_counter(), len(split.pairs)
    if progress is not None:
        progress(len(rows), total)
    cached_note = " (The rows so far are cached.)" if path else ""
    while len(rows) < total:
        if max_seconds is not None and time.perf_counter() - started > max_seconds:
            notes.append(f"Stopped at the {max_seconds:g} s cap after {len(rows):,} of {total:,} sentences; "
                         "run it again to go on from there." + cached_note)
            break
        if stop is not None and stop.is_set():
            notes.append(f"Stopped on request after {len(rows):,} of {total:,} sentences; run it again to go on "
                         "from there." + cached_note)
            break
        end = min(len(rows) + CHUNK, total)
        new_rows, new_arrays = chunk_rows(translator, split.pairs[len(rows) : end], split.gold[len(rows) : end],
                                          len(rows), lenses, settings, stop)
        if not new_rows:  # stopped before its first sentence was done
            continue
        rows, arrays = rows + new_rows, concatenate(arrays, new_arrays)
        if path is not None:
            write_cache(path, CachedRows(key, rows, arrays))
        if progress is not None:
            progress(len(rows), total)
        log.info("tabulated %d of %d sentences", len(rows), total)
    table = build_table(split, rows, arrays, lenses)
    pieces = {"encoder": [r["src_pieces"] for r in rows], "decoder": [r["tgt_pieces"] for r in rows]}
    return DatasetResult(split, table, arrays, lenses, pieces, len(rows) == total, tuple(notes))

"""`load_corpus(spec)`: one dispatch over the corpus kinds, then the length filter and optional dedup.

Every loader returns a `ParallelCorpus` of cleaned (source, target) sentence pairs already split into
train/dev/test. `load_corpus(CorpusSpec(kind="bible"))` (en 'k' -> fr 'l', max_words=100) gives
`BIBLE_EN_FR_COUNTS` (transformer.data.corpora.bible).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from transformer.data.corpora.base import SPLITS, CorpusError, Pair, ParallelCorpus
from transformer.data.corpora.bible import load_bible
from transformer.data.corpora.hf import load_hf
from transformer.data.corpora.mix import mix_corpora
from transformer.data.corpora.tsv import load_tsv
from transformer.data.spec import CorpusSpec

log = logging.getLogger(__name__)


def load_corpus(spec: CorpusSpec) -> ParallelCorpus:
    if spec.kind == "mix":  # each part is filtered by its own spec
        return mix_corpora([load_corpus(part.spec) for part in spec.parts], [part.weight for part in spec.parts],
                           spec.seed)
    if spec.kind == "bible":
        corpus = load_bible(spec.src, spec.tgt, spec.src_translation, spec.tgt_translation)
    elif spec.kind == "teaching":
        corpus = load_teaching(spec.seed, spec.grammar, spec.train_pairs)
    elif spec.kind == "tsv":
        corpus = load_tsv(spec.path, spec.src, spec.tgt, spec.dev_fraction, spec.test_fraction, spec.seed)
    elif spec.kind == "debian":
        corpus = load_debian(spec.path, spec.src, spec.tgt)
    else:
        corpus = load_hf(spec)
    return filter_corpus(corpus, spec.max_words, spec.dedup)


def filter_corpus(corpus: ParallelCorpus, max_words: int | None, dedup: bool) -> ParallelCorpus:
    def keep(pair: Pair) -> bool:
        src, tgt = pair
        if not src or not tgt:
            return False
        return max_words is None or max(len(src.split()), len(tgt.split())) <= max_words

    splits = {name: [p for p in corpus.split(name) if keep(p)] for name in SPLITS}
    if dedup:
        splits = {name: list(dict.fromkeys(pairs)) for name, pairs in splits.items()}
        held_out = set(splits["dev"]) | set(splits["test"])
        splits["train"] = [p for p in splits["train"] if p not in held_out]
    if not splits["train"]:
        raise CorpusError(f"empty corpus after filtering ({corpus.description}, max_words={max_words})")
    dropped = sum(len(corpus.split(n)) - len(splits[n]) for n in SPLITS)
    log.info("%s: dropped %d pairs; %s", corpus.description, dropped,
             ", ".join(f"{n}={len(splits[n])}" for n in SPLITS))
    return dataclasses.replace(corpus, **splits)


def load_teaching(seed: int = 0, grammar: int | None = None, train_pairs: int | None = None) -> ParallelCorpus:
    """The generated English -> French corpus of everyday sentences, with gold word alignments (sure, and
    possible inside idioms); `grammar` 1 is the first teaching model's corpus, None the latest; `train_pairs`
    the train split's size (None: the grammar's default)."""
    from transformer.data.corpora.teaching import GRAMMAR, build_teaching_corpus

    grammar = GRAMMAR if grammar is None else grammar
    generated = build_teaching_corpus(seed, grammar, train_pairs)
    pairs = [p for name in SPLITS for p in getattr(generated, name)]
    splits = {name: [(p.src, p.tgt) for p in getattr(generated, name)] for name in SPLITS}
    grammar_note = "" if grammar == 1 else f", grammar {grammar}"
    return ParallelCorpus("en", "fr", **splits, alignments={(p.src, p.tgt): p.links for p in pairs},
                          possible_alignments={(p.src, p.tgt): p.possible for p in pairs if p.possible},
                          description=f"Teaching corpus (generated everyday sentences{grammar_note}, seed {seed}): "
                                      "en -> fr")


def load_debian(path: str | Path, src: str = "en", tgt: str = "fr") -> ParallelCorpus:
    """The Debian corpus file written by transformer.data.corpora.debian (its own train/dev/test column)."""
    from transformer.data.corpora.debian import read_debian_corpus  # only debian corpora need it

    return read_debian_corpus(Path(path), src=src, tgt=tgt)

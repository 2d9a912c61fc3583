"""What every corpus loader returns: a `ParallelCorpus` of cleaned pairs split into train/dev/test."""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass, field

Pair = tuple[str, str]
SPLITS = ("train", "dev", "test")


class CorpusError(ValueError):
    """A corpus could not be loaded or is unusable; the message says why."""


@dataclass(frozen=True)
class ParallelCorpus:
    src_lang: str
    tgt_lang: str
    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    description: str  # shown to the user, e.g. "Bible: King James 1611 (en) -> ..."
    # gold word links (source word, target word) per pair, where the corpus has them (the teaching corpus)
    alignments: dict[Pair, frozenset[tuple[int, int]]] = field(default_factory=dict)
    # possible-only links (Och and Ney's P minus S) per pair, where the corpus has them (the teaching corpus's idioms)
    possible_alignments: dict[Pair, frozenset[tuple[int, int]]] = field(default_factory=dict)
    # a mix's parts as loaded, in its spec's order: each keeps its full dev and test (transformer.data.corpora.mix)
    parts: tuple[ParallelCorpus, ...] = ()

    def split(self, name: str) -> list[Pair]:
        if name not in SPLITS:
            raise CorpusError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)}")
        return getattr(self, name)


def normalize_text(text: str) -> str:
    """NFC and single spaces: what every loader does to every sentence."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def split_sizes(n_pairs: int, dev_fraction: float, test_fraction: float) -> dict[str, int]:
    """How many of n_pairs pairs random_split puts in train, dev and test (a check before a corpus is used)."""
    n_dev, n_test = round(n_pairs * dev_fraction), round(n_pairs * test_fraction)
    return {"train": n_pairs - n_dev - n_test, "dev": n_dev, "test": n_test}


def random_split(pairs: list[Pair], dev_fraction: float, test_fraction: float,
                 seed: int) -> dict[str, list[Pair]]:
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    sizes = split_sizes(len(pairs), dev_fraction, test_fraction)
    n_dev, n_test = sizes["dev"], sizes["test"]
    chosen = {"dev": order[:n_dev], "test": order[n_dev:n_dev + n_test],
              "train": order[n_dev + n_test:]}
    # Sorted indices keep the file's order inside each split, which makes diffs readable.
    return {name: [pairs[i] for i in sorted(idx)] for name, idx in chosen.items()}

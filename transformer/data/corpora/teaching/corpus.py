"""A generated English -> French teaching corpus of everyday sentences, with gold word alignments.

Every pair comes from a typed frame (`frames.Clause`) realized into English, French and the links
between their words at once, so the links are the grammar's, not guessed. `align` parses any English sentence
of the grammar back into its frame. See docs/teaching-corpus.md for the lexicon, phenomena and link conventions.

    corpus = build_teaching_corpus(seed=0)   # train / dev / test, deterministic from the seed
    align("The old man went to the market.")  # AlignedPair(src, "Le vieil homme est allé au marché.", links)
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from transformer.data.corpora.teaching.frames import GRAMMAR, GRAMMARS, AlignedPair, Clause, NounPhrase
from transformer.data.corpora.teaching.lexicon import (
    ADJECTIVE,
    ADVERBS,
    DAYS,
    NOUN,
    NUMBER,
    OBJECT_PRONOUNS,
    POSSESSIVES,
    PREPOSITIONS,
    PRONOUNS,
    TIME,
    VERB,
    WH_WORDS,
)
from transformer.data.corpora.teaching.parser import parse
from transformer.data.corpora.teaching.realizer import realize
from transformer.data.corpora.teaching.sampler_constructions import ConstructionSampler
from transformer.data.corpora.teaching.sampler_core import CoreSampler, View
from transformer.data.corpora.teaching.syntax import valid
from transformer.data.words import format_links, parse_links, words

__all__ = ["GRAMMAR", "GRAMMARS", "TEACHING_SIZES", "AlignedPair", "TeachingCorpus", "align", "build_teaching_corpus",
           "format_links", "parse_links", "vocabulary"]

TEACHING_SIZES = {1: {"train": 25_000, "dev": 500, "test": 500}, 2: {"train": 40_000, "dev": 500, "test": 500}}
N_HELD_OUT = 60            # (adjective, noun) combinations kept out of train
HELD_OUT_SHARE = 0.4       # of dev and test sentences built around a held-out combination
MAX_WORDS = 15             # English words, punctuation excluded


@dataclass(frozen=True)
class TeachingCorpus:
    train: tuple[AlignedPair, ...]
    dev: tuple[AlignedPair, ...]
    test: tuple[AlignedPair, ...]
    held_out: frozenset[tuple[str, str]]    # English (adjective, noun) lemma combinations that never occur in train


def align(english: str) -> AlignedPair | None:
    """The French and gold links of an English sentence of the grammar, or None when it cannot be parsed."""
    clause = parse(english)
    return None if clause is None else realize(clause)


def vocabulary(grammar: int = GRAMMAR) -> dict[str, list[tuple[str, str]]]:
    """Category -> (English lemma, French lemma): the words the teaching grammar knows (grammar 1: the shipped
    model's 421 lemmas; grammar 2 adds the object pronouns and question words with its 1,500 lemmas)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for noun in NOUN.values():
        if noun.grammar <= grammar:
            groups.setdefault(noun.category, []).append((noun.en, noun.fr))
    for adj in ADJECTIVE.values():
        if adj.grammar <= grammar:
            groups.setdefault(adj.category, []).append((adj.en, adj.forms[0]))
    groups["verbs"] = [("be", "être")] + [(v.en, ("se " if v.reflexive else "") + v.fr) for v in VERB.values()
                                          if v.grammar <= grammar]
    groups["numbers"] = list(NUMBER.items())
    groups["days"] = [tuple(day.split()) for day in DAYS]
    groups["pronouns"] = [(en, fr) for en, (fr, _, _) in PRONOUNS.items()]
    if grammar >= 2:
        groups["object pronouns"] = [(en, f"{d}/{i}") if d != i else (en, d) for en, (d, i, *_) in
                                     OBJECT_PRONOUNS.items()]
        groups["question words"] = [(en, "qu'est-ce que" if fr == "qu'" else fr) for en, fr in WH_WORDS.items()]
        groups["frequency adverbs"] = [(en, "ne ... jamais" if en == "never" else fr) for en, fr in ADVERBS.items()]
    groups["possessives"] = [(en, "/".join(dict.fromkeys(forms))) for en, forms in POSSESSIVES.items()]
    groups["prepositions"] = list(PREPOSITIONS.items())
    groups["time"] = [(t.en, t.fr) for t in TIME.values() if not t.en.startswith("on ")]
    return groups


def _noun_phrases(np: NounPhrase | None) -> list[NounPhrase]:
    """A noun phrase and those inside it (its owner, its coordinated partner, the relative clause's)."""
    if np is None or np.det in ("pron", "rel", "wh", "it"):
        return []
    inner = [np]
    for part in (np.owner, np.also):
        inner += _noun_phrases(part)
    if np.rel is not None:
        inner += [q for part in (np.rel.subject, np.rel.obj) for q in _noun_phrases(part)]
    return inner


def combinations(c: Clause) -> set[tuple[str, str]]:
    """The (adjective, noun) lemma pairs a frame puts together, attributively or after "be"."""
    nps = [q for np in (c.subject, c.obj, c.to and c.to.np, c.place and c.place.np) for q in _noun_phrases(np)]
    found = {(a, np.head) for np in nps for a in np.adjs}
    if c.kind == "be_adj" and c.adj and c.subject.det not in ("pron", "wh"):
        found.add((c.adj, c.subject.head))
    return found


def _sample(view: View, rng: random.Random, banned: frozenset[tuple[str, str]],
            force: tuple[str, str] | None) -> AlignedPair:
    sampler = CoreSampler if view.grammar == 1 else ConstructionSampler
    for _ in range(1000):
        c = sampler(view, rng, banned, force).clause()
        found = combinations(c)
        if not valid(c) or found & banned or (force is not None and force not in found):
            continue
        pair = realize(c)
        if 3 <= sum(w[0].isalnum() for w in words(pair.src)) <= MAX_WORDS:
            return pair
    raise RuntimeError(f"no frame found for {force}")


@functools.lru_cache(maxsize=2)  # immutable, and 10-15 s to build: the app's pages and a trainer share one build
def build_teaching_corpus(seed: int = 0, grammar: int = GRAMMAR, train_pairs: int | None = None) -> TeachingCorpus:
    """Train, dev and test pairs, deterministic from `seed`. Dev and test share no English or French sentence
    with train (or each other); held-out (adjective, noun) combinations occur in dev and test only.
    `grammar` 1 is the corpus the first teaching model was trained on (its lexicon and constructions only).
    `train_pairs` (default: TEACHING_SIZES) sets the train split's size only: dev and test are drawn first, and a
    larger train split begins with the pairs of a smaller one."""
    if grammar not in GRAMMARS:
        raise ValueError(f"unknown teaching grammar {grammar}; expected one of {GRAMMARS}")
    view, sizes = View(grammar), TEACHING_SIZES[grammar]
    if train_pairs is not None:
        sizes = {**sizes, "train": train_pairs}
    rng = random.Random(seed)
    held = sorted(rng.sample(view.combinations(), N_HELD_OUT))
    held_out = frozenset(held)
    seen_src: set[str] = set()
    eval_tgt: set[str] = set()
    splits: dict[str, list[AlignedPair]] = {}
    for name in ("test", "dev"):
        pairs = splits[name] = []
        while len(pairs) < sizes[name]:
            force = rng.choice(held) if len(pairs) % 5 < round(5 * HELD_OUT_SHARE) else None
            pair = _sample(view, rng, frozenset(), force)
            if pair.src not in seen_src and pair.tgt not in eval_tgt:
                seen_src.add(pair.src)
                eval_tgt.add(pair.tgt)
                pairs.append(pair)
    train = splits["train"] = []
    while len(train) < sizes["train"]:
        pair = _sample(view, rng, held_out, None)
        if pair.src not in seen_src and pair.tgt not in eval_tgt:
            seen_src.add(pair.src)
            train.append(pair)
    return TeachingCorpus(tuple(train), tuple(splits["dev"]), tuple(splits["test"]), held_out)

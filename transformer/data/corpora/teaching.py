"""A generated English -> French teaching corpus of everyday sentences, with gold word alignments.

Every pair comes from a typed frame (`teaching_grammar.Clause`) realized into English, French and the links
between their words at once, so the links are the grammar's, not guessed. `align` parses any English sentence
of the grammar back into its frame. See docs/teaching-corpus.md for the lexicon, phenomena and link conventions.

    corpus = build_teaching_corpus(seed=0)   # train / dev / test, deterministic from the seed
    align("The old man went to the market.")  # AlignedPair(src, "Le vieil homme est allé au marché.", links)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from transformer.data.corpora.teaching_grammar import BE_TENSES, AlignedPair, Clause, NounPhrase, PrepPhrase, realize
from transformer.data.corpora.teaching_lexicon import (
    ADJECTIVE,
    DAYS,
    NOUN,
    NUMBER,
    PLACE_PREPOSITIONS,
    POSSESSIVES,
    PREPOSITIONS,
    PRONOUNS,
    TIME,
    VERB,
    Noun,
    selects,
)
from transformer.data.corpora.teaching_parser import parse
from transformer.data.corpora.teaching_syntax import valid
from transformer.data.words import format_links, parse_links, words

__all__ = ["TEACHING_SIZES", "AlignedPair", "TeachingCorpus", "align", "build_teaching_corpus", "format_links",
           "parse_links", "vocabulary"]

TEACHING_SIZES = {"train": 25_000, "dev": 500, "test": 500}
N_HELD_OUT = 60            # (adjective, noun) combinations kept out of train
HELD_OUT_SHARE = 0.4       # of dev and test sentences built around a held-out combination
MAX_WORDS = 15             # English words, punctuation excluded

_KINDS = {"trans": 40, "intr": 13, "motion": 12, "give": 10, "be_adj": 15, "be_place": 10}
_TENSES = {"present": 30, "progressive": 12, "past": 28, "future": 18, "can": 6, "want": 6}
_SUBJECT_DETS = {"the": 50, "a": 15, "poss": 15, "this": 8, "number": 7, "some": 5}
_OBJECT_DETS = {"the": 35, "a": 20, "poss": 12, "this": 5, "number": 5, "bare": 15, "some": 8}
_PREP_DETS = {"the": 60, "a": 15, "poss": 20, "this": 5}
_NUMBERS = list(NUMBER)[1:]  # "one" is drawn as a singular


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


def vocabulary() -> dict[str, list[tuple[str, str]]]:
    """Category -> (English lemma, French lemma): the words the teaching grammar knows."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for noun in NOUN.values():
        groups.setdefault(noun.category, []).append((noun.en, noun.fr))
    for adj in ADJECTIVE.values():
        groups.setdefault(adj.category, []).append((adj.en, adj.forms[0]))
    groups["verbs"] = [("be", "être")] + [(v.en, v.fr) for v in VERB.values()]
    groups["numbers"] = list(NUMBER.items())
    groups["days"] = [tuple(day.split()) for day in DAYS]
    groups["pronouns"] = [(en, fr) for en, (fr, _, _) in PRONOUNS.items()]
    groups["possessives"] = [(en, "/".join(dict.fromkeys(forms))) for en, forms in POSSESSIVES.items()]
    groups["prepositions"] = list(PREPOSITIONS.items())
    groups["time"] = [(t.en, t.fr) for t in TIME.values() if not t.en.startswith("on ")]
    return groups


def combinations(c: Clause) -> set[tuple[str, str]]:
    """The (adjective, noun) lemma pairs a frame puts together, attributively or after "be"."""
    nps = [np for np in (c.subject, c.obj, c.to and c.to.np, c.place and c.place.np) if np and not np.pronoun]
    found = {(a, np.head) for np in nps for a in np.adjs}
    if c.adj and not c.subject.pronoun:
        found.add((c.adj, c.subject.head))
    return found


def _pick(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), list(weights.values()))[0]


class _Sampler:
    """Random frames with sense restrictions: verbs get the subjects and objects they select, adjectives suit
    their nouns. `banned` combinations are never drawn; a `force`d one is used wherever its noun fits."""

    def __init__(self, rng: random.Random, banned: frozenset[tuple[str, str]], force: tuple[str, str] | None):
        self.rng, self.banned, self.force = rng, banned, force

    def nouns(self, selection: frozenset[str]) -> list[Noun]:
        return _pool(selection)

    def adjectives(self, noun: Noun, pre: bool | None = None) -> list[str]:
        suiting = _SUITING[noun.en, pre]
        return [a for a in suiting if (a, noun.en) not in self.banned] if self.banned else suiting

    def np(self, pool: list[Noun], role: str, generic: bool = False) -> NounPhrase:
        rng, forced = self.rng, None
        if self.force and any(n.en == self.force[1] for n in pool):
            forced, self.force = self.force, None
        noun = NOUN[forced[1]] if forced else rng.choice(pool)
        plural = not noun.mass and rng.random() < 0.3
        det = _pick(rng, {"subject": _SUBJECT_DETS, "object": _OBJECT_DETS, "prep": _PREP_DETS}[role])
        if generic and det in ("a", "number", "some"):
            det = "bare"
        if det in ("a", "number") and noun.mass:
            det = "the"
        if det == "a":
            plural = False
        elif det == "number":
            plural = rng.random() < 0.85
            det = rng.choice(_NUMBERS) if plural else "one"
        elif det == "poss":
            det = rng.choice(list(POSSESSIVES))
        elif det == "this":
            det = "these" if plural else "this"
        elif det in ("some", "bare"):
            plural = not noun.mass
            det = "" if det == "bare" else "some"
        if forced:
            adjs = (forced[0],)
        else:
            r = rng.random()
            pre, post = self.adjectives(noun, True), self.adjectives(noun, False)
            adjs = ()
            if r < 0.4 and pre + post:
                adjs = (rng.choice(pre + post),)
            elif r < 0.5 and pre and post:
                adjs = (rng.choice(pre), rng.choice(post))
        return NounPhrase(noun.en, det, plural, adjs)

    def subject(self, selection: frozenset[str], question: bool) -> NounPhrase:
        people = "people" in selection
        forced_here = self.force is not None and selects(selection, NOUN[self.force[1]])
        if people and self.rng.random() < 0.3 and not forced_here:
            return NounPhrase(self.rng.choice([p for p in PRONOUNS if not (question and p == "I")]), "pron")
        return self.np(self.nouns(selection), "subject")

    def place(self, furniture: bool) -> PrepPhrase:
        if furniture and self.rng.random() < 0.3:
            np = self.np(_FURNITURE, "prep")
            return PrepPhrase(self.rng.choice(["on", "under", *PLACE_PREPOSITIONS]), np)
        np = self.np(_PLACES, "prep")
        own = NOUN[np.head].locative[0]
        return PrepPhrase(own if self.rng.random() < 0.7 else self.rng.choice(PLACE_PREPOSITIONS), np)

    def clause(self) -> Clause:
        rng = self.rng
        kind = _pick(rng, _KINDS)
        negated = rng.random() < 0.25
        question = not negated and rng.random() < 0.2
        parts: dict = {}
        if kind.startswith("be"):
            verb, tense = "be", rng.choice(BE_TENSES)
            if kind == "be_adj":
                subject = self.subject(_ALL, question)
                suits = _PERSON_ADJECTIVES if subject.pronoun else self.adjectives(NOUN[subject.head])
                suits = [a for a in suits if a not in subject.adjs]
                parts["adj"] = rng.choice(suits) if suits else None
            else:
                subject = self.subject(_LOCATED, question)
                parts["place"] = self.place(furniture=True)
        else:
            v = VERB[rng.choice(_VERBS_OF[kind])]
            verb, tense = v.en, _pick(rng, _TENSES)
            subject = self.subject(v.subjects, question)
            if kind in ("trans", "give"):
                obj = self.np(self.nouns(v.objects), "object", generic="generic" in v.flags)
                parts["obj"] = replace(obj, det="any") if obj.det == "some" and (negated or question) else obj
            if kind == "give":
                parts["to"] = PrepPhrase("to", self.np(self.nouns(v.recipients), "prep"))
            if kind == "motion":
                parts["to"] = PrepPhrase("at" if "at" in v.flags else "to", self.np(_DESTINATIONS, "prep"))
            elif "place" in v.flags or rng.random() < 0.25:
                parts["place"] = self.place(furniture=kind == "intr")
            if tense in ("can", "want") and "stative" in v.flags:
                tense = "present"
        times = [t for t in TIME if tense in TIME[t].tenses]
        if rng.random() < 0.3:
            parts["time"] = rng.choice(times)
        return Clause(kind, subject, verb, tense, negated, question, **parts)


def _sample(rng: random.Random, banned: frozenset[tuple[str, str]], force: tuple[str, str] | None) -> AlignedPair:
    for _ in range(1000):
        c = _Sampler(rng, banned, force).clause()
        found = combinations(c)
        if not valid(c) or found & banned or (force is not None and force not in found):
            continue
        pair = realize(c)
        if 3 <= sum(w[0].isalnum() for w in words(pair.src)) <= MAX_WORDS:
            return pair
    raise RuntimeError(f"no frame found for {force}")


def build_teaching_corpus(seed: int = 0) -> TeachingCorpus:
    """Train, dev and test pairs, deterministic from `seed`. Dev and test share no English or French sentence
    with train (or each other); held-out (adjective, noun) combinations occur in dev and test only."""
    rng = random.Random(seed)
    combos = [(a, n) for n, noun in NOUN.items() for a in _suiting(noun)]
    held = sorted(rng.sample(combos, N_HELD_OUT))
    held_out = frozenset(held)
    seen_src: set[str] = set()
    eval_tgt: set[str] = set()
    splits: dict[str, list[AlignedPair]] = {}
    for name in ("test", "dev"):
        pairs = splits[name] = []
        while len(pairs) < TEACHING_SIZES[name]:
            force = rng.choice(held) if len(pairs) % 5 < round(5 * HELD_OUT_SHARE) else None
            pair = _sample(rng, frozenset(), force)
            if pair.src not in seen_src and pair.tgt not in eval_tgt:
                seen_src.add(pair.src)
                eval_tgt.add(pair.tgt)
                pairs.append(pair)
    train = splits["train"] = []
    while len(train) < TEACHING_SIZES["train"]:
        pair = _sample(rng, held_out, None)
        if pair.src not in seen_src and pair.tgt not in eval_tgt:
            seen_src.add(pair.src)
            train.append(pair)
    return TeachingCorpus(tuple(train), tuple(splits["dev"]), tuple(splits["test"]), held_out)


_POOLS: dict[frozenset[str], list[Noun]] = {}


def _pool(selection: frozenset[str]) -> list[Noun]:
    if selection not in _POOLS:
        _POOLS[selection] = [n for n in NOUN.values() if selects(selection, n)]
    return _POOLS[selection]


_SUITING = {(noun.en, pre): [a for a, adj in ADJECTIVE.items() if adj.suits(noun) and pre in (None, adj.pre)]
            for noun in NOUN.values() for pre in (None, True, False)}


def _suiting(noun: Noun) -> list[str]:
    return _SUITING[noun.en, None]


_ALL = frozenset(n.category for n in NOUN.values())
_LOCATED = frozenset({"people", "family", "animals", "objects", "clothes", "transport"})
_PLACES = [n for n in NOUN.values() if n.locative]
_DESTINATIONS = [n for n in _PLACES if "dest" in n.flags]
_FURNITURE = [n for n in NOUN.values() if "furn" in n.flags]
_PERSON_ADJECTIVES = [a for a, adj in ADJECTIVE.items() if "people" in adj.describes and not adj.pre]
_VERBS_OF = {kind: [v.en for v in VERB.values() if kind in v.kinds] for kind in ("trans", "intr", "motion", "give")}

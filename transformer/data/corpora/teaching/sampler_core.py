"""Random frames for the teaching corpus, with sense restrictions: verbs get the subjects and objects they
select, adjectives suit their nouns. `CoreSampler` draws grammar 1's core clauses (the first teaching model's
corpus, reproduced draw for draw over grammar 1's lexicon); `sampler_constructions.ConstructionSampler` draws
grammar 2's: these core clauses over the larger lexicon, plus its constructions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from transformer.data.corpora.teaching.frames import BE_TENSES, Clause, NounPhrase, PrepPhrase
from transformer.data.corpora.teaching.lexicon import (
    ADJECTIVE,
    NOUN,
    NUMBER,
    PLACE_PREPOSITIONS,
    POSSESSIVES,
    PRONOUNS,
    TIME,
    VERB,
    Adjective,
    Noun,
    Verb,
    selects,
)

_KINDS = {"trans": 40, "intr": 13, "motion": 12, "give": 10, "be_adj": 15, "be_place": 10}
_TENSES = {"present": 30, "progressive": 12, "past": 28, "future": 18, "can": 6, "want": 6}
_SUBJECT_DETS = {"the": 50, "a": 15, "poss": 15, "this": 8, "number": 7, "some": 5}
_OBJECT_DETS = {"the": 35, "a": 20, "poss": 12, "this": 5, "number": 5, "bare": 15, "some": 8}
_PREP_DETS = {"the": 60, "a": 15, "poss": 20, "this": 5}
_NUMBERS = list(NUMBER)[1:]  # "one" is drawn as a singular
_LOCATED = frozenset({"people", "family", "animals", "objects", "clothes", "transport"})


@dataclass
class View:
    """The lexicon of one grammar version, in the lexicon's order, with the pools the samplers draw from."""
    grammar: int
    nouns: dict[str, Noun] = field(init=False)
    adjectives: dict[str, Adjective] = field(init=False)
    verbs: dict[str, Verb] = field(init=False)

    def __post_init__(self) -> None:
        g = self.grammar
        self.nouns = {k: n for k, n in NOUN.items() if n.grammar <= g}
        self.adjectives = {k: a for k, a in ADJECTIVE.items() if a.grammar <= g}
        self.verbs = {k: v for k, v in VERB.items() if v.grammar <= g}
        self.suiting = {(noun.en, pre): [a for a, adj in self.adjectives.items() if adj.suits(noun)
                                         and pre in (None, adj.pre)]
                        for noun in self.nouns.values() for pre in (None, True, False)}
        self.all = frozenset(n.category for n in self.nouns.values())
        self.places = [n for n in self.nouns.values() if n.locative]
        self.destinations = [n for n in self.places if "dest" in n.flags]
        self.furniture = [n for n in self.nouns.values() if "furn" in n.flags]
        self.person_adjectives = [a for a, adj in self.adjectives.items() if "people" in adj.describes and not adj.pre]
        self.verbs_of = {kind: [v.en for v in self.verbs.values() if kind in v.kinds]
                         for kind in ("trans", "intr", "motion", "give", "refl")}
        self._pools: dict[frozenset[str], list[Noun]] = {}

    def pool(self, selection: frozenset[str]) -> list[Noun]:
        if selection not in self._pools:
            self._pools[selection] = [n for n in self.nouns.values() if selects(selection, n)]
        return self._pools[selection]

    def combinations(self) -> list[tuple[str, str]]:
        """Every (adjective, noun) lemma pair the adjective suits."""
        return [(a, n) for n in self.nouns for a in self.suiting[n, None]]


def pick(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), list(weights.values()))[0]


class CoreSampler:
    """Grammar 1's frames. `banned` combinations are never drawn; a `force`d one is used wherever its noun fits."""

    def __init__(self, view: View, rng: random.Random, banned: frozenset[tuple[str, str]],
                 force: tuple[str, str] | None):
        self.view, self.rng, self.banned, self.force = view, rng, banned, force

    def nouns(self, selection: frozenset[str]) -> list[Noun]:
        return self.view.pool(selection)

    def adjectives(self, noun: Noun, pre: bool | None = None) -> list[str]:
        suiting = self.view.suiting[noun.en, pre]
        return [a for a in suiting if (a, noun.en) not in self.banned] if self.banned else suiting

    def np(self, pool: list[Noun], role: str, generic: bool = False) -> NounPhrase:
        rng, forced = self.rng, None
        if self.force and any(n.en == self.force[1] for n in pool):
            forced, self.force = self.force, None
        noun = NOUN[forced[1]] if forced else rng.choice(pool)
        plural = not noun.mass and rng.random() < 0.3
        det = pick(rng, {"subject": _SUBJECT_DETS, "object": _OBJECT_DETS, "prep": _PREP_DETS}[role])
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
            np = self.np(self.view.furniture, "prep")
            return PrepPhrase(self.rng.choice(["on", "under", *PLACE_PREPOSITIONS]), np)
        np = self.np(self.view.places, "prep")
        own = NOUN[np.head].locative[0]
        return PrepPhrase(own if self.rng.random() < 0.7 else self.rng.choice(PLACE_PREPOSITIONS), np)

    def complements(self, v, kind: str, any_for_some: bool, place_share: float, furniture: bool) -> dict:
        """A verb's object, recipient or destination, and place (a `place` verb's, or one in `place_share` of
        the others), drawn in this order by both grammars; `any_for_some`: a negation or a question, where
        English says "any" for "some"."""
        parts = {}
        if kind in ("trans", "give"):
            obj = self.np(self.nouns(v.objects), "object", generic="generic" in v.flags)
            parts["obj"] = replace(obj, det="any") if obj.det == "some" and any_for_some else obj
        if kind == "give":
            parts["to"] = PrepPhrase("to", self.np(self.nouns(v.recipients), "prep"))
        if kind == "motion":
            parts["to"] = PrepPhrase("at" if "at" in v.flags else "to", self.np(self.view.destinations, "prep"))
        elif "place" in v.flags or self.rng.random() < place_share:
            parts["place"] = self.place(furniture=furniture)
        return parts

    def clause(self) -> Clause:
        rng = self.rng
        kind = pick(rng, _KINDS)
        negated = rng.random() < 0.25
        question = not negated and rng.random() < 0.2
        parts: dict = {}
        if kind.startswith("be"):
            verb, tense = "be", rng.choice(BE_TENSES)
            if kind == "be_adj":
                subject = self.subject(self.view.all, question)
                suits = self.view.person_adjectives if subject.pronoun else self.adjectives(NOUN[subject.head])
                suits = [a for a in suits if a not in subject.adjs]
                parts["adj"] = rng.choice(suits) if suits else None
            else:
                subject = self.subject(_LOCATED, question)
                parts["place"] = self.place(furniture=True)
        else:
            v = VERB[rng.choice(self.view.verbs_of[kind])]
            verb, tense = v.en, pick(rng, _TENSES)
            subject = self.subject(v.subjects, question)
            parts.update(self.complements(v, kind, negated or question, place_share=0.25, furniture=kind == "intr"))
            if tense in ("can", "want") and "stative" in v.flags:
                tense = "present"
        times = [t for t in TIME if tense in TIME[t].tenses]
        if rng.random() < 0.3:
            parts["time"] = rng.choice(times)
        return Clause(kind, subject, verb, tense, negated, question, **parts)

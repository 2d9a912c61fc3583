"""Which of the teaching grammar's constructions a frame uses, to score a model construction by construction.

    constructions(parse("She doesn't see him."))  # {"contraction", "object pronoun", "negation"}
"""

from __future__ import annotations

from dataclasses import replace

from transformer.data.corpora.teaching.frames import Clause, NounPhrase
from transformer.data.corpora.teaching.realizer import realize

CONSTRUCTIONS = ("plain", "negation", "yes/no question", "contraction", "object pronoun", "question word",
                 "imperative", "frequency adverb", "coordination", "avoir idiom", "age", "il y a", "weather",
                 "aller + infinitive", "venir de", "reflexive", "possessive 's", "compound", "relative clause")


def _noun_phrases(c: Clause) -> list[NounPhrase]:
    found = []
    for np in (c.subject, c.obj, c.to and c.to.np, c.place and c.place.np):
        while np is not None:
            found.append(np)
            if np.owner is not None:
                found.append(np.owner)
            np = np.also
    return found


def constructions(c: Clause) -> set[str]:
    """The constructions of CONSTRUCTIONS that a frame uses ("plain" when none of the others)."""
    nps = _noun_phrases(c)
    found = {
        "negation": c.negated,
        "yes/no question": c.question and c.wh is None,
        "contraction": bool(c.contract and _effective(c)),
        "object pronoun": (c.obj is not None and c.obj.pronoun) or (c.to is not None and c.to.np.pronoun),
        "question word": c.wh is not None,
        "imperative": c.imperative is not None,
        "frequency adverb": c.adverb is not None,
        "coordination": any(np.also is not None for np in nps),
        "avoir idiom": c.kind == "idiom",
        "age": c.kind == "age",
        "il y a": c.kind == "there",
        "weather": c.kind == "weather",
        "aller + infinitive": c.tense == "going",
        "venir de": c.tense == "just",
        "reflexive": c.kind == "refl",
        "possessive 's": any(np.owner is not None for np in nps),
        "compound": any(np.modifier is not None for np in nps),
        "relative clause": any(np.rel is not None for np in nps),
    }
    labels = {name for name, on in found.items() if on}
    return labels or {"plain"}


def _effective(c: Clause) -> set[str]:
    """The contraction flags that change the English (a flag with nothing to contract is not a contraction)."""
    plain = realize(replace(c, contract=frozenset())).src
    return {flag for flag in c.contract if realize(replace(c, contract=frozenset({flag}))).src != plain}

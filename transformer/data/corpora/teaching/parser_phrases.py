"""Verb groups and noun phrases for the teaching parser: verb forms, tenses and adverbs after the subject;
determiners, adjectives, compounds ("a kitchen table"), owners ("the boy's dog"), coordination ("the cat and the
dog") and relative clauses ("the man who sleeps", "the cake that she ate"). Loose, like the parser: the
realizer's round trip checks every candidate."""

from __future__ import annotations

from collections.abc import Iterator

from transformer.data.corpora.teaching.frames import Clause, NounPhrase
from transformer.data.corpora.teaching.lexicon import (
    ADJECTIVE,
    ADVERBS,
    COMPOUNDS,
    NOUN,
    NUMBER,
    OBJECT_PRONOUNS,
    POSSESSIVES,
    PRONOUNS,
    RELATIVE_WORDS,
    VERB,
)

_NOUNS: dict[tuple[str, ...], list[tuple[str, bool]]] = {}
for _noun in NOUN.values():
    for _form, _plural in ((_noun.en, False), (_noun.en_plural, True)):
        _NOUNS.setdefault(tuple(_form.lower().split()), []).append((_noun.en, _plural))
_MAX_NOUN = max(len(key) for key in _NOUNS)
_DETERMINERS = {w: w for w in ("the", "a", "some", "any", "this", "these", *POSSESSIVES, *NUMBER)} | {"an": "a"}
_PRONOUNS = {p.lower(): p for p in PRONOUNS}
_MODIFIERS = {m for m, _ in COMPOUNDS}
_VERB_FORMS: dict[str, list[tuple[str, str]]] = {}
for _verb in VERB.values():
    for _kind in ("base", "s3", "past", "ing", "pp"):
        _VERB_FORMS.setdefault(getattr(_verb, _kind), []).append((_verb.en, _kind))


BE_WILL = ("am", "is", "are", "was", "were", "will")
VerbGroup = tuple[str, str, bool, int, str | None]  # (verb or "be", tense, negated, index after it, adverb)


def at(t: list[str], i: int) -> str:
    return t[i] if i < len(t) else ""


def forms(t: list[str], i: int, kind: str) -> Iterator[tuple[str, int]]:
    """Verbs whose `kind` form ("base", "s3", "past", "ing", "pp") is at i, with the index after their particle."""
    for lemma, k in _VERB_FORMS.get(at(t, i), ()):
        particle = (VERB[lemma].particle or "").split()
        if k == kind and t[i + 1:i + 1 + len(particle)] == particle:
            yield lemma, i + 1 + len(particle)


def after_be(aux: str, t: list[str], j: int, neg: bool, statement: bool) -> Iterator[VerbGroup]:
    """Verb groups after a form of "be" or "will" at j: statements (aux before j) and questions alike."""
    adverbs = [(None, j)] + ([(t[j], j + 1)] if statement and at(t, j) in ADVERBS else [])
    if aux in ("am", "is", "are"):
        yield from ((lemma, "progressive", neg, k, None) for lemma, k in forms(t, j, "ing"))
        if t[j:j + 2] == ["going", "to"]:
            yield from ((lemma, "going", neg, k, None) for lemma, k in forms(t, j + 2, "base"))
        yield from (("be", "present", neg, k, adv) for adv, k in adverbs)
    elif aux in ("was", "were"):
        yield from (("be", "past", neg, k, adv) for adv, k in adverbs)
    else:
        for adv, k in adverbs:
            if at(t, k) == "be":
                yield "be", "future", neg, k + 1, adv
            yield from ((lemma, "future", neg, m, adv) for lemma, m in forms(t, k, "base"))


def declarative_verb(t: list[str], i: int) -> Iterator[VerbGroup]:
    w = at(t, i)
    neg = at(t, i + 1) == "not"
    j = i + 1 + neg
    if w in BE_WILL:
        yield from after_be(w, t, j, neg, True)
    elif w in ("does", "do", "did") and neg:
        if w != "did" and t[j:j + 2] == ["want", "to"]:
            yield from ((lemma, "want", True, k, None) for lemma, k in forms(t, j + 2, "base"))
        yield from ((lemma, "past" if w == "did" else "present", True, k, None) for lemma, k in forms(t, j, "base"))
    elif w in ("can", "cannot"):
        yield from ((lemma, "can", w == "cannot", k, None) for lemma, k in forms(t, i + 1, "base"))
    elif w in ("has", "have") and at(t, i + 1) == "just":
        yield from ((lemma, "just", False, k, None) for lemma, k in forms(t, i + 2, "pp"))
    if w in ("wants", "want") and at(t, i + 1) == "to":
        yield from ((lemma, "want", False, k, None) for lemma, k in forms(t, i + 2, "base"))
    adverbs = [(None, i)] + ([(w, i + 1)] if w in ADVERBS else [])
    for adv, k in adverbs:
        for kind, tense in (("s3", "present"), ("base", "present"), ("past", "past")):
            yield from ((lemma, tense, False, m, adv) for lemma, m in forms(t, k, kind))


def _heads(t: list[str], j: int) -> Iterator[tuple[str, bool, int, bool]]:
    """(noun lemma, plural, index after, owner) for a noun at j; owner: written "boy' s" (a possessive)."""
    for n in range(1, _MAX_NOUN + 1):
        span = t[j:j + n]
        for lemma, plural in _NOUNS.get(tuple(span), ()):
            yield lemma, plural, j + n, False
        if span and span[-1].endswith("'") and at(t, j + n) == "s":
            for lemma, plural in _NOUNS.get((*span[:-1], span[-1][:-1]), ()):
                yield lemma, plural, j + n + 1, True


def _simple(t: list[str], i: int, det_required: bool = False) -> Iterator[tuple[NounPhrase, int, bool]]:
    """Determiner, adjectives, an optional compound modifier and a noun: (phrase, index after, is an owner)."""
    starts = [(_DETERMINERS[t[i]], i + 1)] if at(t, i) in _DETERMINERS else []
    if not det_required:
        starts.insert(0, ("", i))
    for det, j in starts:
        adjs: list[str] = []
        while True:
            for lemma, plural, k, owner in _heads(t, j):
                yield NounPhrase(lemma, det, plural, tuple(adjs)), k, owner
            if at(t, j) in _MODIFIERS:
                for lemma, plural, k, owner in _heads(t, j + 1):
                    yield NounPhrase(lemma, det, plural, tuple(adjs), modifier=t[j]), k, owner
            if len(adjs) == 2 or at(t, j) not in ADJECTIVE:
                break
            adjs.append(t[j])
            j += 1


def _owned(t: list[str], i: int) -> Iterator[tuple[NounPhrase, int]]:
    """Plain noun phrases and possessives ("the boy's red ball")."""
    for np, j, owner in _simple(t, i):
        if not owner:
            yield np, j
            continue
        for owned, k, again in _simple(t, j):
            if not again and not owned.det:
                yield NounPhrase(owned.head, "'s", owned.plural, owned.adjs, owner=np, modifier=owned.modifier), k


def nps(t: list[str], i: int, role: str, pronoun: bool = False) -> Iterator[tuple[NounPhrase, int]]:
    """Noun phrases at i for a role ("subject", "object", "prep", "recipient"), with coordination and, for
    subjects and objects, relative clauses."""
    w = at(t, i)
    if pronoun and role == "subject" and w in _PRONOUNS:
        yield NounPhrase(_PRONOUNS[w], "pron"), i + 1
    if (pronoun or role == "recipient") and role != "subject" and w in OBJECT_PRONOUNS:
        yield NounPhrase(w, "pron"), i + 1
    for np, j in _owned(t, i):
        yield np, j
        if role in ("subject", "object") and at(t, j) == "and":
            for second, k in _owned(t, j + 1):
                yield NounPhrase(np.head, np.det, np.plural, np.adjs, np.owner, np.modifier, also=second), k
        if role in ("subject", "object") and at(t, j) in RELATIVE_WORDS:
            for rel, k in _relatives(t, j):
                yield NounPhrase(np.head, np.det, np.plural, np.adjs, np.owner, np.modifier, rel=rel), k


def _relatives(t: list[str], i: int) -> Iterator[tuple[Clause, int]]:
    """ "who sleeps", "that eats the fish" (the subject is the gap); "that the boy ate" (the object is)."""
    word = t[i]
    gap = NounPhrase(word, "rel")
    for verb, tense, negated, j, adverb in declarative_verb(t, i + 1):
        if verb == "be" or adverb:
            continue
        kinds = VERB[verb].kinds
        if "intr" in kinds:
            yield Clause("intr", gap, verb, tense, negated), j
        if "trans" in kinds:
            for obj, k in _owned(t, j):
                yield Clause("trans", gap, verb, tense, negated, obj=obj), k
            if at(t, j) in OBJECT_PRONOUNS:
                yield Clause("trans", gap, verb, tense, negated, obj=NounPhrase(t[j], "pron")), j + 1
    subjects = [(NounPhrase(_PRONOUNS[at(t, i + 1)], "pron"), i + 2)] if at(t, i + 1) in _PRONOUNS else []
    for subject, j in subjects + list(_owned(t, i + 1)):
        for verb, tense, negated, k, adverb in declarative_verb(t, j):
            if verb != "be" and not adverb and "trans" in VERB[verb].kinds:
                yield Clause("trans", subject, verb, tense, negated, obj=gap), k

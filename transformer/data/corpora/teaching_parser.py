"""English -> frame: a recursive-descent parser for the teaching grammar, the inverse of the realizer.

The parser enumerates every frame whose words could match the sentence (subject, verb group, object, place,
time), loosely: it does not check agreement. A candidate is accepted only if it is `valid` and the realizer
writes exactly the input words back, so agreement ("the dogs eats"), a/an and word order are checked by the
same code that generates the corpus, and `parse(realize(c).src)` gives a frame realizing the same pair.
"""

from __future__ import annotations

from collections.abc import Iterator

from transformer.data.corpora.teaching_grammar import Clause, NounPhrase, PrepPhrase, realize
from transformer.data.corpora.teaching_lexicon import (
    ADJECTIVE,
    NOUN,
    NUMBER,
    POSSESSIVES,
    PREPOSITIONS,
    PRONOUNS,
    TIME,
    VERB,
)
from transformer.data.corpora.teaching_syntax import valid
from transformer.data.words import words

_NOUNS: dict[tuple[str, ...], list[tuple[str, bool]]] = {}
for _noun in NOUN.values():
    for _form, _plural in ((_noun.en, False), (_noun.en_plural, True)):
        _NOUNS.setdefault(tuple(_form.lower().split()), []).append((_noun.en, _plural))
_DETERMINERS = {w: w for w in ("the", "a", "some", "any", "this", "these", *POSSESSIVES, *NUMBER)} | {"an": "a"}
_PRONOUNS = {p.lower(): p for p in PRONOUNS}
_VERB_FORMS: dict[str, list[tuple[str, str]]] = {}
for _verb in VERB.values():
    for _kind in ("base", "s3", "past", "ing"):
        _VERB_FORMS.setdefault(getattr(_verb, _kind), []).append((_verb.en, _kind))
_PLACE_PREPOSITIONS = [tuple(p.split()) for p in PREPOSITIONS if p != "to"]
_TIMES = {tuple(key.lower().split()): key for key in TIME}
_MAX_NOUN = max(len(key) for key in _NOUNS)

VerbGroup = tuple[str, str, bool, int]  # (verb lemma or "be", tense, negated, index after the verb group)


def _at(t: list[str], i: int) -> str:
    return t[i] if i < len(t) else ""


def _nps(t: list[str], i: int, pronoun: bool = False) -> Iterator[tuple[NounPhrase, int]]:
    if pronoun and _at(t, i) in _PRONOUNS:
        yield NounPhrase(_PRONOUNS[t[i]], "pron"), i + 1
    starts = [("", i)] + ([(_DETERMINERS[t[i]], i + 1)] if _at(t, i) in _DETERMINERS else [])
    for det, j in starts:
        adjs: list[str] = []
        while True:
            for n in range(1, _MAX_NOUN + 1):
                for lemma, plural in _NOUNS.get(tuple(t[j:j + n]), ()):
                    yield NounPhrase(lemma, det, plural, tuple(adjs)), j + n
            if len(adjs) == 2 or _at(t, j) not in ADJECTIVE:
                break
            adjs.append(t[j])
            j += 1


def _forms(t: list[str], i: int, kind: str) -> Iterator[tuple[str, int]]:
    """Verbs whose `kind` form ("base", "s3", "past", "ing") is at i, with the index after their particle."""
    for lemma, k in _VERB_FORMS.get(_at(t, i), ()):
        particle = VERB[lemma].particle
        if k == kind and (particle is None or _at(t, i + 1) == particle):
            yield lemma, i + 1 + (particle is not None)


_BE_WILL = ("am", "is", "are", "was", "were", "will")


def _be_or_will(aux: str, t: list[str], j: int, neg: bool) -> Iterator[VerbGroup]:
    """Verb groups after a form of "be" or "will" at j: statements (aux before j) and questions alike."""
    if aux in ("am", "is", "are"):
        yield from ((lemma, "progressive", neg, k) for lemma, k in _forms(t, j, "ing"))
        yield "be", "present", neg, j
    elif aux in ("was", "were"):
        yield "be", "past", neg, j
    else:
        if _at(t, j) == "be":
            yield "be", "future", neg, j + 1
        yield from ((lemma, "future", neg, k) for lemma, k in _forms(t, j, "base"))


def _declarative_verb(t: list[str], i: int) -> Iterator[VerbGroup]:
    w = _at(t, i)
    neg = _at(t, i + 1) == "not"
    j = i + 1 + neg
    if w in _BE_WILL:
        yield from _be_or_will(w, t, j, neg)
    elif w in ("does", "do", "did") and neg:
        if w != "did" and t[j:j + 2] == ["want", "to"]:
            yield from ((lemma, "want", True, k) for lemma, k in _forms(t, j + 2, "base"))
        yield from ((lemma, "past" if w == "did" else "present", True, k) for lemma, k in _forms(t, j, "base"))
    elif w in ("can", "cannot"):
        yield from ((lemma, "can", w == "cannot", k) for lemma, k in _forms(t, i + 1, "base"))
    if w in ("wants", "want") and _at(t, i + 1) == "to":
        yield from ((lemma, "want", False, k) for lemma, k in _forms(t, i + 2, "base"))
    for kind, tense in (("s3", "present"), ("base", "present"), ("past", "past")):
        yield from ((lemma, tense, False, k) for lemma, k in _forms(t, i, kind))


def _question_verb(aux: str, t: list[str], j: int) -> Iterator[VerbGroup]:
    if aux in _BE_WILL:
        yield from _be_or_will(aux, t, j, False)
    elif aux in ("does", "do", "did", "can"):
        if aux in ("does", "do") and t[j:j + 2] == ["want", "to"]:
            yield from ((lemma, "want", False, k) for lemma, k in _forms(t, j + 2, "base"))
        tense = {"did": "past", "can": "can"}.get(aux, "present")
        yield from ((lemma, tense, False, k) for lemma, k in _forms(t, j, "base"))


def _pps(t: list[str], i: int, preps: list[tuple[str, ...]]) -> Iterator[tuple[PrepPhrase, int]]:
    for prep in preps:
        if tuple(t[i:i + len(prep)]) == prep:
            for np, j in _nps(t, i + len(prep)):
                yield PrepPhrase(" ".join(prep), np), j


def _tails(t: list[str], i: int, place: bool) -> Iterator[dict]:
    """An optional place, then an optional time, to the end of the sentence."""
    options = [(None, i)] + (list(_pps(t, i, _PLACE_PREPOSITIONS)) if place else [])
    for pp, j in options:
        if j == len(t):
            yield {"place": pp}
        elif tuple(t[j:]) in _TIMES:
            yield {"place": pp, "time": _TIMES[tuple(t[j:])]}


def _complements(t: list[str], i: int, kind: str) -> Iterator[dict]:
    if kind in ("trans", "give"):
        for obj, j in _nps(t, i):
            if kind == "trans":
                yield from ({"obj": obj} | tail for tail in _tails(t, j, True))
            else:
                for to, k in _pps(t, j, [("to",)]):
                    yield from ({"obj": obj, "to": to} | tail for tail in _tails(t, k, True))
    elif kind == "motion":
        for to, j in _pps(t, i, [("to",), ("at",)]):
            yield from ({"to": to} | tail for tail in _tails(t, j, False))
    elif kind == "intr":
        yield from _tails(t, i, True)
    elif kind == "be_adj" and _at(t, i) in ADJECTIVE:
        yield from ({"adj": t[i]} | tail for tail in _tails(t, i + 1, False))
    elif kind == "be_place":
        for place, j in _pps(t, i, _PLACE_PREPOSITIONS):
            yield from (tail | {"place": place} for tail in _tails(t, j, False))


def _clauses(t: list[str], question: bool) -> Iterator[Clause]:
    if question:
        groups = ((subject, group) for subject, j in _nps(t, 1, True) for group in _question_verb(t[0], t, j))
    else:
        groups = ((subject, group) for subject, j in _nps(t, 0, True) for group in _declarative_verb(t, j))
    for subject, (verb, tense, negated, j) in groups:
        kinds = ("be_adj", "be_place") if verb == "be" else sorted(VERB[verb].kinds)
        for kind in kinds:
            for parts in _complements(t, j, kind):
                yield Clause(kind, subject, verb, tense, negated, question, **parts)


def parse(text: str) -> Clause | None:
    """The frame of an English sentence of the grammar (any case, spacing; final "." or "?" optional), or None."""
    t = [w.lower() for w in words(text)]
    mark = t.pop() if t and t[-1] in (".", "?") else None
    if not t:
        return None
    for question in ((mark == "?",) if mark else (False, True)):
        for clause in _clauses(t, question):
            if valid(clause) and [w.lower() for w in words(realize(clause).src)][:-1] == t:
                return clause
    return None

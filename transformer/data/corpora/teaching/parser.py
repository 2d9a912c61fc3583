"""English -> frame: a recursive-descent parser for the teaching grammar, the inverse of the realizer.

The parser enumerates every frame whose words could match the sentence (subject, verb group, object, place,
time), loosely: it does not check agreement. A candidate is accepted only if it is `valid` and the realizer
writes exactly the input words back, so agreement ("the dogs eats"), a/an and word order are checked by the
same code that generates the corpus, and `parse(realize(c).src)` gives a frame realizing the same pair.
Contractions ("doesn't", "I'm", "she's") are expanded first and the frame remembers them; noun phrases
(possessives, compounds, coordination, relative clauses) are in `parser_phrases`.
"""

from __future__ import annotations

from collections.abc import Iterator

from transformer.data.corpora.teaching.frames import Clause, NounPhrase, PrepPhrase
from transformer.data.corpora.teaching.lexicon import (
    ADJECTIVE,
    IDIOMS,
    NUMBER,
    PREPOSITIONS,
    TIME,
    VERB,
    WEATHER_ADJECTIVES,
    WH_WORDS,
)
from transformer.data.corpora.teaching.parser_phrases import (
    BE_WILL,
    VerbGroup,
    after_be,
    at,
    declarative_verb,
    forms,
    nps,
)
from transformer.data.corpora.teaching.realizer import realize
from transformer.data.corpora.teaching.syntax import valid
from transformer.data.words import words

_PLACE_PREPOSITIONS = [tuple(p.split()) for p in PREPOSITIONS if p != "to"]
_TIMES = {tuple(key.lower().split()): key for key in TIME}
_NEG = {"don'": ["do", "not"], "doesn'": ["does", "not"], "didn'": ["did", "not"], "isn'": ["is", "not"],
        "aren'": ["are", "not"], "wasn'": ["was", "not"], "weren'": ["were", "not"], "won'": ["will", "not"],
        "can'": ["cannot"], "hasn'": ["has", "not"], "haven'": ["have", "not"]}
_SUBJ = {"m": "am", "re": "are", "ll": "will", "ve": "have", "s": "is"}
_CONTRACTING = {"i", "you", "he", "she", "we", "they", "it", "there", "who", "where"}


def _expand(raw: list[str]) -> tuple[list[str], frozenset[str]]:
    """Contractions written out: doesn' t -> does not, she' s -> she is (has before "just"), can' t -> cannot."""
    out: list[str] = []
    found: set[str] = set()
    i = 0
    while i < len(raw):
        w, nxt = raw[i], at(raw, i + 1)
        if w in _NEG and nxt == "t":
            out += _NEG[w]
            found.add("neg")
            i += 2
        elif w.endswith("'") and w[:-1] in _CONTRACTING and nxt in _SUBJ:
            out += [w[:-1], "has" if nxt == "s" and at(raw, i + 2) == "just" else _SUBJ[nxt]]
            found.add("subj")
            i += 2
        else:
            out.append(w)
            i += 1
    return out, frozenset(found)


def _question_verb(aux: str, t: list[str], j: int) -> Iterator[VerbGroup]:
    if aux in BE_WILL:
        yield from after_be(aux, t, j, False, False)
    elif aux in ("does", "do", "did", "can"):
        if aux in ("does", "do") and t[j:j + 2] == ["want", "to"]:
            yield from ((lemma, "want", False, k, None) for lemma, k in forms(t, j + 2, "base"))
        tense = {"did": "past", "can": "can"}.get(aux, "present")
        yield from ((lemma, tense, False, k, None) for lemma, k in forms(t, j, "base"))
    elif aux in ("has", "have") and at(t, j) == "just":
        yield from ((lemma, "just", False, k, None) for lemma, k in forms(t, j + 1, "pp"))


def _pps(t: list[str], i: int, preps: list[tuple[str, ...]], role: str = "prep") -> Iterator[tuple[PrepPhrase, int]]:
    for prep in preps:
        if tuple(t[i:i + len(prep)]) == prep:
            for np, j in nps(t, i + len(prep), role):
                yield PrepPhrase(" ".join(prep), np), j


def _tails(t: list[str], i: int, place: bool) -> Iterator[dict]:
    """An optional place, then an optional time, to the end of the sentence."""
    options = [(None, i)] + (list(_pps(t, i, _PLACE_PREPOSITIONS)) if place else [])
    for pp, j in options:
        if j == len(t):
            yield {"place": pp}
        elif tuple(t[j:]) in _TIMES:
            yield {"place": pp, "time": _TIMES[tuple(t[j:])]}


def _complements(t: list[str], i: int, kind: str, wh: str | None) -> Iterator[dict]:
    if kind in ("trans", "give"):
        objects = [(None, i)] if wh == "what" else nps(t, i, "object", pronoun=True)
        for obj, j in objects:
            if kind == "trans":
                yield from ({"obj": obj} | tail for tail in _tails(t, j, True))
            else:
                for to, k in _pps(t, j, [("to",)], "recipient"):
                    yield from ({"obj": obj, "to": to} | tail for tail in _tails(t, k, True))
    elif kind == "motion":
        if wh == "where":
            yield from _tails(t, i, False)
        for to, j in _pps(t, i, [("to",), ("at",)]):
            yield from ({"to": to} | tail for tail in _tails(t, j, False))
    elif kind in ("intr", "refl", "weather"):
        yield from _tails(t, i, True)
    elif kind == "be_adj" and at(t, i) in ADJECTIVE:
        yield from ({"adj": t[i]} | tail for tail in _tails(t, i + 1, False))
    elif kind == "idiom" and at(t, i) in IDIOMS:
        yield from ({"adj": t[i]} | tail for tail in _tails(t, i + 1, False))
    elif kind == "age" and at(t, i) in NUMBER and t[i + 1:i + 3] in (["years", "old"], ["year", "old"]):
        yield from ({"adj": t[i]} | tail for tail in _tails(t, i + 3, False))
    elif kind == "be_place":
        if wh == "where":
            yield from _tails(t, i, False)
        for place, j in _pps(t, i, _PLACE_PREPOSITIONS):
            yield from (tail | {"place": place} for tail in _tails(t, j, False))


def _kinds(verb: str) -> list[str]:
    return ["be_adj", "be_place", "idiom", "age"] if verb == "be" else sorted(VERB[verb].kinds)


def _clauses(t: list[str], question: bool, contract: frozenset[str]) -> Iterator[Clause]:
    common = {"question": question, "contract": contract}
    wh = t[0] if question and t and t[0] in WH_WORDS else None
    if wh:
        common["wh"] = wh
    start = 1 if wh else 0
    if wh == "who":
        groups = ((NounPhrase("who", "wh"), g) for g in declarative_verb(t, 1))
    elif question:
        groups = ((s, g) for s, j in nps(t, start + 1, "subject", pronoun=True)
                  for g in _question_verb(t[start], t, j))
    else:
        groups = ((s, g) for s, j in nps(t, 0, "subject", pronoun=True) for g in declarative_verb(t, j))
    for subject, (verb, tense, negated, j, adverb) in groups:
        for kind in _kinds(verb):
            for parts in _complements(t, j, kind, wh):
                yield Clause(kind, subject, verb, tense, negated, adverb=adverb, **common, **parts)
    yield from _there_and_weather(t, start, question, common)


def _there_and_weather(t: list[str], start: int, question: bool, common: dict) -> Iterator[Clause]:
    """ "There is a cat ..." / "Is there a cat ...?"; "It is raining." / "It is cold." / "Is it snowing?" """
    if question:
        if at(t, start + 1) not in ("there", "it"):
            return
        word, groups = t[start + 1], _question_verb(t[start], t, start + 2)
    else:
        if at(t, 0) not in ("there", "it"):
            return
        word, groups = t[0], declarative_verb(t, 1)
    for verb, tense, negated, j, adverb in groups:
        if word == "there" and verb == "be":
            for subject, k in nps(t, j, "object"):
                for tail in _tails(t, k, True):
                    yield Clause("there", subject, "be", tense, negated, adverb=adverb, **common, **tail)
        elif word == "it" and verb == "be" and at(t, j) in WEATHER_ADJECTIVES:
            for tail in _tails(t, j + 1, True):
                yield Clause("weather", NounPhrase("it", "it"), "be", tense, negated, adj=t[j], adverb=adverb,
                             **common, **tail)
        elif word == "it" and verb != "be" and "weather" in VERB[verb].kinds:
            for tail in _tails(t, j, True):
                yield Clause("weather", NounPhrase("it", "it"), verb, tense, negated, adverb=adverb, **common, **tail)


def _imperatives(t: list[str], contract: frozenset[str]) -> Iterator[Clause]:
    """ "Eat the bread." "Don't eat the bread." "Let's go." "Close the door, please." "Please sit down." """
    please = "start" if at(t, 0) == "please" else "end" if t[-2:] == [",", "please"] else ""
    body = t[1:] if please == "start" else t[:-2] if please == "end" else t
    who = "vous" if please else "tu"
    i, negated = 0, False
    if body[:2] == ["let'", "s"]:
        who, i = "nous", 2
    if body[i:i + 2] == ["do", "not"] or (who == "nous" and at(body, i) == "not"):
        negated, i = True, i + (1 if who == "nous" else 2)
    subject = NounPhrase("we" if who == "nous" else "you", "pron")
    common = {"imperative": who, "please": please, "negated": negated, "contract": contract}
    if at(body, i) == "be":
        for kind in ("be_adj", "idiom"):
            for parts in _complements(body, i + 1, kind, None):
                yield Clause(kind, subject, "be", **common, **parts)
    for lemma, j in forms(body, i, "base"):
        for kind in sorted(VERB[lemma].kinds):
            for parts in _complements(body, j, kind, None):
                yield Clause(kind, subject, lemma, **common, **parts)


def _spoken(c: Clause) -> list[str]:
    return [w.lower() for w in words(realize(c).src)][:-1]


def parse(text: str) -> Clause | None:
    """The frame of an English sentence of the grammar (any case, spacing; final "." or "?" optional), or None."""
    raw = [w.lower() for w in words(text)]
    mark = raw.pop() if raw and raw[-1] in (".", "?") else None
    if not raw:
        return None
    t, contract = _expand(raw)
    for question in ((mark == "?",) if mark else (False, True)):
        candidates = _clauses(t, question, contract)
        if not question:
            candidates = _chain(candidates, _imperatives(t, contract))
        for clause in candidates:
            if valid(clause) and _spoken(clause) == raw:
                return clause
    return None


def _chain(*iterators: Iterator[Clause]) -> Iterator[Clause]:
    for iterator in iterators:
        yield from iterator

"""For a sentence outside the teaching grammar, the nearest sentence the grammar has; and a search of its words.

`nearest_sentence` first repairs the sentence: words it does not know become the nearest word it knows by
spelling ("bycicle" -> "bicycle", "dogz" -> "dogs"), then it tries dropping one or two words it cannot place
("The dog really eats." -> "The dog eats."). When no repair parses, it returns the candidate sentence (e.g. the
test split) sharing the most words with it. Pure Python, as the grammar is.

    nearest_sentence("The cat eat the fish")     # "The cat eats the fish."
    search_vocabulary("chat")                    # {"animals": [("cat", "chat"), ...], ...}
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from itertools import combinations, islice

from transformer.data.corpora.teaching.corpus import align, vocabulary
from transformer.data.corpora.teaching.lexicon import ADJECTIVE, NOUN, VERB
from transformer.data.words import words

_FUNCTION = set("""the a an some any this these my your his her our their i you he she we they it me him us them
    is am are was were be will can cannot do does did not to at in on under near behind front of next and who that
    which where when why how what please let there just going years year old always often never sometimes usually
    rarely s t m re ll ve""".split())


_TYPED = {"dont": "don't", "doesnt": "doesn't", "didnt": "didn't", "cant": "can't", "wont": "won't",
          "isnt": "isn't", "arent": "aren't", "wasnt": "wasn't", "im": "I'm", "ive": "I've", "youre": "you're"}
_SETS = [("a", "an", "the", "some", "any"), ("this", "these"), ("am", "is", "are"), ("was", "were"),
         ("do", "does", "did"), ("has", "have"), ("don'", "doesn'", "didn'"), ("isn'", "aren'"), ("wasn'", "weren'")]
MAX_ATTEMPTS = 400  # sentences tried before falling back to the candidates (each parse takes about a millisecond)


def _forms() -> tuple[list[str], list[dict[str, list[str]]]]:
    """Every English word form the grammar knows, and for each the other forms of its lemma: verbs' first, then
    function words', then nouns' (a typed noun is more often meant as typed than a typed verb form)."""
    tables: list[dict[str, list[str]]] = [{}, {}, {}]

    def group(table: dict[str, list[str]], forms) -> None:
        forms = list(dict.fromkeys(f.lower() for f in forms))
        for f in forms:
            table.setdefault(f, [])
            table[f] += [g for g in forms if g != f and g not in table[f]]

    for v in VERB.values():
        group(tables[0], [v.base, v.s3, v.past, v.ing, v.pp])
    for words_ in _SETS:
        group(tables[1], words_)
    for n in NOUN.values():
        if " " not in n.en:
            group(tables[2], [n.en, n.en_plural])
    known = {f for table in tables for f in table} | set(_FUNCTION) | set(ADJECTIVE)
    known |= {w.lower() for n in NOUN.values() for w in (n.en + " " + n.en_plural).split()}
    known |= {w for v in VERB.values() for w in (v.particle or "").split()}
    return sorted(known), tables


_KNOWN, _OTHERS = _forms()
_KNOWN_SET = set(_KNOWN)


def _spelled(word: str) -> str:
    """The known word nearest to `word` by spelling (the word itself when it is known or nothing is near)."""
    w = word.lower()
    if w in _KNOWN_SET or not w[:1].isalpha():
        return w
    close = difflib.get_close_matches(w, _KNOWN, n=1, cutoff=0.7)
    return close[0] if close else w


def _text(tokens: Sequence[str]) -> str:
    out = ""
    for w in tokens:
        out += w if (out.endswith("'") or w in (".", ",", "?") or not out) else " " + w
    return out


def _attempts(tokens: list[str]) -> Iterator[list[str]]:
    """The sentence with its spelling repaired, then with one edit (a word changed to another form of its lemma,
    dropped, or "the" put before it), then with two."""
    yield tokens
    singles = [(i, alt) for table in _OTHERS for i, w in enumerate(tokens) for alt in table.get(w, [])]
    singles += [(i, "") for i in range(len(tokens)) if tokens[i][:1].isalnum()]
    singles += [(i, "the " + tokens[i]) for i in range(len(tokens)) if tokens[i][:1].isalnum()]
    for edit in singles:
        yield _edit(tokens, [edit])
    for (i, a), (j, b) in combinations(singles, 2):
        if i != j:
            yield _edit(tokens, [(i, a), (j, b)])


def _edit(tokens: list[str], edits: list[tuple[int, str]]) -> list[str]:
    out = list(tokens)
    for i, alt in edits:
        out[i] = alt
    return " ".join(out).split()


def nearest_sentence(text: str, candidates: Sequence[str] = ()) -> str | None:
    """The nearest English sentence of the teaching grammar to `text` (itself, when the grammar has it): a repair
    that parses, else the candidate sharing most words with it, else None."""
    raw = [_TYPED.get(w.lower(), w) for w in text.split()]
    tokens = [_spelled(w) for w in words(" ".join(raw))]
    if not tokens:
        return None
    for attempt in islice(_attempts(tokens), MAX_ATTEMPTS):
        if attempt and (pair := align(_text(attempt))) is not None:
            return pair.src
    mine = {w.lower() for w in tokens if w[0].isalnum()}
    scored = [(len(mine & {w.lower() for w in words(c)}), difflib.SequenceMatcher(None, text.lower(), c.lower())
               .ratio(), c) for c in candidates]
    return max(scored)[2] if scored else None


def search_vocabulary(query: str, grammar: int | None = None) -> dict[str, list[tuple[str, str]]]:
    """The lexicon's (English, French) pairs whose English or French contains `query` (case-insensitive), by
    category; everything for an empty query."""
    q = query.strip().lower()
    groups = vocabulary() if grammar is None else vocabulary(grammar)
    if not q:
        return groups
    found = {name: [(en, fr) for en, fr in pairs if q in en.lower() or q in fr.lower()]
             for name, pairs in groups.items()}
    return {name: pairs for name, pairs in found.items() if pairs}

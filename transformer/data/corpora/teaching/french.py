"""French words under construction for the teaching realizer: noun phrases, elision, contraction, typography.

The realizer writes the English words first and each French word with the English word indices it translates
(`Fr.links`, sure) and, inside a block that does not align word for word, the ones it may translate
(`Fr.maybe`, possible). `sound` does elision and contraction last, merging the links of contracted words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from transformer.data.corpora.teaching.frames import INDEFINITE, NounPhrase
from transformer.data.corpora.teaching.lexicon import ADJECTIVE, COMPOUNDS, NOUN, NUMBER, POSSESSIVES, PRONOUNS
from transformer.data.corpora.teaching.morphology import english_an, french_vowel_initial
from transformer.data.words import words

_CONTRACTIONS = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}


@dataclass
class Fr:
    """A French word under construction: the English word indices it translates, and what elision may do to it."""
    word: str
    links: frozenset[int]
    tag: str = ""  # def (le/la/les), elide (je, ne, que, de), a/de (may contract), des, adj, vowel (uses alt)
    alt: str = ""  # the form before a vowel: cet, mon, bel, nouvel, vieil
    maybe: frozenset[int] = frozenset()  # possible links (inside an idiom's block)


@dataclass
class English:
    tokens: list[str] = field(default_factory=list)

    def add(self, text: str) -> tuple[int, ...]:
        start = len(self.tokens)
        self.tokens.extend(text.split())
        return tuple(range(start, len(self.tokens)))


def agreement(np: NounPhrase) -> tuple[int, str, bool]:
    """(French person 0..4, gender, plural) of a subject; coordinated nouns are plural, feminine only if all are."""
    if np.also is not None:
        _, second, _ = agreement(np.also)
        return 4, "f" if NOUN[np.head].gender == second == "f" else "m", True
    if np.pronoun:
        _, person, gender = PRONOUNS[np.head]
        return person, gender, person >= 3
    if np.det in ("wh", "it"):
        return 2, "m", False
    return (4 if np.plural else 2), NOUN[np.head].gender, np.plural


def form_index(gender: str, plural: bool) -> int:
    return (1 if gender == "f" else 0) + (2 if plural else 0)


Relative = Callable[[English, NounPhrase], list[Fr]]  # writes a relative clause's English, returns its French


def noun_phrase(en: English, np: NounPhrase, *, generic: bool = False, neg_de: bool = False,
                relative: Relative | None = None) -> list[Fr]:
    """Writes the English of a noun phrase and returns its French. `generic`: a bare noun takes the definite
    article (aime les chats); `neg_de`: an indefinite one becomes "de" (pas de pain)."""
    if np.pronoun:
        fr = PRONOUNS[np.head][0]
        return [Fr(fr, frozenset(en.add(np.head)), "elide" if fr == "je" else "")]
    if np.also is not None:
        first = noun_phrase(en, NounPhrase(np.head, np.det, np.plural, np.adjs, np.owner, np.modifier),
                            generic=generic, relative=relative)
        conj = Fr("et", frozenset(en.add("and")))
        return first + [conj] + noun_phrase(en, np.also, generic=generic, relative=relative)
    owner_fr: list[Fr] = []
    if np.owner is not None:  # "the boy's" -> "du garçon", after the possessed noun
        owner_fr = noun_phrase(en, np.owner)
        en.tokens[-1] += "'"
        owner_fr.insert(0, Fr("de", frozenset(en.add("s")), "de"))
    det = en.add(np.det) if np.det and np.owner is None else ()
    adjs = tuple(en.add(a) for a in np.adjs)
    modifier = en.add(np.modifier) if np.modifier else ()
    noun = NOUN[np.head]
    at_noun = en.add(noun.en_plural if np.plural else noun.en)
    out = _determiner(np, frozenset(det or at_noun), generic, neg_de)
    k = form_index(noun.gender, np.plural)
    pre, post = [], []
    for a, a_at in zip(np.adjs, adjs):
        adj = ADJECTIVE[a]
        alt = adj.before_vowel if k == 0 and adj.before_vowel else ""
        (pre if adj.pre else post).append(Fr(adj.forms[k], frozenset(a_at), "adj", alt))
    nouns = [Fr(w, frozenset(at_noun)) for w in words(noun.fr_plural if np.plural else noun.fr)]
    compound = [Fr(w, frozenset(modifier), {"de": "de", "à": "a"}.get(w, ""))
                for w in words(COMPOUNDS[np.modifier, np.head])] if np.modifier else []
    tail = relative(en, np) if np.rel is not None and relative is not None else []
    return out + pre + nouns + compound + post + owner_fr + tail


def _determiner(np: NounPhrase, links: frozenset[int], generic: bool, neg_de: bool) -> list[Fr]:
    masc, d, plural = NOUN[np.head].gender == "m", np.det, np.plural
    if np.owner is not None:  # the possessed noun takes the definite article, which English does not have
        return [Fr("les" if plural else "le" if masc else "la", links, "def")]
    if d in INDEFINITE and neg_de and not generic:
        return [Fr("de", links, "de")]
    if d == "the" or (d == "" and generic):
        return [Fr("les" if plural else "le" if masc else "la", links, "def")]
    if d in ("a", "one"):
        return [Fr("un" if masc else "une", links)]
    if d in INDEFINITE:  # partitive or plural indefinite: du pain, de la soupe, de l'eau, des pommes
        if plural:
            return [Fr("des", links, "des")]
        return [Fr("de", links, "de"), Fr("le" if masc else "la", links, "def")]
    if d in POSSESSIVES:
        m, f, p = POSSESSIVES[d]
        return [Fr(p, links) if plural else Fr(m, links) if masc else Fr(f, links, "vowel", m)]
    if d == "this":
        return [Fr("ce", links, "vowel", "cet") if masc else Fr("cette", links)]
    if d == "these":
        return [Fr("ces", links)]
    return [Fr(w, links) for w in words(NUMBER[d])]


def sound(fr: list[Fr]) -> list[Fr]:
    """Elision and allomorphs right to left (la école -> l'école, ce homme -> cet homme, des petits -> de petits),
    then contractions left to right (à le -> au, de les -> des), whose links are the union of both words'."""
    for i in range(len(fr) - 2, -1, -1):
        t, nxt = fr[i], fr[i + 1]
        vowel = french_vowel_initial(nxt.word)
        if t.tag == "des" and nxt.tag == "adj":
            t.word, t.tag = "de", "de"
        elides = t.tag in ("elide", "de") or (t.tag in ("def", "refl") and t.word in ("le", "la", "me", "te", "se"))
        if vowel and elides:
            t.word = t.word[:-1] + "'"
        elif vowel and t.alt:
            t.word = t.alt
    out: list[Fr] = []
    for t in fr:
        if out and t.tag == "def" and (out[-1].tag in ("a", "de")) and (out[-1].word, t.word) in _CONTRACTIONS:
            prev = out.pop()
            t = Fr(_CONTRACTIONS[prev.word, t.word], prev.links | t.links, maybe=prev.maybe | t.maybe)
        out.append(t)
    return out


def english_articles(tokens: list[str]) -> None:
    """a -> an by the sound of the next word."""
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] == "a" and english_an(tokens[i + 1]):
            tokens[i] = "an"


def join(tokens: list[str], french: bool) -> str:
    text = tokens[0][:1].upper() + tokens[0][1:]
    for prev, w in zip(tokens, tokens[1:]):
        glued = (w in (".", ",") or (not french and w == "?") or prev.endswith("'")
                 or (french and "-" in (prev, w)))
        text += w if glued else " " + w
    return text

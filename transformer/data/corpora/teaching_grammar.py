"""The teaching grammar: typed sentence frames and the realizer that writes English, French and their links at once.

A `Clause` is a frame (subject, verb, tense, negation, question, object, place, time...). `realize` emits the
English words first, remembering which English word plays which part (the determiner, the adjective, the
auxiliary, "not"); each French word is then written with the English words it translates, so links come from
the grammar, never from guessing. A last pass applies French elision and contraction (le -> l', à le -> au),
merging the links of contracted words. Words are those of `transformer.explain.words`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transformer.data.corpora.teaching_lexicon import (
    ADJECTIVE,
    LOCATIVE,
    NOUN,
    NUMBER,
    POSSESSIVES,
    PREPOSITIONS,
    PRONOUNS,
    TIME,
    VERB,
)
from transformer.data.corpora.teaching_morphology import (
    ETRE_IMPERFECT,
    english_an,
    french_conjugation,
    french_vowel_initial,
)
from transformer.data.words import words

KINDS = ("trans", "intr", "motion", "give", "be_adj", "be_place")
TENSES = ("present", "progressive", "past", "future", "can", "want")
BE_TENSES = ("present", "past", "future")
INDEFINITE = ("a", "some", "any", "")  # determiners that become "de" under negation ("pas de pain")

_ETRE, _ETRE_FUTURE, _ = french_conjugation("être")
_AVOIR = french_conjugation("avoir")[0]
_POUVOIR = french_conjugation("pouvoir")[0]
_VOULOIR = french_conjugation("vouloir")[0]
_BE_PRESENT = ("am", "are", "is", "are", "are")
_BE_PAST = ("was", "were", "was", "were", "were")
_CONTRACTIONS = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}


@dataclass(frozen=True)
class AlignedPair:
    src: str                                # English, e.g. "The young man buys a green bicycle."
    tgt: str                                # French, e.g. "Le jeune homme achète un vélo vert."
    links: frozenset[tuple[int, int]]       # sure links (src word index, tgt word index) over explain.words


@dataclass(frozen=True)
class NounPhrase:
    head: str                   # noun lemma, or a pronoun ("I", "she") when det == "pron"
    det: str = "the"            # the English determiner word: "the", "a", "some", "any", "" (bare), "my", "two"...
    plural: bool = False
    adjs: tuple[str, ...] = ()  # in English order: at most one French-before adjective, then one after

    @property
    def pronoun(self) -> bool:
        return self.det == "pron"


@dataclass(frozen=True)
class PrepPhrase:
    prep: str  # a key of PREPOSITIONS ("in", "next to", "to")
    np: NounPhrase


@dataclass(frozen=True)
class Clause:
    kind: str                        # one of KINDS
    subject: NounPhrase
    verb: str = "be"                 # a key of VERB, or "be" for the be_* kinds
    tense: str = "present"           # one of TENSES ("progressive": is eating; "can"/"want": can eat, wants to eat)
    negated: bool = False
    question: bool = False           # "Does the dog eat?" -> "Est-ce que le chien mange ?"
    obj: NounPhrase | None = None    # trans, give
    to: PrepPhrase | None = None     # motion: destination ("to the park"); give: recipient ("to the boy")
    adj: str | None = None           # be_adj: "The cat is black."
    place: PrepPhrase | None = None  # be_place: the complement; otherwise an optional place ("in the kitchen")
    time: str | None = None          # a key of TIME


@dataclass
class _Fr:
    """A French word under construction: the English word indices it translates, and what elision may do to it."""
    word: str
    links: frozenset[int]
    tag: str = ""  # def (le/la/les), elide (je, ne, que, de), a/de (may contract), des, adj, vowel (uses alt)
    alt: str = ""  # the form before a vowel: cet, mon, bel, nouvel, vieil


@dataclass
class _English:
    tokens: list[str] = field(default_factory=list)

    def add(self, text: str) -> tuple[int, ...]:
        start = len(self.tokens)
        self.tokens.extend(text.split())
        return tuple(range(start, len(self.tokens)))


@dataclass(frozen=True)
class _NPWords:  # where a noun phrase's English words went
    det: tuple[int, ...]
    adjs: tuple[tuple[int, ...], ...]
    noun: tuple[int, ...]


def agreement(np: NounPhrase) -> tuple[int, str, bool]:
    """(French person 0..4, gender, plural) of a subject."""
    if np.pronoun:
        _, person, gender = PRONOUNS[np.head]
        return person, gender, person >= 3
    return (4 if np.plural else 2), NOUN[np.head].gender, np.plural


def _form_index(gender: str, plural: bool) -> int:
    return (1 if gender == "f" else 0) + (2 if plural else 0)


def _en_np(en: _English, np: NounPhrase) -> _NPWords:
    if np.pronoun:
        return _NPWords((), (), en.add(np.head))
    det = en.add(np.det) if np.det else ()
    adjs = tuple(en.add(a) for a in np.adjs)
    noun = NOUN[np.head]
    return _NPWords(det, adjs, en.add(noun.en_plural if np.plural else noun.en))


def _fr_np(np: NounPhrase, at: _NPWords, *, generic: bool = False, neg_de: bool = False) -> list[_Fr]:
    if np.pronoun:
        fr = PRONOUNS[np.head][0]
        return [_Fr(fr, frozenset(at.noun), "elide" if fr == "je" else "")]
    noun, d, plural = NOUN[np.head], np.det, np.plural
    masc = noun.gender == "m"
    det_links = frozenset(at.det or at.noun)  # a French article with no English one translates the noun
    out: list[_Fr] = []
    if d in INDEFINITE and neg_de and not generic:
        out.append(_Fr("de", det_links, "de"))
    elif d == "the" or (d == "" and generic):
        out.append(_Fr("les" if plural else "le" if masc else "la", det_links, "def"))
    elif d in ("a", "one"):
        out.append(_Fr("un" if masc else "une", det_links))
    elif d in INDEFINITE:  # partitive or plural indefinite: du pain, de la soupe, de l'eau, des pommes
        if plural:
            out.append(_Fr("des", det_links, "des"))
        else:
            out += [_Fr("de", det_links, "de"), _Fr("le" if masc else "la", det_links, "def")]
    elif d in POSSESSIVES:
        m, f, p = POSSESSIVES[d]
        out.append(_Fr(p, det_links) if plural else _Fr(m, det_links) if masc else _Fr(f, det_links, "vowel", m))
    elif d == "this":
        out.append(_Fr("ce", det_links, "vowel", "cet") if masc else _Fr("cette", det_links))
    elif d == "these":
        out.append(_Fr("ces", det_links))
    else:
        out += [_Fr(w, det_links) for w in words(NUMBER[d])]
    k = _form_index(noun.gender, plural)
    pre, post = [], []
    for a, a_at in zip(np.adjs, at.adjs):
        adj = ADJECTIVE[a]
        alt = adj.before_vowel if k == 0 and adj.before_vowel else ""
        (pre if adj.pre else post).append(_Fr(adj.forms[k], frozenset(a_at), "adj", alt))
    nouns = [_Fr(w, frozenset(at.noun)) for w in words(noun.fr_plural if plural else noun.fr)]
    return out + pre + nouns + post


def _french_preposition(pp: PrepPhrase) -> str:
    locative = NOUN[pp.np.head].locative
    if pp.prep in LOCATIVE and locative and locative[0] == pp.prep:
        return locative[1]
    return PREPOSITIONS[pp.prep]


def _pp(en: _English, pp: PrepPhrase) -> list[_Fr]:
    """Writes the English of a prepositional phrase and returns its French."""
    prep = frozenset(en.add(pp.prep))
    fr = [_Fr(w, prep, {"à": "a", "de": "de"}.get(w, "")) for w in _french_preposition(pp).split()]
    return fr + _fr_np(pp.np, _en_np(en, pp.np))


def _english_verb(c: Clause, person: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """English verb words before and after the subject, each with its roles: q (question auxiliary),
    a (carries tense: the French finite verb), n (not), l (lexical verb), m (want), t (the "to" of "want to")."""
    neg = [("not", "n")] if c.negated else []
    if c.verb == "be":
        if c.tense == "future":
            head, rest = ("will", "a"), neg + [("be", "l")]
        else:
            head, rest = ((_BE_PAST if c.tense == "past" else _BE_PRESENT)[person], "al"), neg
        return ([(head[0], "q" + head[1])], rest) if c.question else ([], [head] + rest)
    v = VERB[c.verb]
    third = person == 2
    lexical = {"progressive": v.ing}.get(c.tense, v.base)
    tail = [(lexical, "l")] + ([(v.particle, "l")] if v.particle else [])
    if c.tense == "want":
        tail = [("want", "m"), ("to", "t"), (v.base, "l")] + tail[1:]
    aux = {"progressive": _BE_PRESENT[person], "past": "did", "future": "will", "can": "can"}.get(
        c.tense, "does" if third else "do")
    if c.question:
        return [(aux, "qa")], tail
    if c.negated:
        if c.tense == "can":
            return [], [("cannot", "an")] + tail
        return [], [(aux, "a"), ("not", "n")] + tail
    if c.tense in ("present", "past"):
        finite = v.past if c.tense == "past" else v.s3 if third else v.base
        return [], [(finite, "al")] + tail[1:]
    if c.tense == "want":
        return [], [("wants" if third else "want", "am")] + tail[1:]
    return [], [(aux, "a")] + tail


def _french_verb(c: Clause, roles: dict[str, frozenset[int]]) -> list[_Fr]:
    person, gender, plural = agreement(c.subject)
    a, lex = roles["a"], roles["l"]
    if c.verb == "be":
        table = {"present": _ETRE, "past": ETRE_IMPERFECT, "future": _ETRE_FUTURE}[c.tense]
        finite, rest = _Fr(table[person], a | lex), []
    else:
        v = VERB[c.verb]
        if c.tense == "past":
            participle = v.participle + ("e" if v.etre and gender == "f" else "") + ("s" if v.etre and plural else "")
            finite, rest = _Fr((_ETRE if v.etre else _AVOIR)[person], a), [_Fr(participle, lex)]
        elif c.tense == "can":
            finite, rest = _Fr(_POUVOIR[person], a), [_Fr(v.fr, lex)]
        elif c.tense == "want":
            finite, rest = _Fr(_VOULOIR[person], a | roles["m"]), [_Fr(v.fr, roles["t"] | lex)]
        else:
            finite, rest = _Fr((v.future if c.tense == "future" else v.present)[person], a | lex), []
    if c.negated:
        return [_Fr("ne", roles["n"], "elide"), finite, _Fr("pas", roles["n"])] + rest
    return [finite] + rest


def _sound(fr: list[_Fr]) -> list[_Fr]:
    """Elision and allomorphs right to left (la école -> l'école, ce homme -> cet homme, des petits -> de petits),
    then contractions left to right (à le -> au, de les -> des), whose links are the union of both words'."""
    for i in range(len(fr) - 2, -1, -1):
        t, nxt = fr[i], fr[i + 1]
        vowel = french_vowel_initial(nxt.word)
        if t.tag == "des" and nxt.tag == "adj":
            t.word, t.tag = "de", "de"
        if vowel and (t.tag in ("elide", "de") or (t.tag == "def" and t.word != "les")):
            t.word = t.word[:-1] + "'"
        elif vowel and t.alt:
            t.word = t.alt
    out: list[_Fr] = []
    for t in fr:
        if out and t.tag == "def" and (out[-1].tag in ("a", "de")) and (out[-1].word, t.word) in _CONTRACTIONS:
            prev = out.pop()
            t = _Fr(_CONTRACTIONS[prev.word, t.word], prev.links | t.links)
        out.append(t)
    return out


def _join(tokens: list[str], french: bool) -> str:
    text = tokens[0][:1].upper() + tokens[0][1:]
    for prev, w in zip(tokens, tokens[1:]):
        glued = w == "." or (not french and w == "?") or (french and (prev.endswith("'") or "-" in (prev, w)))
        text += w if glued else " " + w
    return text


def realize(c: Clause) -> AlignedPair:
    """The English and French of a frame, with the gold links between their words."""
    en = _English()
    person, gender, plural = agreement(c.subject)
    before, after = _english_verb(c, person)
    roles: dict[str, set[int]] = {r: set() for r in "qanlmt"}
    fr: list[_Fr] = []
    for word, role in before:
        (i,) = en.add(word)
        for r in role:
            roles[r].add(i)
    subject = _fr_np(c.subject, _en_np(en, c.subject))
    for word, role in after:
        (i,) = en.add(word)
        for r in role:
            roles[r].add(i)
    frozen = {r: frozenset(s) for r, s in roles.items()}
    if c.question:
        fr += [_Fr(w, frozen["q"], "elide" if w == "que" else "") for w in ("est", "-", "ce", "que")]
    fr += subject + _french_verb(c, frozen)
    if c.obj is not None:
        generic = "generic" in VERB[c.verb].flags
        fr += _fr_np(c.obj, _en_np(en, c.obj), generic=generic, neg_de=c.negated)
    if c.to is not None:
        fr += _pp(en, c.to)
    if c.adj is not None:
        fr.append(_Fr(ADJECTIVE[c.adj].forms[_form_index(gender, plural)], frozenset(en.add(c.adj))))
    if c.place is not None:
        fr += _pp(en, c.place)
    if c.time is not None:
        t = TIME[c.time]
        t_en, t_fr = en.add(t.en), words(t.fr)
        fr += [_Fr(w, frozenset(t_en[i] for i, j2 in t.links if j2 == j)) for j, w in enumerate(t_fr)]
    mark = "?" if c.question else "."
    fr.append(_Fr(mark, frozenset(en.add(mark))))
    fr = _sound(fr)
    for i in range(len(en.tokens) - 1, -1, -1):  # a -> an by the sound of the next word
        if en.tokens[i] == "a" and english_an(en.tokens[i + 1]):
            en.tokens[i] = "an"
    links = frozenset((e, j) for j, t in enumerate(fr) for e in t.links)
    return AlignedPair(_join(en.tokens, False), _join([t.word for t in fr], True), links)

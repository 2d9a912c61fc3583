"""Which frames are grammatical: determiners against number and countability, adjective order, the preposition
a place takes, the tenses a verb and a time phrase allow, and grammar 2's constructions (pronouns, question
words, imperatives, adverbs, idioms, relative clauses...). The parser accepts exactly these frames; the
generator draws only these, with sense restrictions on top (a verb's subjects and objects, an adjective's nouns).
"""

from __future__ import annotations

from transformer.data.corpora.teaching.frames import (
    BE_KINDS,
    BE_TENSES,
    IMPERATIVES,
    INDEFINITE,
    KINDS,
    TENSES,
    WH,
    Clause,
    NounPhrase,
    PrepPhrase,
)
from transformer.data.corpora.teaching.lexicon import (
    ADJECTIVE,
    ADVERBS,
    COMPOUNDS,
    FURNITURE_PREPOSITIONS,
    IDIOMS,
    NOUN,
    NUMBER,
    OBJECT_PRONOUNS,
    PLACE_PREPOSITIONS,
    POSSESSIVES,
    PRONOUNS,
    RELATIVE_WORDS,
    TIME,
    VERB,
    WEATHER_ADJECTIVES,
)

_ANIMATE = ("people", "family", "animals")
_PEOPLE = ("people", "family")


def _plain(np: NounPhrase) -> bool:
    return np.owner is None and np.modifier is None and np.also is None and np.rel is None


def valid_np(np: NounPhrase, role: str) -> bool:
    """Whether a noun phrase is grammatical in a role ("subject", "object", "prep", "owner")."""
    if np.pronoun:
        table = PRONOUNS if role == "subject" else OBJECT_PRONOUNS if role in ("object", "prep") else {}
        return np.head in table and not np.adjs and not np.plural and _plain(np)
    noun = NOUN.get(np.head)
    if noun is None or (noun.mass and np.plural) or not all(a in ADJECTIVE for a in np.adjs):
        return False
    pre = [ADJECTIVE[a].pre for a in np.adjs]
    if len(np.adjs) > 2 or len(set(np.adjs)) < len(np.adjs) or pre.count(True) > 1 or pre.count(False) > 1:
        return False
    if pre == [False, True]:  # English puts the size/age adjective first: "a big red car"
        return False
    if np.modifier is not None and (np.modifier, np.head) not in COMPOUNDS:
        return False
    if np.also is not None:
        second = np.also
        if role not in ("subject", "object") or np.rel is not None or np.owner is not None or second.head == np.head:
            return False
        if second.pronoun or second.also is not None or not valid_np(second, role):
            return False
    if np.owner is not None:
        return np.det == "'s" and role != "owner" and _valid_owner(np.owner)
    if np.rel is not None and (role not in ("subject", "object") or not _valid_relative(np)):
        return False
    d = np.det
    if d in ("a", "one", "this"):
        return not np.plural and (d == "this" or not noun.mass)
    if d in INDEFINITE:
        return role == "object" or (role == "subject" and d == "some" and np.plural)
    if d in NUMBER or d == "these":
        return np.plural and not noun.mass
    return d == "the" or d in POSSESSIVES


def _valid_owner(owner: NounPhrase) -> bool:
    """ "the boy's", "my mother's", "the children's": a singular (or irregular plural) animate noun phrase."""
    noun = NOUN.get(owner.head)
    if owner.pronoun or noun is None or noun.category not in _ANIMATE or not _plain(owner):
        return False
    if owner.plural and noun.en_plural.endswith("s"):
        return False
    return owner.det in ("the", "a", "this", "these", *POSSESSIVES) and valid_np(owner, "owner")


def _valid_relative(antecedent: NounPhrase) -> bool:
    """A relative clause on a noun: its subject ("who sleeps") or object ("that she ate") is the relative word."""
    r = antecedent.rel
    people = NOUN[antecedent.head].category in _PEOPLE
    if r.kind not in ("trans", "intr") or r.tense not in ("present", "past", "future") or r.question or r.wh:
        return False
    if r.imperative or r.adverb or r.time or r.place or r.contract or r.to:
        return False
    gaps = [np for np in (r.subject, r.obj) if np is not None and np.det == "rel"]
    if len(gaps) != 1 or gaps[0].head not in RELATIVE_WORDS:
        return False
    word = gaps[0].head
    if (word == "who" and not people) or (word == "which" and people):
        return False
    if gaps[0] is r.obj and (word == "who" or r.subject.rel is not None):
        return False
    if gaps[0] is r.subject and r.obj is not None and (r.obj.rel is not None or r.obj.pronoun):
        return False
    return valid(r, relative=True)


def _valid_place(pp: PrepPhrase) -> bool:
    noun = NOUN.get(pp.np.head)
    if noun is None or not _plain(pp.np) or not valid_np(pp.np, "prep") or pp.np.det in INDEFINITE[1:]:
        return False
    if "furn" in noun.flags:
        return pp.prep in FURNITURE_PREPOSITIONS
    if noun.locative is None:
        return False
    return pp.prep == noun.locative[0] or pp.prep in PLACE_PREPOSITIONS


def _animate(np: NounPhrase) -> bool:
    return np.pronoun or np.det == "wh" or (np.head in NOUN and NOUN[np.head].category in _ANIMATE)


def _valid_forms(c: Clause) -> bool:
    """Grammar 2's clause-level constraints: imperatives, question words, adverbs, contractions."""
    if not c.contract <= {"neg", "subj"} or c.please not in ("", "start", "end"):
        return False
    if c.question and c.negated:
        return False
    if c.imperative is not None:
        you = "we" if c.imperative == "nous" else "you"
        if c.imperative not in IMPERATIVES or c.subject != NounPhrase(you, "pron") or c.question or c.adverb:
            return False
        if c.tense != "present" or c.time or (c.imperative == "vous") != bool(c.please):
            return False
        if c.kind not in ("trans", "intr", "motion", "give", "refl", "be_adj", "idiom"):
            return False
        if c.kind == "idiom" and (c.adj != "afraid" or not c.negated):  # "Don't be afraid."
            return False
        if c.obj is not None and c.obj.pronoun and c.obj.head == ("us" if c.imperative == "nous" else "you"):
            return False
    if c.wh is not None:
        if c.wh not in WH or not c.question:
            return False
        allowed = {"where": ("intr", "trans", "motion", "be_place", "refl"),
                   "when": ("intr", "trans", "motion", "give", "refl", "be_adj", "idiom"),
                   "why": ("intr", "trans", "motion", "give", "refl", "be_adj", "be_place", "idiom"),
                   "how": ("intr", "trans", "motion"),
                   "what": ("trans",),
                   "who": ("intr", "trans", "motion", "give", "refl", "be_adj", "be_place", "idiom")}[c.wh]
        if c.kind not in allowed or c.adverb:
            return False
        missing = {"where": c.place if c.kind != "motion" else c.to, "when": c.time, "what": c.obj}.get(c.wh)
        if missing is not None:
            return False
        if (c.wh == "who") != (c.subject.det == "wh") or (c.wh == "where" and c.kind == "be_place" and c.negated):
            return False
    elif c.subject.det == "wh":
        return False
    if c.adverb is not None:
        if c.adverb not in ADVERBS or c.question or c.negated or c.time:
            return False
        if c.tense not in ("present", "past", "future") or c.kind in ("there", "weather", "age"):
            return False
    if c.subject.also is not None and (c.imperative or c.wh):
        return False
    return not (c.obj is not None and c.obj.also is not None and (c.negated or c.adverb == "never"))


def valid(c: Clause, relative: bool = False) -> bool:
    """Syntactic well-formedness (the generator adds sense restrictions on top; the parser checks only this)."""
    if c.kind not in KINDS or c.tense not in TENSES or not _valid_forms(c):
        return False
    if c.subject.det == "rel":
        if not relative:
            return False
    elif c.kind == "weather":
        if c.subject != NounPhrase("it", "it"):
            return False
    elif c.subject.det != "wh" and not valid_np(c.subject, "object" if c.kind == "there" else "subject"):
        return False
    if c.obj is not None and c.obj.det == "rel" and not relative:
        return False
    if c.time is not None and (c.time not in TIME or c.tense not in TIME[c.time].tenses):
        return False
    if c.kind in BE_KINDS or (c.kind == "weather" and c.verb == "be"):
        return _valid_be(c)
    v = VERB.get(c.verb)
    if v is None or c.kind not in v.kinds or c.adj is not None:
        return False
    if (c.tense == "progressive" and "stative" in v.flags) or (c.tense == "past" and "nopast" in v.flags):
        return False
    if c.tense in ("going", "just") and (c.time or (c.tense == "just" and c.negated)):
        return False
    if c.kind == "weather":
        return c.tense in ("present", "progressive", "past", "future") and not (c.obj or c.to)
    if c.place is not None and not _valid_place(c.place):
        return False
    if c.kind == "refl":
        return c.obj is None and c.to is None
    needs_obj = c.kind in ("trans", "give") and c.wh != "what"
    needs_to = c.kind == "give" or (c.kind == "motion" and c.wh != "where")
    if needs_obj != (c.obj is not None) or needs_to != (c.to is not None):
        return False
    if c.obj is not None and c.obj.det != "rel" and not _valid_object(c, v):
        return False
    if c.to is not None:
        want = "to" if c.kind == "give" else ("at" if "at" in v.flags else "to")
        if c.to.prep != want or not valid_np(c.to.np, "prep") or c.to.np.det in INDEFINITE[1:]:
            return False
        if c.to.np.pronoun and (c.kind != "give" or (c.obj is not None and c.obj.pronoun)):
            return False
        if c.to.np.pronoun and not _other_person(c, c.to.np):
            return False
        if c.kind == "motion" and NOUN[c.to.np.head].locative is None:
            return False
        if not c.to.np.pronoun and not _plain(c.to.np) and c.to.np.owner is None:
            return False
    return c.kind != "intr" or "place" not in v.flags or c.place is not None or c.wh == "where"


def _valid_object(c: Clause, v) -> bool:
    obj = c.obj
    if not valid_np(obj, "object"):
        return False
    if obj.pronoun:
        if c.kind != "trans":
            return False
        return _other_person(c, obj)
    d = obj.det
    if "generic" in v.flags and d not in ("the", "", "this", "these", "'s") and d not in POSSESSIVES:
        return False
    return not ((d == "any" and not (c.negated or c.question)) or (d == "some" and (c.negated or c.question)))


def _other_person(c: Clause, pronoun: NounPhrase) -> bool:
    """An object pronoun is not the subject itself ("I see me" is reflexive, outside the grammar)."""
    subject_person = PRONOUNS[c.subject.head][1] if c.subject.pronoun else 2
    return not (OBJECT_PRONOUNS[pronoun.head][3] == subject_person and subject_person in (0, 1, 3))


def _valid_be(c: Clause) -> bool:
    if c.verb != "be" or c.tense not in BE_TENSES or c.obj or c.to:
        return False
    if c.kind == "be_adj":
        if c.adj in IDIOMS and c.adj in ADJECTIVE and _animate(c.subject):  # the boy is cold -> a froid
            return False
        return c.adj in ADJECTIVE and c.place is None
    if c.kind == "idiom":
        if c.adj in ADJECTIVE and not _animate(c.subject):  # the soup is cold -> est froide
            return False
        return c.adj in IDIOMS and c.place is None
    if c.kind == "age":
        return c.adj in NUMBER and c.place is None and not c.subject.also
    if c.kind == "weather":
        return c.adj in WEATHER_ADJECTIVES and c.place is None
    if c.kind == "there":
        s = c.subject
        if s.det not in ("a", "some", "any", "", *NUMBER) or s.owner or s.also or s.rel or s.pronoun:
            return False
        if (s.det == "any") != (c.negated or c.question) and s.det in ("any", "some"):
            return False
        if s.det == "" and not (c.negated or c.question) and not s.plural and not NOUN[s.head].mass:
            return False
        return c.adj is None and (c.place is None or _valid_place(c.place))
    if c.wh == "where":
        return c.place is None and c.adj is None
    return c.adj is None and c.place is not None and _valid_place(c.place)

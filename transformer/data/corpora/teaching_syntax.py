"""Which frames are grammatical: determiners against number and countability, adjective order, the preposition
a place takes, the tenses a verb and a time phrase allow. The parser accepts exactly these frames; the
generator draws only these, with sense restrictions on top (a verb's subjects and objects, an adjective's nouns).
"""

from __future__ import annotations

from transformer.data.corpora.teaching_grammar import (
    BE_TENSES,
    INDEFINITE,
    KINDS,
    TENSES,
    Clause,
    NounPhrase,
    PrepPhrase,
)
from transformer.data.corpora.teaching_lexicon import (
    ADJECTIVE,
    FURNITURE_PREPOSITIONS,
    NOUN,
    NUMBER,
    PLACE_PREPOSITIONS,
    POSSESSIVES,
    PRONOUNS,
    TIME,
    VERB,
)


def valid_np(np: NounPhrase, role: str) -> bool:
    """Whether a noun phrase is grammatical in a role ("subject", "object", "prep")."""
    if np.pronoun:
        return role == "subject" and np.head in PRONOUNS and not np.adjs and not np.plural
    noun = NOUN.get(np.head)
    if noun is None or (noun.mass and np.plural) or not all(a in ADJECTIVE for a in np.adjs):
        return False
    pre = [ADJECTIVE[a].pre for a in np.adjs]
    if len(np.adjs) > 2 or len(set(np.adjs)) < len(np.adjs) or pre.count(True) > 1 or pre.count(False) > 1:
        return False
    if pre == [False, True]:  # English puts the size/age adjective first: "a big red car"
        return False
    d = np.det
    if d in ("a", "one", "this"):
        return not np.plural and (d == "this" or not noun.mass)
    if d in INDEFINITE:
        return role == "object" or (role == "subject" and d == "some" and np.plural)
    if d in NUMBER or d == "these":
        return np.plural and not noun.mass
    return d == "the" or d in POSSESSIVES


def _valid_place(pp: PrepPhrase) -> bool:
    noun = NOUN.get(pp.np.head)
    if noun is None or not valid_np(pp.np, "prep") or pp.np.det in INDEFINITE[1:]:
        return False
    if "furn" in noun.flags:
        return pp.prep in FURNITURE_PREPOSITIONS
    if noun.locative is None:
        return False
    return pp.prep == noun.locative[0] or pp.prep in PLACE_PREPOSITIONS


def valid(c: Clause) -> bool:
    """Syntactic well-formedness (the generator adds sense restrictions on top; the parser checks only this)."""
    if c.kind not in KINDS or c.tense not in TENSES or not valid_np(c.subject, "subject"):
        return False
    if c.time is not None and (c.time not in TIME or c.tense not in TIME[c.time].tenses):
        return False
    if c.kind.startswith("be"):
        if c.verb != "be" or c.tense not in BE_TENSES or c.obj or c.to:
            return False
        if c.kind == "be_adj":
            return c.adj in ADJECTIVE and c.place is None
        return c.adj is None and c.place is not None and _valid_place(c.place)
    v = VERB.get(c.verb)
    if v is None or c.kind not in v.kinds or c.adj is not None:
        return False
    if (c.tense == "progressive" and "stative" in v.flags) or (c.tense == "past" and "nopast" in v.flags):
        return False
    if c.place is not None and not _valid_place(c.place):
        return False
    if (c.kind in ("trans", "give")) != (c.obj is not None) or (c.kind in ("motion", "give")) != (c.to is not None):
        return False
    if c.obj is not None:
        if not valid_np(c.obj, "object"):
            return False
        d = c.obj.det
        if "generic" in v.flags and d not in ("the", "", "this", "these") and d not in POSSESSIVES:
            return False
        if (d == "any" and not (c.negated or c.question)) or (d == "some" and (c.negated or c.question)):
            return False
    if c.to is not None:
        want = "to" if c.kind == "give" else ("at" if "at" in v.flags else "to")
        if c.to.prep != want or not valid_np(c.to.np, "prep") or c.to.np.det in INDEFINITE[1:]:
            return False
        if c.kind == "motion" and NOUN[c.to.np.head].locative is None:
            return False
    return c.kind != "intr" or "place" not in v.flags or c.place is not None

"""The teaching grammar's realizer: a `Clause` frame in, English, French and their links out, all at once.

`realize` emits the English words first, remembering which English word plays which part (the determiner, the
auxiliary, "not", the lexical verb...); each French word is then written with the English words it translates,
so links come from the grammar, never from guessing. Inside a construction that does not align word for word
(avoir faim, il y a, va manger, vient de manger, il fait froid) the grammar gives the sure links and marks the
rest of the block possible. A last pass applies French elision and contraction (le -> l', à le -> au).
Words are those of `transformer.data.words`; frames in `frames`, noun phrases in `french`.
"""

from __future__ import annotations

from dataclasses import replace

from transformer.data.corpora.teaching.frames import (
    BE_TENSES,
    INDEFINITE,
    KINDS,
    TENSES,
    AlignedPair,
    Clause,
    NounPhrase,
    PrepPhrase,
)
from transformer.data.corpora.teaching.french import (
    English,
    Fr,
    agreement,
    english_articles,
    form_index,
    join,
    noun_phrase,
    sound,
)
from transformer.data.corpora.teaching.lexicon import (
    ADJECTIVE,
    ADVERBS,
    IDIOMS,
    LOCATIVE,
    NOUN,
    NUMBER,
    OBJECT_PRONOUNS,
    PLEASE,
    PREPOSITIONS,
    REFLEXIVE_PRONOUNS,
    TIME,
    VERB,
    WEATHER_ADJECTIVES,
    WH_WORDS,
)
from transformer.data.corpora.teaching.morphology import (
    french_conjugation,
    french_imperative,
    french_imperfect,
    french_vous,
)
from transformer.data.words import words

__all__ = ["BE_TENSES", "INDEFINITE", "KINDS", "TENSES", "AlignedPair", "Clause", "NounPhrase", "PrepPhrase",
           "agreement", "inverted", "realize"]


def _table(infinitive: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(present, future, imperfect) by person."""
    present, future, _ = french_conjugation(infinitive)
    return present, future, french_imperfect(present[3], infinitive)


_ETRE, _AVOIR, _FAIRE = _table("être"), _table("avoir"), _table("faire")
_POUVOIR, _VOULOIR = _table("pouvoir")[0], _table("vouloir")[0]
_ALLER, _VENIR = _table("aller")[0], _table("venir")[0]
_BE_PRESENT = ("am", "are", "is", "are", "are")
_BE_PAST = ("was", "were", "was", "were", "were")
_SUBJ_CONTRACTIONS = {"am": "m", "is": "s", "are": "re", "will": "ll", "has": "s", "have": "ve"}
_CONTRACTING = {"i", "you", "he", "she", "we", "they", "it", "there", "who", "where", "what", "how"}
_NEG_CONTRACTIONS = {"do": "don'", "does": "doesn'", "did": "didn'", "is": "isn'", "are": "aren'", "was": "wasn'",
                     "were": "weren'", "will": "won'", "has": "hasn'", "have": "haven'"}
Words = list[tuple[str, str]]  # English words and their roles


def inverted(c: Clause) -> bool:
    """Whether a question puts its subject pronoun after the verb ("Où dort-il ?") rather than use est-ce que:
    a question word, a pronoun other than I, a simple tense, no negation."""
    simple = c.tense not in ("past", "just") or c.kind in ("be_adj", "be_place", "idiom", "age")
    return (c.wh in ("where", "when", "why", "how") and c.subject.pronoun and c.subject.head != "I" and simple
            and not c.negated and c.kind not in ("there", "weather"))


def _where_is(c: Clause) -> bool:  # "Where is the cat?" -> "Où est le chat ?"
    return c.wh == "where" and c.kind == "be_place" and not c.subject.pronoun


def _english_verb(c: Clause, person: int) -> tuple[Words, Words]:
    """English verb words before and after the subject, each with its roles: q (question auxiliary), a (carries
    tense: the French finite verb), n (not), l (lexical verb), m (want), t (the "to" of "want to", "going to"),
    g (going), j (just), v (a frequency adverb)."""
    neg = [("not", "n")] if c.negated else []
    adv = [(c.adverb, "v")] if c.adverb else []
    if c.imperative:
        head = [("let'", "a"), ("s", "a")] + neg if c.imperative == "nous" else [("do", "a")] + neg if c.negated else []
        if c.verb == "be":
            return [], head + [("be", "l" if head else "al")]
        v = VERB[c.verb]
        return [], head + [(v.base, "l" if head else "al")] + [(w, "l") for w in (v.particle or "").split()]
    if c.verb == "be":
        if c.tense == "future":
            head, rest = ("will", "a"), neg + adv + [("be", "l")]
        else:
            head, rest = ((_BE_PAST if c.tense == "past" else _BE_PRESENT)[person], "al"), neg + adv
        asked = c.question and c.subject.det != "wh"  # "Who is hungry?" keeps the order of a statement
        return ([(head[0], "q" + head[1])], rest) if asked else ([], [head] + rest)
    v = VERB[c.verb]
    third = person == 2
    lexical = {"progressive": v.ing, "just": v.pp}.get(c.tense, v.base)
    particle = [(w, "l") for w in (v.particle or "").split()]
    tail = [(lexical, "l")] + particle
    if c.tense == "want":
        tail = [("want", "m"), ("to", "t"), (v.base, "l")] + particle
    elif c.tense == "going":
        tail = [("going", "g"), ("to", "t"), (v.base, "l")] + particle
    elif c.tense == "just":
        tail = [("just", "j")] + tail
    be = _BE_PRESENT[person]
    aux = {"progressive": be, "going": be, "past": "did", "future": "will", "can": "can",
           "just": "has" if third else "have"}.get(c.tense, "does" if third else "do")
    if c.question and not (c.wh == "who" and c.subject.det == "wh"):
        return [(aux, "qa")], tail
    if c.negated:
        if c.tense == "can":
            return [], ([("can'", "a"), ("t", "n")] if "neg" in c.contract else [("cannot", "an")]) + tail
        return [], [(aux, "a"), ("not", "n")] + tail
    if c.tense in ("present", "past"):
        finite = v.past if c.tense == "past" else v.s3 if third else v.base
        return [], adv + [(finite, "al")] + particle
    if c.tense == "want":
        return [], [("wants" if third else "want", "am")] + tail[1:]
    return [], [(aux, "a")] + adv + tail


def _finite(c: Clause, person: int, roles: dict[str, frozenset[int]]) -> tuple[Fr, list[Fr], bool]:
    """The French finite verb, what follows it before any object (participle, "de", infinitive), and whether
    clitic pronouns go before the infinitive rather than the finite verb."""
    a, lex = roles["a"], roles["l"]
    tense = {"present": 0, "future": 1, "past": 2}.get(c.tense, 0)
    if c.imperative:
        infinitive = "avoir" if c.kind == "idiom" else "être" if c.verb == "be" else VERB[c.verb].fr
        return Fr(_imperative_of(infinitive, c.imperative), a | lex), [], False
    if c.kind in ("idiom", "age"):
        return Fr(_AVOIR[tense][person], a | lex), [], False
    if c.kind == "there":
        return Fr(_AVOIR[tense][2], a | lex), [], False
    if c.verb == "be":
        if c.kind == "weather":
            return Fr(_FAIRE[tense][2], a | lex), [], False
        return Fr(_ETRE[tense][person], a | lex), [], False
    v = VERB[c.verb]
    infinitive = Fr(v.fr, roles["t"] | lex)
    if c.tense == "past":
        return Fr((_ETRE if v.etre else _AVOIR)[0][person], a), [Fr(v.participle, lex, "pp")], False
    if c.tense == "can":
        return Fr(_POUVOIR[person], a), [infinitive], True
    if c.tense == "want":
        return Fr(_VOULOIR[person], a | roles["m"]), [infinitive], True
    if c.tense == "going":  # is going to eat -> va manger, a block
        infinitive.maybe = a | roles["g"]
        return Fr(_ALLER[person], a | roles["g"], maybe=roles["t"] | lex), [infinitive], True
    if c.tense == "just":  # has just eaten -> vient de manger, a block
        infinitive.maybe = a | roles["j"]
        de = Fr("de", roles["j"], "de", maybe=a | lex)
        return Fr(_VENIR[person], a, maybe=roles["j"] | lex), [de, infinitive], True
    return Fr((v.future if c.tense == "future" else v.present)[person], a | lex), [], False


def _imperative_of(infinitive: str, who: str) -> str:
    verbs = {v.fr: v.present for v in VERB.values()}  # the verb's own table (Lefff's for grammar 2's verbs)
    present = _ETRE[0] if infinitive == "être" else _AVOIR[0] if infinitive == "avoir" else verbs[infinitive]
    tu, nous, vous = french_imperative(present, french_vous(present[3], infinitive), infinitive)
    return {"tu": tu, "nous": nous, "vous": vous}[who]


def _agree(participle: Fr, gender: str, plural: bool) -> None:
    participle.word += ("e" if gender == "f" else "") + ("s" if plural and not participle.word.endswith("s") else "")


def _clause(en: English, c: Clause, antecedent: NounPhrase | None = None) -> list[Fr]:
    """Writes the English of a clause and returns its French (without the final mark)."""
    subject = c.subject
    agree_np = antecedent if subject.det == "rel" and antecedent is not None else subject
    person, gender, plural = agreement(replace(agree_np, rel=None))
    if c.imperative:
        person = {"tu": 1, "nous": 3, "vous": 1}[c.imperative]
        plural = c.imperative == "nous"
    before, after = _english_verb(c, person)
    roles: dict[str, set[int]] = {r: set() for r in "qanlmtgjv"}

    def emit(group: Words) -> None:
        for word, role in group:
            (i,) = en.add(word)
            for r in role:
                roles[r].add(i)

    fr: list[Fr] = []
    obj_rel = c.obj is not None and c.obj.det == "rel"
    if obj_rel:
        fr.append(Fr("que", frozenset(en.add(c.obj.head)), "elide"))
    if c.wh and c.wh != "who":
        fr.append(Fr(WH_WORDS[c.wh], frozenset(en.add(c.wh))))
    emit(before)
    subject_fr, at_subject = _subject(en, c)
    emit(after)
    _contract(en, c, at_subject)
    frozen = {r: frozenset(s) for r, s in roles.items()}
    if c.question and not inverted(c) and not _where_is(c) and c.subject.det != "wh":
        if c.wh == "what":
            fr += [Fr(w, frozen["q"]) for w in ("est", "-", "ce")] + [Fr("que", frozen["q"], "elide")]
        else:
            fr += [Fr(w, frozen["q"], "elide" if w == "que" else "") for w in ("est", "-", "ce", "que")]
    finite, rest, clitics_late = _finite(c, person, frozen)
    affirmative = c.imperative is not None and not c.negated  # pronouns follow the verb: Mange-le. Lève-toi.
    clitics: list[Fr] = []  # before the verb, in French order: reflexive or me/te/nous, le/la/les, lui/leur
    late: list[Fr] = []     # after an affirmative imperative, hyphenated
    if c.kind == "refl":
        pron = "vous" if c.imperative == "vous" else REFLEXIVE_PRONOUNS[person]
        (late if affirmative else clitics).append(Fr(pron, frozen["l"], "refl"))
    obj_fr: list[Fr] = []
    if c.obj is not None and c.obj.pronoun:
        direct = OBJECT_PRONOUNS[c.obj.head]
        links = frozenset(en.add(c.obj.head))
        if affirmative:
            late.append(Fr(direct[2][0], links))
        else:
            clitics.append(Fr(direct[0], links, "elide" if direct[0] in ("me", "te", "le", "la") else ""))
        if c.tense == "past" and rest and rest[0].tag == "pp":
            _agree(rest[0], direct[4], direct[3] >= 3)
    elif c.obj is not None and not obj_rel:
        generic = "generic" in VERB[c.verb].flags
        obj_fr = noun_phrase(en, c.obj, generic=generic, neg_de=c.negated or c.adverb == "never",
                             relative=_relative)
    if obj_rel and c.tense == "past" and rest and rest[0].tag == "pp" and antecedent is not None:
        _, g, p = agreement(replace(antecedent, rel=None))
        _agree(rest[0], g, p)
    if rest and rest[0].tag == "pp" and (c.kind == "refl" or VERB[c.verb].etre):
        _agree(rest[0], gender, plural)
    to_fr = _pp(en, c.to) if c.to is not None and not c.to.np.pronoun else []
    if c.to is not None and c.to.np.pronoun:
        links = frozenset(en.add(c.to.prep) + en.add(c.to.np.head))
        indirect = OBJECT_PRONOUNS[c.to.np.head]
        if affirmative:
            late.append(Fr(indirect[2][1], links))
        else:
            clitics.append(Fr(indirect[1], links, "elide" if indirect[1] in ("me", "te") else ""))
    neg = c.negated or c.adverb == "never"
    ne = [Fr("ne", frozen["v"] if c.adverb == "never" else frozen["n"], "elide")] if neg else []
    pas = [Fr("jamais" if c.adverb == "never" else "pas", frozen["v"] if c.adverb == "never" else frozen["n"])]
    pas = pas if neg else []
    adverb = [Fr(ADVERBS[c.adverb], frozen["v"])] if c.adverb and c.adverb != "never" else []
    if c.kind == "there":  # Il y a: there -> il, y; is -> a; the rest of the block possible
        block = frozen["a"] | frozen["l"]
        subject_fr[0].maybe = block
        clitics.insert(0, Fr("y", frozenset(at_subject), maybe=block))
        finite.maybe = frozenset(at_subject)
    if affirmative:
        for cl in late:
            cl.tag, cl.word = "", {"me": "moi", "te": "toi"}.get(cl.word, cl.word)
        verb_group = [finite] + [w for cl in late for w in (Fr("-", cl.links), cl)]
    elif clitics_late:
        verb_group = ne + [finite] + pas + adverb + rest[:-1] + clitics + rest[-1:]
    else:
        verb_group = ne + clitics + [finite] + pas + adverb + rest
    if inverted(c):
        at = verb_group.index(finite) + 1
        pron = subject_fr[0]
        hyphens = [Fr("-", pron.links)]
        if finite.word.endswith(("a", "e")) and pron.word in ("il", "elle"):
            hyphens += [Fr("t", pron.links), Fr("-", pron.links)]
        verb_group[at:at] = hyphens + [pron]
        subject_fr = []
    if _where_is(c):
        fr += [finite] + subject_fr
    else:
        fr += subject_fr + verb_group
    fr += obj_fr + to_fr + _complement(en, c, gender, plural, finite, frozen)
    if c.place is not None:
        fr += _pp(en, c.place)
    if c.time is not None:
        t = TIME[c.time]
        t_en, t_fr = en.add(t.en), words(t.fr)
        fr += [Fr(w, frozenset(t_en[i] for i, j2 in t.links if j2 == j)) for j, w in enumerate(t_fr)]
    return fr


def _subject(en: English, c: Clause) -> tuple[list[Fr], tuple[int, ...]]:
    s = c.subject
    if c.imperative:
        return [], ()
    if c.kind == "there":
        at = en.add("there")
        return [Fr("il", frozenset(at))], at
    if c.kind == "weather":
        at = en.add("it")
        return [Fr("il", frozenset(at))], at
    if s.det == "wh":
        at = en.add("who")
        return [Fr("qui", frozenset(at))], at
    if s.det == "rel":
        at = en.add(s.head)
        return [Fr("qui", frozenset(at))], at
    start = len(en.tokens)
    out = noun_phrase(en, s, relative=_relative)
    return out, tuple(range(start, len(en.tokens)))


def _complement(en: English, c: Clause, gender: str, plural: bool, finite: Fr, roles) -> list[Fr]:
    """What follows "be": the adjective (agreeing), the idiom's noun (a faim), the age (a dix ans), the weather
    (fait froid), or for "there" the noun phrase (il y a un chat); with the block's possible links."""
    block_en = roles["a"] | roles["l"]
    if c.kind == "be_adj":
        k = 0 if c.imperative == "vous" else form_index(gender, plural)
        return [Fr(ADJECTIVE[c.adj].forms[k], frozenset(en.add(c.adj)))]
    if c.kind == "idiom":
        at = frozenset(en.add(c.adj))
        finite.maybe = at
        return [Fr(IDIOMS[c.adj], at, maybe=block_en)]
    if c.kind == "age":
        number_at = frozenset(en.add(c.adj))
        number = [Fr(w, number_at) for w in words(NUMBER[c.adj])]
        at = en.add("year old" if c.adj == "one" else "years old")
        finite.maybe = frozenset(at)
        return number + [Fr("an" if c.adj == "one" else "ans", frozenset(at), maybe=block_en)]
    if c.kind == "there":
        return noun_phrase(en, c.subject, neg_de=c.negated, relative=_relative)
    if c.kind == "weather" and c.verb == "be":
        at = frozenset(en.add(c.adj))
        finite.maybe = at
        return [Fr(WEATHER_ADJECTIVES[c.adj], at, maybe=block_en)]
    return []


def _relative(en: English, antecedent: NounPhrase) -> list[Fr]:
    return _clause(en, antecedent.rel, antecedent)


def _contract(en: English, c: Clause, at_subject: tuple[int, ...]) -> None:
    """English contractions, in place (one word stays one word): she is -> she' s, does not -> doesn' t."""
    t = en.tokens
    done = set()
    if "subj" in c.contract:
        for i in range(len(t) - 1):
            where = i == 0 and _where_is(c)
            if t[i].lower() in _CONTRACTING and t[i + 1] in _SUBJ_CONTRACTIONS and (i in at_subject or where):
                lexical_have = t[i + 1] in ("has", "have") and c.tense != "just"
                if not lexical_have:
                    t[i], t[i + 1] = t[i] + "'", _SUBJ_CONTRACTIONS[t[i + 1]]
                    done.add(i + 1)
    if "neg" in c.contract:
        for i in range(len(t) - 1):
            if t[i] in _NEG_CONTRACTIONS and t[i + 1] == "not" and i not in done:
                t[i], t[i + 1] = _NEG_CONTRACTIONS[t[i]], "t"


def _french_preposition(pp: PrepPhrase) -> str:
    locative = NOUN[pp.np.head].locative
    if pp.prep in LOCATIVE and locative and locative[0] == pp.prep:
        return locative[1]
    return PREPOSITIONS[pp.prep]


def _pp(en: English, pp: PrepPhrase) -> list[Fr]:
    """Writes the English of a prepositional phrase and returns its French."""
    prep = frozenset(en.add(pp.prep))
    fr = [Fr(w, prep, {"à": "a", "de": "de"}.get(w, "")) for w in _french_preposition(pp).split()]
    return fr + noun_phrase(en, pp.np, relative=_relative)


def realize(c: Clause) -> AlignedPair:
    """The English and French of a frame, with the gold links between their words."""
    en = English()
    please = frozenset(en.add("please")) if c.please == "start" else frozenset()
    fr = _clause(en, c)
    if c.please:
        comma = please or frozenset(en.add(","))
        please = please or frozenset(en.add("please"))
        fr += [Fr(",", comma)] + [Fr(w, please) for w in words(PLEASE[c.imperative])]
    mark = "?" if c.question else "."
    fr.append(Fr(mark, frozenset(en.add(mark))))
    fr = sound(fr)
    english_articles(en.tokens)
    links = frozenset((e, j) for j, t in enumerate(fr) for e in t.links)
    maybe = frozenset((e, j) for j, t in enumerate(fr) for e in t.maybe) - links
    return AlignedPair(join(en.tokens, False), join([t.word for t in fr], True), links, maybe)

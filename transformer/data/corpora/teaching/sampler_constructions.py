"""Grammar 2's random frames (`ConstructionSampler`): grammar 1's core clauses over the larger lexicon, plus
object pronouns, question words, imperatives, frequency adverbs, coordination, idioms (avoir faim, N ans, il y a,
il pleut, aller + infinitive, venir de), reflexive verbs, possessives and compounds, relative clauses, English
contractions. Each construction keeps the sense restrictions of grammar 1 (a verb's subjects and objects, an
adjective's nouns).
"""

from __future__ import annotations

from dataclasses import replace

from transformer.data.corpora.teaching.frames import BE_TENSES, Clause, NounPhrase, PrepPhrase
from transformer.data.corpora.teaching.lexicon import (
    ADVERBS,
    COMPOUNDS,
    IDIOMS,
    NOUN,
    NUMBER,
    OBJECT_PRONOUNS,
    POSSESSIVES,
    TIME,
    VERB,
    WEATHER_ADJECTIVES,
    selects,
)
from transformer.data.corpora.teaching.sampler_core import _LOCATED, _TENSES, CoreSampler, pick

_CONSTRUCTIONS = {"base": 34, "pronoun": 7, "wh": 9, "imperative": 7, "adverb": 5, "coordination": 4,
                  "idiom": 4, "age": 2, "there": 4, "weather": 2, "going": 4, "just": 3, "refl": 5,
                  "owner": 4, "compound": 3, "relative": 4}
_WH_KINDS = {"where": ("intr", "trans", "motion", "be_place", "refl"), "when": ("intr", "trans", "motion", "refl"),
             "why": ("intr", "trans", "motion", "refl", "be_adj", "idiom"), "how": ("intr", "trans", "motion"),
             "what": ("trans",), "who": ("intr", "trans", "motion", "refl", "be_adj", "idiom")}
_ANIMATE = frozenset({"people", "family", "animals"})
_PEOPLE = frozenset({"people", "family"})
_LEXICAL = ("trans", "intr", "motion", "give", "refl")


class ConstructionSampler(CoreSampler):
    def clause(self) -> Clause:
        construction = pick(self.rng, _CONSTRUCTIONS)
        c = super().clause() if construction == "base" else getattr(self, "_" + construction)()
        if self.rng.random() < 0.3:
            c = replace(c, contract=self.rng.choice([frozenset({"neg"}), frozenset({"subj"}),
                                                     frozenset({"neg", "subj"})]))
        return c

    def frame(self, kind: str, tense: str | None = None, negated: bool | None = None, question: bool | None = None,
              verb: str | None = None) -> Clause:
        """A grammar 1 style frame of a given kind (or a reflexive or idiom one)."""
        rng = self.rng
        negated = rng.random() < 0.25 if negated is None else negated
        question = (not negated and rng.random() < 0.2) if question is None else question
        parts: dict = {}
        if kind in ("be_adj", "be_place", "idiom"):
            verb, tense = "be", tense or rng.choice(BE_TENSES)
            if kind == "be_place":
                subject = self.subject(_LOCATED, question)
                parts["place"] = self.place(furniture=True)
            elif kind == "idiom":
                subject = self.subject(_ANIMATE, question)
                parts["adj"] = rng.choice(list(IDIOMS))
            else:
                subject = self.subject(self.view.all, question)
                suits = self.view.person_adjectives if subject.pronoun else self.adjectives(NOUN[subject.head])
                suits = [a for a in suits if a not in subject.adjs and a not in IDIOMS]
                parts["adj"] = rng.choice(suits) if suits else "big"
        else:
            v = VERB[verb or rng.choice(self.view.verbs_of[kind])]
            verb, tense = v.en, tense or pick(rng, _TENSES)
            subject = self.subject(v.subjects, question)
            parts.update(self.complements(v, kind, negated or question, place_share=0.2,
                                          furniture=kind in ("intr", "refl")))
            if tense in ("can", "want", "going", "just") and "stative" in v.flags:
                tense = "present"
        times = [t for t in TIME if tense in TIME[t].tenses]
        if times and rng.random() < 0.25:
            parts["time"] = rng.choice(times)
        return Clause(kind, subject, verb, tense, negated, question, **parts)

    def _verb_taking(self, kind: str, selection: frozenset[str]) -> str:
        verbs = [v for v in self.view.verbs_of[kind] if VERB[v].objects & selection]
        return self.rng.choice(verbs)

    def _pronoun(self) -> Clause:
        rng = self.rng
        if rng.random() < 0.35:
            c = self.frame("give")
            return replace(c, to=PrepPhrase("to", NounPhrase(rng.choice(list(OBJECT_PRONOUNS)), "pron")))
        c = self.frame("trans", verb=self._verb_taking("trans", _PEOPLE))
        return replace(c, obj=NounPhrase(rng.choice(list(OBJECT_PRONOUNS)), "pron"))

    def _wh(self) -> Clause:
        rng = self.rng
        wh = rng.choice(list(_WH_KINDS))
        kind = rng.choice(_WH_KINDS[wh])
        c = self.frame(kind, negated=False, question=True)
        if wh == "who":
            c = replace(c, subject=NounPhrase("who", "wh"), wh="who")
            return replace(c, adj=rng.choice(self.view.person_adjectives)) if kind == "be_adj" else c
        changes = {"where": {"place": None, "to": None} if kind == "motion" else {"place": None},
                   "when": {"time": None}, "what": {"obj": None}}.get(wh, {})
        if wh == "where" and kind == "motion" and rng.random() < 0.5:
            changes = {"place": None}  # "Where does she go?" or "Why ... to the park?"
            wh = "why"
        return replace(c, wh=wh, **changes)

    def _imperative(self) -> Clause:
        rng = self.rng
        who = pick(rng, {"tu": 50, "nous": 20, "vous": 30})
        subject = NounPhrase("we" if who == "nous" else "you", "pron")
        negated = rng.random() < 0.3
        please = rng.choice(["start", "end"]) if who == "vous" else ""
        kind = pick(rng, {"trans": 40, "intr": 15, "motion": 15, "give": 8, "refl": 12, "be_adj": 6, "idiom": 4})
        common = {"imperative": who, "please": please, "negated": negated, "question": False, "time": None,
                  "tense": "present", "subject": subject}
        if kind == "be_adj":
            return Clause("be_adj", subject, "be", adj=rng.choice(self.view.person_adjectives), **{
                k: v for k, v in common.items() if k != "subject"})
        if kind == "idiom":
            return Clause("idiom", subject, "be", adj="afraid", **{k: v for k, v in common.items() if k != "subject"}
                          | {"negated": True})
        c = replace(self.frame(kind, tense="present", negated=negated, question=False), **common)
        if kind == "trans" and rng.random() < 0.25 and VERB[c.verb].objects & _PEOPLE:
            addressee = "us" if who == "nous" else "you"
            c = replace(c, obj=NounPhrase(rng.choice([p for p in OBJECT_PRONOUNS if p != addressee]), "pron"))
        return c

    def _adverb(self) -> Clause:
        kind = pick(self.rng, {"trans": 35, "intr": 20, "motion": 10, "refl": 10, "be_adj": 15, "idiom": 5,
                               "be_place": 5})
        c = self.frame(kind, tense=self.rng.choice(["present", "present", "past", "future"]), negated=False,
                       question=False)
        return replace(c, adverb=self.rng.choice(list(ADVERBS)), time=None)

    def _coordination(self) -> Clause:
        rng = self.rng
        if rng.random() < 0.5:
            c = self.frame(rng.choice(["intr", "trans", "motion", "be_adj", "be_place"]))
            if c.subject.pronoun:
                return c
            selection = VERB[c.verb].subjects if c.verb != "be" else frozenset({NOUN[c.subject.head].category})
            second = self.np(self.nouns(selection), "subject")
            subject = replace(c.subject, also=second)
            if c.kind == "be_adj":
                return replace(c, subject=subject, adj=rng.choice(self.view.person_adjectives)
                               if selection & _PEOPLE else c.adj)
            return replace(c, subject=subject)
        c = self.frame("trans", negated=False)
        second = self.np(self.nouns(VERB[c.verb].objects), "object", generic="generic" in VERB[c.verb].flags)
        if c.question and second.det == "some":
            second = replace(second, det="any")
        return replace(c, obj=replace(c.obj, also=second))

    def _idiom(self) -> Clause:
        return self.frame("idiom")

    def _age(self) -> Clause:
        c = self.frame("idiom")
        return replace(c, kind="age", adj=self.rng.choice(list(NUMBER)))

    def _there(self) -> Clause:
        rng = self.rng
        negated = rng.random() < 0.25
        question = not negated and rng.random() < 0.2
        np = self.np(self.nouns(_LOCATED), "object")
        det = np.det
        if det not in ("a", "", "some") and det not in NUMBER:
            det = "a" if not np.plural else "some"
        if det in ("some",) and (negated or question):
            det = "any"
        if det == "" and not np.plural and not NOUN[np.head].mass:
            det = "a"
        np = replace(np, det=det, plural=np.plural and det != "a")
        place = self.place(furniture=True) if rng.random() < 0.85 else None
        tense = rng.choice(BE_TENSES)
        times = [t for t in TIME if tense in TIME[t].tenses]
        time = rng.choice(times) if rng.random() < 0.2 else None
        return Clause("there", np, "be", tense, negated, question, place=place, time=time)

    def _weather(self) -> Clause:
        rng = self.rng
        negated = rng.random() < 0.2
        question = not negated and rng.random() < 0.15
        if rng.random() < 0.5:
            verb, adj, tense = rng.choice(["rain", "snow"]), None, rng.choice(["present", "progressive", "past",
                                                                              "future"])
        else:
            verb, adj, tense = "be", rng.choice(list(WEATHER_ADJECTIVES)), rng.choice(BE_TENSES)
        times = [t for t in TIME if tense in TIME[t].tenses]
        time = rng.choice(times) if rng.random() < 0.4 else None
        return Clause("weather", NounPhrase("it", "it"), verb, tense, negated, question, adj=adj, time=time)

    def _going(self) -> Clause:
        return replace(self.frame(rng_kind(self), tense="going"), time=None)

    def _just(self) -> Clause:
        return replace(self.frame(rng_kind(self), tense="just", negated=False), time=None)

    def _refl(self) -> Clause:
        return self.frame("refl")

    def _owner(self) -> Clause:
        rng = self.rng
        c = self.frame(rng.choice(["trans", "be_adj", "intr", "be_place"]))
        det = rng.choice(["the", "the", "a", "this", *POSSESSIVES])
        owner = replace(self.np(self.nouns(_ANIMATE), "prep"), det=det, adjs=())
        irregular = not NOUN[owner.head].en_plural.endswith("s")
        owner = replace(owner, plural=owner.plural and irregular and det not in ("a", "this"))
        if c.obj is not None and not c.obj.pronoun and rng.random() < 0.5:
            return replace(c, obj=replace(c.obj, det="'s", owner=owner))
        if c.subject.pronoun:
            return c
        return replace(c, subject=replace(c.subject, det="'s", owner=owner))

    def _compound(self) -> Clause:
        rng = self.rng
        modifier, head = rng.choice([k for k in COMPOUNDS if k[1] in self.view.nouns])
        noun = NOUN[head]
        verbs = [v for v in self.view.verbs_of["trans"] if selects(VERB[v].objects, noun)]
        if verbs and rng.random() < 0.6:
            c = self.frame("trans", verb=rng.choice(verbs))
            return replace(c, obj=replace(c.obj, head=head, modifier=modifier, adjs=self._adjs(noun),
                                          plural=c.obj.plural and not noun.mass))
        c = self.frame("be_adj")
        if c.subject.pronoun:
            c = replace(c, subject=NounPhrase(head))
        suits = self.adjectives(noun) or ["new"]
        return replace(c, subject=replace(c.subject, head=head, modifier=modifier, adjs=()), adj=rng.choice(suits))

    def _adjs(self, noun) -> tuple[str, ...]:
        suits = self.adjectives(noun, False)
        return (self.rng.choice(suits),) if suits and self.rng.random() < 0.3 else ()

    def _relative(self) -> Clause:
        rng = self.rng
        c = self.frame(rng.choice(["be_adj", "be_place", "intr", "trans"]), question=False)
        host = "obj" if c.obj is not None and not c.obj.pronoun and rng.random() < 0.5 else "subject"
        np = getattr(c, host)
        if np.pronoun:
            return c
        noun = NOUN[np.head]
        people = noun.category in ("people", "family")
        if rng.random() < 0.55:  # the subject is the gap: "the man who sleeps", "the cat that eats fish"
            verbs = [v for kind in ("intr", "trans") for v in self.view.verbs_of[kind] if selects(VERB[v].subjects,
                                                                                                 noun)]
            if not verbs:
                return c
            v = VERB[rng.choice(verbs)]
            word = "who" if people else rng.choice(["that", "which"])
            obj = None
            if "trans" in v.kinds and ("intr" not in v.kinds or rng.random() < 0.6):
                obj = self.np(self.nouns(v.objects), "object", generic="generic" in v.flags)
                obj = replace(obj, det="" if obj.det in ("some", "any") else obj.det)
            kind = "trans" if obj is not None else "intr"
            rel = Clause(kind, NounPhrase(word, "rel"), v.en, rng.choice(["present", "past"]), rng.random() < 0.15,
                         obj=obj)
        else:  # the object is the gap: "the cake that the boy ate" -> "le gâteau que le garçon a mangé"
            verbs = [v for v in self.view.verbs_of["trans"] if selects(VERB[v].objects, noun)
                     and "generic" not in VERB[v].flags]
            if not verbs:
                return c
            v = VERB[rng.choice(verbs)]
            subject = self.subject(v.subjects, False)
            rel = Clause("trans", subject, v.en, rng.choice(["present", "past", "past"]), rng.random() < 0.15,
                         obj=NounPhrase(rng.choice(["that", "which"]) if not people else "that", "rel"))
        return replace(c, **{host: replace(np, rel=rel, det="the" if np.det in ("", "some", "any") else np.det)})


def rng_kind(sampler: ConstructionSampler) -> str:
    return pick(sampler.rng, {"trans": 45, "intr": 20, "motion": 20, "refl": 15})

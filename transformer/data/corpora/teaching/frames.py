"""The teaching grammar's typed frames: a `Clause` of noun phrases, and the `AlignedPair` it realizes into.

A frame says what a sentence is (kind, subject, verb, tense, negation, question word, object...), never how it
is spelled; `realizer.realize` writes both languages from it. Grammar 1 (the corpus of the shipped
teaching model) uses only the fields that existed then; grammar 2 adds the others, each defaulting to "absent".
"""

from __future__ import annotations

from dataclasses import dataclass

# be_adj: "The cat is black."; be_place: "The cat is in the house."; grammar 2 adds
#   idiom "The boy is hungry." -> "a faim", age "She is ten years old." -> "a dix ans",
#   there "There is a cat in the garden." -> "Il y a", weather "It is raining." -> "Il pleut.",
#   refl "She wakes up." -> "Elle se réveille."
KINDS = ("trans", "intr", "motion", "give", "be_adj", "be_place", "idiom", "age", "there", "weather", "refl")
# grammar 2 adds going ("is going to eat" -> "va manger") and just ("has just eaten" -> "vient de manger")
TENSES = ("present", "progressive", "past", "future", "can", "want", "going", "just")
BE_TENSES = ("present", "past", "future")
BE_KINDS = ("be_adj", "be_place", "idiom", "age", "there")
INDEFINITE = ("a", "some", "any", "")  # determiners that become "de" under negation ("pas de pain")
GRAMMARS = (1, 2)
GRAMMAR = 2  # the latest; 1 is the shipped teaching model's corpus, reproduced exactly
WH = ("where", "when", "why", "how", "what", "who")
IMPERATIVES = ("tu", "nous", "vous")


@dataclass(frozen=True)
class AlignedPair:
    src: str                                # English, e.g. "The young man buys a green bicycle."
    tgt: str                                # French, e.g. "Le jeune homme achète un vélo vert."
    links: frozenset[tuple[int, int]]       # sure links (src word index, tgt word index) over explain.words
    possible: frozenset[tuple[int, int]] = frozenset()  # possible-only links (P minus S): inside idiom blocks


@dataclass(frozen=True)
class NounPhrase:
    head: str                   # noun lemma; a pronoun ("I", "him") when det == "pron"; "who"/"that" when "rel"
    det: str = "the"            # "the", "a", "some", "any", "" (bare), "my", "two"..., "'s" (an owner's), "pron", "rel"
    plural: bool = False
    adjs: tuple[str, ...] = ()  # in English order: at most one French-before adjective, then one after
    owner: NounPhrase | None = None    # det "'s": "the boy's dog" -> "le chien du garçon"
    modifier: str | None = None        # a compound's first noun: "a kitchen table" -> "une table de cuisine"
    also: NounPhrase | None = None     # coordination: "the cat and the dog" -> "le chat et le chien"
    rel: Clause | None = None          # a relative clause whose subject or object is a "rel" noun phrase

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
    verb: str = "be"                 # a key of VERB, of WEATHER for "weather", or "be" for the be kinds
    tense: str = "present"           # one of TENSES ("progressive": is eating; "can"/"want": can eat, wants to eat)
    negated: bool = False
    question: bool = False           # "Does the dog eat?" -> "Est-ce que le chien mange ?"
    obj: NounPhrase | None = None    # trans, give
    to: PrepPhrase | None = None     # motion: destination ("to the park"); give: recipient ("to the boy")
    adj: str | None = None           # be_adj: "The cat is black."; idiom: "hungry"; age: the number
    place: PrepPhrase | None = None  # be_place: the complement; otherwise an optional place ("in the kitchen")
    time: str | None = None          # a key of TIME
    wh: str | None = None            # a question word (question is True); it stands for the missing part
    imperative: str | None = None    # "tu", "nous" ("Let's"), "vous" (with "please"); subject "you"/"we"
    please: str = ""                 # imperatives: "start" ("Please close...") or "end" ("..., please.")
    adverb: str | None = None        # a key of ADVERBS: "always", "never" (ne ... jamais)...
    contract: frozenset[str] = frozenset()  # English contractions: "neg" (doesn't), "subj" (I'm, she's, we'll)

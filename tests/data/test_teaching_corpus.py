"""The generated teaching corpus: golden examples from the docs, round trips through `align`, links, splits."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer.data.corpora.teaching import (
    GRAMMAR,
    TEACHING_SIZES,
    AlignedPair,
    align,
    build_teaching_corpus,
    vocabulary,
)
from transformer.data.corpora.teaching.corpus import combinations
from transformer.data.corpora.teaching.frames import Clause
from transformer.data.corpora.teaching.lexicon import ADJECTIVE, NOUN, NUMBER, PRONOUNS, VERB
from transformer.data.corpora.teaching.morphology import french_imperative, french_vous
from transformer.data.corpora.teaching.parser import parse
from transformer.data.corpora.teaching.realizer import realize
from transformer.data.words import format_links, parse_links, words

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "teaching-corpus.md"
PUNCTUATION = {".", "?"}


def _golden() -> list[tuple[str, str, str, str]]:
    """(English, French, sure links, possible links) of the docs' example tables (the first has no possible)."""
    rows = []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) in (3, 4) and re.fullmatch(r"(\d+-\d+ ?)+", cells[2]):
            possible = cells[3] if len(cells) == 4 else ""
            rows.append((cells[0], cells[1], cells[2], "" if possible == "-" else possible))
    return rows


GOLDEN = _golden()


@pytest.fixture(scope="module")
def corpus():
    return build_teaching_corpus(0)


@pytest.fixture(scope="module")
def every_pair(corpus) -> list[AlignedPair]:
    return list(corpus.train + corpus.dev + corpus.test)


@pytest.fixture(scope="module")
def frames(every_pair) -> dict[str, Clause | None]:
    """Each English sentence parsed once; `align(s)` is `realize(parse(s))`."""
    return {p.src: parse(p.src) for p in every_pair}


def test_docs_table_has_enough_examples():
    assert len(GOLDEN) >= 150


@pytest.mark.parametrize("english, french, links, possible", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_examples_from_the_docs(english, french, links, possible):
    pair = align(english)
    assert pair is not None
    assert (pair.src, pair.tgt, format_links(pair.links), format_links(pair.possible)) == (english, french, links,
                                                                                          possible)


@pytest.mark.parametrize("english, french", [
    ("The old man went to the market.", "Le vieil homme est allé au marché."),
    ("the young man buys a green bicycle", "Le jeune homme achète un vélo vert."),
    ("  The   cat is   black ", "Le chat est noir."),
    ("does the dog eat", "Est-ce que le chien mange ?"),
    ("She went to the beach.", "Elle est allée à la plage."),
    ("The girls came to the park.", "Les filles sont venues au parc."),
    ("I love my school.", "J'aime mon école."),
    ("He does not drink water.", "Il ne boit pas d'eau."),
    ("He does not like water.", "Il n'aime pas l'eau."),
    ("The red cars are new.", "Les voitures rouges sont nouvelles."),
    ("This old hotel is near the station.", "Ce vieil hôtel est près de la gare."),
    ("We give some bread to the ducks.", "Nous donnons du pain aux canards."),
    ("She eats small apples.", "Elle mange de petites pommes."),
    ("Is the baby sleeping?", "Est-ce que le bébé dort ?"),
    ("Did she arrive at the airport?", "Est-ce qu'elle est arrivée à l'aéroport ?"),
    ("Twenty horses sleep in the field.", "Vingt chevaux dorment dans le champ."),
    ("The beautiful white dresses are expensive.", "Les belles robes blanches sont chères."),
    ("I will buy a new umbrella tomorrow.", "J'achèterai un nouveau parapluie demain."),
    ("We are eating.", "Nous mangeons."),
    ("They call their mother.", "Ils appellent leur mère."),
    ("Was the clock broken?", "Est-ce que l'horloge était cassée ?"),  # mute h elides
    ("The owl sleeps.", "Le hibou dort."),  # aspirated h does not
])
def test_phenomena(english, french):
    pair = align(english)
    assert pair is not None and pair.tgt == french


@pytest.mark.parametrize("english", [
    "", "The dog flies to the moon.", "The dogs eats.", "The dog eat.", "A apple is red.", "Dog eats bread.",
    "The cat eat bread.", "He do not eat.", "The house are big.", "She eats some bread?", "Does the dog eat.",
    "The dog does not eat some bread.", "I is happy.", "The girl went in the school.", "He eats a bread.",
    "The green big car is new.", "The cat is black!", "The dog don't eat.", "He readed a book.",
])
def test_outside_the_grammar_is_none(english):
    assert align(english) is None


def test_sizes(corpus):
    sizes = TEACHING_SIZES[GRAMMAR]
    assert (len(corpus.train), len(corpus.dev), len(corpus.test)) == tuple(sizes[s] for s in ("train", "dev", "test"))


def test_every_pair_round_trips_through_align(every_pair, frames):
    bad = [p for p in every_pair if frames[p.src] is None or realize(frames[p.src]) != p]
    assert not bad, bad[:3]
    assert all(align(p.src) == p for p in every_pair[::50])


def test_words_and_links(every_pair):
    for p in every_pair:
        src, tgt = words(p.src), words(p.tgt)
        assert 3 <= sum(w[0].isalnum() for w in src) <= 15
        assert all(0 <= i < len(src) and 0 <= j < len(tgt) for i, j in p.links), p
        assert {i for i, _ in p.links} == set(range(len(src))), p    # every English word is linked
        assert {j for _, j in p.links} == set(range(len(tgt))), p    # and every French word
        assert not p.possible & p.links and all(0 <= i < len(src) and 0 <= j < len(tgt) for i, j in p.possible)
        for i, j in p.links:  # punctuation links to punctuation, and only to it
            assert (src[i] in PUNCTUATION) == (tgt[j] in PUNCTUATION), (p, src[i], tgt[j])
        assert p.tgt[0].isupper() and p.src[0].isupper()
        assert p.tgt.endswith((".", " ?")) and " ." not in p.tgt and "’" not in p.tgt


def _translations() -> dict[str, set[str]]:
    """English word form -> French words of its lemma's translation (all forms), for the content words."""
    known: dict[str, set[str]] = {}

    def add(en_forms, fr_text):
        for form in en_forms:
            known.setdefault(form.lower(), set()).update(w.lower() for w in words(fr_text))

    for n in NOUN.values():
        add(n.en.split() + n.en_plural.split(), f"{n.fr} {n.fr_plural}")
    for a in ADJECTIVE.values():
        add([a.en], " ".join(a.forms) + " " + (a.before_vowel or ""))
    for v in VERB.values():
        vous = french_vous(v.present[3], v.fr)
        french = (v.fr, v.participle, *v.present, *v.future, vous, *french_imperative(v.present, vous, v.fr))
        particle = [w for w in (v.particle or "").split() if w != "to"]  # "go to bed": "to" stays a function word
        add({v.base, v.s3, v.past, v.ing, v.pp, *particle},
            " ".join(french) + " " + " ".join(v.participle + e for e in ("e", "s", "es")))
    for en, fr in NUMBER.items():
        add([en], fr + (" une" if en == "one" else ""))
    return known


def test_content_links_join_a_word_and_its_translation(every_pair):
    known = _translations()
    elided = {"j'": "je", "l'": "le"}
    for p in every_pair[::5]:
        src, tgt = words(p.src), words(p.tgt)
        for i, j in p.links:
            en, fr = src[i].lower(), tgt[j].lower()
            if en in known and fr in known[en]:
                continue
            # A content word may also link to the article, contraction or preposition it brings (rule 2, 3, 5),
            # or to "est-ce que" as a question auxiliary; those are function words of a closed set.
            assert en not in known or elided.get(fr, fr) in _FUNCTION_FRENCH, (p, src[i], tgt[j])


_FUNCTION_FRENCH = {"le", "la", "les", "du", "de", "d'", "des", "au", "aux", "un", "une", "a", "ai", "as", "avons",
                    "ont", "est", "es", "suis", "sommes", "sont", "peut", "peux", "pouvons", "peuvent", "veut", "veux",
                    "voulons", "veulent", "-", "ce", "que", "qu'", "ne", "n'", "pas", "l'", "à", "tous", "hui",
                    "aujourd'", "matin", "soir", "nuit", "midi", "après", "semaine", "dernière", "prochaine",
                    "hier", "demain", "maintenant", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi",
                    "dimanche", "jours", "matins",
                    # grammar 2: reflexive pronouns (a part of their verb), est-ce que's "qu'", aller and venir as
                    # auxiliaries (va manger, vient de manger), the age idiom's "ans", a compound's preposition
                    "se", "s'", "me", "m'", "te", "t'", "nous", "vous", "toi", "moi", "va", "vas", "vais",
                    "allons", "vont", "vient", "viens", "venons", "viennent", "an", "ans", "en", "il", "y", "aura",
                    "lui", "leur", "avait", "fait", "faisait", "fera"}


def test_splits_are_disjoint_and_held_out_combinations_stay_out_of_train(corpus, frames):
    train_src, train_tgt = {p.src for p in corpus.train}, {p.tgt for p in corpus.train}
    for split in (corpus.dev, corpus.test):
        assert not {p.src for p in split} & train_src
        assert not {p.tgt for p in split} & train_tgt
    assert not {p.src for p in corpus.dev} & {p.src for p in corpus.test}
    assert not {p.tgt for p in corpus.dev} & {p.tgt for p in corpus.test}
    assert len(corpus.held_out) >= 30
    assert all(a in ADJECTIVE and n in NOUN for a, n in corpus.held_out)
    in_train = set().union(*(combinations(frames[p.src]) for p in corpus.train))
    assert not in_train & corpus.held_out
    for split in (corpus.dev, corpus.test):
        share = sum(bool(combinations(frames[p.src]) & corpus.held_out) for p in split) / len(split)
        assert 0.3 <= share <= 0.6


def _digest(corpus) -> str:
    text = repr((corpus.train, corpus.dev, corpus.test, sorted(corpus.held_out)))
    return hashlib.sha256(text.encode()).hexdigest()


def test_deterministic_across_processes_and_seeded(corpus):
    """Another process, with another string-hash seed, builds the same corpus; another seed builds another."""
    # The package's __init__ imports torch, which the corpus does not need: a bare package object skips it.
    code = ("import hashlib, sys, types; package = types.ModuleType('transformer'); "
            f"package.__path__ = [{str(ROOT / 'transformer')!r}]; sys.modules['transformer'] = package; "
            "from transformer.data.corpora.teaching import build_teaching_corpus as b; c = b(0); "
            "print(hashlib.sha256(repr((c.train, c.dev, c.test, sorted(c.held_out))).encode()).hexdigest())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) as process:
        # meanwhile seed 1, its held-out set and the start of its train split, which a 300-pair train split holds
        # as the full one does (test_a_larger_train_split_keeps_dev_and_test_and_begins_with_the_smaller_one)
        other = build_teaching_corpus(1, GRAMMAR, train_pairs=300)
        try:
            stdout, _ = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("the other process did not build the teaching corpus in 120 s")
    assert process.returncode == 0 and stdout.strip() == _digest(corpus)
    assert other.train[:100] != corpus.train[:100] and other.held_out != corpus.held_out


def test_format_and_parse_links_round_trip():
    links = frozenset({(2, 1), (0, 0), (10, 3), (1, 2)})
    assert format_links(links) == "0-0 1-2 2-1 10-3"
    assert parse_links(format_links(links)) == links
    assert parse_links("") == frozenset()


def test_vocabulary():
    groups = vocabulary()
    content = [pair for name, pairs in groups.items() if name not in ("pronouns", "possessives", "prepositions", "time")
               for pair in pairs]
    assert len(content) >= 1500
    for name in ("people", "animals", "food", "colours", "verbs", "numbers", "days"):
        assert groups[name], name
    assert ("cat", "chat") in groups["animals"] and ("go", "aller") in groups["verbs"]
    assert {en for en in PRONOUNS} == {en for en, _ in groups["pronouns"]}
    assert len(NUMBER) >= 20 and len(NOUN) == len({n.en for n in NOUN.values()})


def test_english_forms_are_unambiguous():
    """No English word form with its particle belongs to two verbs ("go" and "go to bed" differ by theirs), and
    none to both a noun and an adjective: the parser relies on it."""
    forms: dict[tuple[str, str | None], str] = {}
    for v in VERB.values():
        for form in {v.base, v.s3, v.past, v.ing}:
            assert forms.setdefault((form, v.particle), v.en) == v.en, form
    nouns = {w for n in NOUN.values() for w in (n.en, n.en_plural)}
    assert not nouns & set(ADJECTIVE)


def test_grammar_one_reproduces_the_shipped_models_corpus():
    """Grammar 1 is what checkpoints/en-fr-teaching was trained and scored on: its build must not move, so the
    fingerprint of every pair (recorded when grammar 2 was written) pins it."""
    c = build_teaching_corpus(0, grammar=1)
    assert (len(c.train), len(c.dev), len(c.test)) == (25_000, 500, 500)
    text = "\n".join(f"{p.src}\t{p.tgt}\t{format_links(p.links)}" for p in c.train + c.dev + c.test)
    digest = hashlib.sha256((text + "\n" + repr(sorted(c.held_out))).encode()).hexdigest()
    assert digest == "7c1bf4f855054892b8341a5aa0571f8971bbb78cf3a6a91c03c35d51f22f90a7"
    assert not any(p.possible for p in c.test)



def test_grammar_two_reproduces_the_shipped_models_corpus(corpus):
    """Grammar 2 is what checkpoints/en-fr-teaching is now trained and scored on: the fingerprint of every pair,
    its sure and possible links, pins its build too."""
    text = "\n".join(f"{p.src}\t{p.tgt}\t{format_links(p.links)}\t{format_links(p.possible)}"
                     for p in corpus.train + corpus.dev + corpus.test)
    digest = hashlib.sha256((text + "\n" + repr(sorted(corpus.held_out))).encode()).hexdigest()
    assert digest == "9cba1816299d530c349637654a6e0e06815eab7006e96fe6df4afad72401469e"

def test_idioms_have_possible_links_inside_their_block_and_aer_counts_them():
    """ "The boy is hungry." -> "Le garçon a faim.": is-a and hungry-faim are sure, is-faim and hungry-a possible.
    An extraction that links "a" to "hungry" scores AER 1 - (3 + 4) / (4 + 5) = 2/9 instead of 1 - 6/9 = 1/3."""
    from transformer.explain.alignment import alignment_error_rate

    pair = align("The boy is hungry.")
    assert pair.tgt == "Le garçon a faim."
    assert pair.links == {(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)} and pair.possible == {(2, 3), (3, 2)}
    predicted = frozenset({(0, 0), (1, 1), (3, 2), (4, 4)})  # "a" read off "hungry"
    assert alignment_error_rate(predicted, pair.links, pair.possible) == pytest.approx(2 / 9)
    assert alignment_error_rate(predicted, pair.links) == pytest.approx(1 / 3)
    with_out_block = frozenset({(0, 0), (1, 1), (0, 2), (4, 4)})  # "a" read off "The": outside the block
    assert alignment_error_rate(with_out_block, pair.links, pair.possible) == pytest.approx(1 / 3)


def test_a_spec_without_a_grammar_reads_as_grammar_one_and_the_shipped_model_records_two():
    from transformer.data.spec import CorpusSpec

    shipped = json.loads((ROOT / "checkpoints" / "en-fr-teaching" / "metadata.json").read_text())["corpus"]
    assert shipped["grammar"] == 2 and CorpusSpec.from_dict(shipped).grammar == 2
    old = {k: v for k, v in shipped.items() if k != "grammar"}  # as the first teaching model's metadata was written
    assert CorpusSpec.from_dict(old).grammar == 1
    new = CorpusSpec(kind="teaching")
    assert new.grammar == GRAMMAR and new.to_dict()["grammar"] == GRAMMAR
    assert "grammar" not in CorpusSpec(kind="bible").to_dict()
    with pytest.raises(Exception, match="grammar"):
        CorpusSpec(kind="teaching", grammar=7)


def test_a_larger_train_split_keeps_dev_and_test_and_begins_with_the_smaller_one(corpus):
    from transformer.data.corpora.base import CorpusError
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec, MixPart
    from transformer.training.cli import build_parser, spec_from_args

    small = build_teaching_corpus(0, GRAMMAR, train_pairs=300)
    assert len(small.train) == 300 and small.train == corpus.train[:300]
    assert (small.dev, small.test, small.held_out) == (corpus.dev, corpus.test, corpus.held_out)
    spec = CorpusSpec(kind="teaching", train_pairs=300)
    assert CorpusSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec and spec.to_dict()["train_pairs"] == 300
    assert "train_pairs" not in CorpusSpec(kind="teaching").to_dict()  # older specs and their digests stay as written
    assert spec.for_evaluation() == CorpusSpec(kind="teaching", train_pairs=1)  # dev and test only
    assert CorpusSpec(kind="bible").for_evaluation() == CorpusSpec(kind="bible")
    mixed = CorpusSpec.mix([MixPart(spec, 1.0), MixPart(CorpusSpec(kind="bible"), 1.0)])
    assert mixed.for_evaluation().parts[0].spec.train_pairs == 1 and mixed.for_evaluation().parts[1] == mixed.parts[1]
    loaded, evaluated = load_corpus(spec), load_corpus(spec.for_evaluation())
    assert len(loaded.train) == 300 and loaded.test == [(p.src, p.tgt) for p in corpus.test]
    assert (evaluated.dev, evaluated.test, len(evaluated.train)) == (loaded.dev, loaded.test, 1)
    for bad in (dict(kind="bible", train_pairs=5), dict(kind="teaching", train_pairs=0)):
        with pytest.raises(CorpusError, match="train_pairs is the generated teaching corpus's train size"):
            CorpusSpec(**bad)
    flags = ["--out", "x", "--corpus", "teaching", "--train-pairs", "300"]
    assert spec_from_args(build_parser().parse_args(flags)).corpus.train_pairs == 300
    with pytest.raises(CorpusError, match="for a bible corpus"):
        spec_from_args(build_parser().parse_args(["--out", "x", "--train-pairs", "300"]))


def test_every_construction_is_in_the_test_split(corpus, frames):
    """Grammar 2's test split has every construction, so that a model is scored on each."""
    from transformer.data.corpora.teaching.constructions import CONSTRUCTIONS, constructions

    seen = {label for p in corpus.test for label in constructions(frames[p.src])}
    assert seen == set(CONSTRUCTIONS)
    assert any(p.possible for p in corpus.test)

"""Grammar 2's helpers for a class: the nearest sentence the grammar has, the word search, construction labels,
and contractions typed or not."""

from __future__ import annotations

import pytest

from transformer.data.corpora.teaching import align, vocabulary
from transformer.data.corpora.teaching.constructions import CONSTRUCTIONS, constructions
from transformer.data.corpora.teaching.parser import parse
from transformer.data.corpora.teaching.suggest import nearest_sentence, search_vocabulary


@pytest.mark.parametrize("typed, nearest", [
    ("The yong man buy a green bicycle", "The young man buys a green bicycle."),  # a typo and agreement
    ("She dont like him", "She doesn't like him."),                              # a contraction without its '
    ("I has a cat", "I have a cat."),
    ("He go to the park yesterday", "He went to the park yesterday."),
    ("I am very happy", "I am happy."),                                          # a word the grammar lacks
    ("My brother go to school", "My brother goes to the school."),               # a missing article
    ("The cat sleeps.", "The cat sleeps."),                                      # already in the grammar
])
def test_nearest_sentence_repairs_what_it_can(typed, nearest):
    assert align(typed) is None or typed == nearest
    assert nearest_sentence(typed) == nearest
    assert align(nearest) is not None


def test_nearest_sentence_falls_back_to_the_candidate_sharing_most_words():
    candidates = ["The cat sleeps.", "The green bicycle is new.", "I eat bread."]
    assert nearest_sentence("Colourless green ideas sleep furiously on a bicycle.", candidates) == candidates[1]
    assert nearest_sentence("Colourless green ideas sleep furiously.") is None  # no candidates, no repair
    assert nearest_sentence("") is None


def test_search_vocabulary_finds_english_and_french_and_all_for_nothing():
    found = search_vocabulary("chat")
    assert ("cat", "chat") in found["animals"] and ("kitten", "chaton") in found["animals"]
    assert all("chat" in en.lower() or "chat" in fr.lower() for pairs in found.values() for en, fr in pairs)
    assert search_vocabulary("BICYCLE")["transport"] == [("bicycle", "vélo")]
    assert search_vocabulary("zzzq") == {}
    assert search_vocabulary("  ") == vocabulary()


def test_grammar_one_lexicon_is_the_shipped_models():
    old, new = vocabulary(1), vocabulary()
    content = {"pronouns", "possessives", "prepositions", "time", "object pronouns", "question words",
               "frequency adverbs"}
    assert sum(len(p) for k, p in old.items() if k not in content) == 421
    assert sum(len(p) for k, p in new.items() if k not in content) >= 1500
    assert "object pronouns" not in old and ("him", "le/lui") in new["object pronouns"]


@pytest.mark.parametrize("english, expected", [
    ("The cat eats.", {"plain"}),
    ("She doesn't see him.", {"contraction", "object pronoun", "negation"}),
    ("Where does he go?", {"question word"}),
    ("Please sit down.", {"imperative", "reflexive"}),
    ("She never eats meat.", {"frequency adverb"}),
    ("The cat and the dog sleep.", {"coordination"}),
    ("The boy is hungry.", {"avoir idiom"}),
    ("She is ten years old.", {"age"}),
    ("Is there a cat in the garden?", {"il y a", "yes/no question"}),
    ("It is raining.", {"weather"}),
    ("I am going to read a book.", {"aller + infinitive"}),
    ("She has just eaten.", {"venir de"}),
    ("The boy's dog eats meat.", {"possessive 's"}),
    ("I drink orange juice.", {"compound"}),
    ("The man who sleeps is tired.", {"relative clause"}),
])
def test_constructions_of_a_frame(english, expected):
    assert constructions(parse(english)) == expected
    assert expected <= set(CONSTRUCTIONS)


@pytest.mark.parametrize("contracted, full", [
    ("I don't like cats.", "I do not like cats."), ("She's hungry.", "She is hungry."),
    ("He can't swim.", "He cannot swim."), ("They won't come to the park.", "They will not come to the park."),
    ("I've just eaten.", "I have just eaten."), ("We're tired.", "We are tired."),
    ("There's a dog in the garden.", "There is a dog in the garden."),
    ("Don't touch the cat.", "Do not touch the cat."),
])
def test_a_contraction_translates_as_the_full_form(contracted, full):
    short, long = align(contracted), align(full)
    assert short is not None and long is not None
    assert short.src == contracted and short.tgt == long.tgt
    assert len(short.links) >= len(long.links) - 1  # "cannot" is one word, "can' t" two

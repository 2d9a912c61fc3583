"""The teaching grammar: a generated English -> French corpus of everyday sentences with gold word alignments.

A sentence is a typed frame, realized into English, French and the links between their words at once; the
parser reads an English sentence of the grammar back into its frame. docs/teaching-corpus.md describes the
lexicon, the phenomena and the link conventions. One module per job, in the order they build on each other:

    morphology              plurals, French agreement and verb tables
    lexicon_generated       grammar 2's extra words, written by bench/teaching_lexicon.py; a data table
    lexicon                 the hand-written words (nouns, verbs, adjectives, pronouns, time phrases) and the
                            tables both lexicons are read into; a data table
    frames                  the typed frames: `Clause`, `NounPhrase`, and the `AlignedPair` they realize into
    french                  French noun phrases, elision, contraction and typography for the realizer
    realizer                frame -> English, French and their links (`realize`)
    syntax                  which frames are grammatical (`valid`)
    parser_phrases          verb groups and noun phrases for the parser
    parser                  English -> frame (`parse`), the realizer's inverse
    sampler_core            random frames of grammar 1's core clauses, with sense restrictions (`CoreSampler`)
    sampler_constructions   grammar 2's: the core clauses plus its constructions (`ConstructionSampler`)
    corpus                  the splits (`build_teaching_corpus`), `align`, `vocabulary`
    constructions           which constructions a frame uses, to score a model per construction
    suggest                 the nearest sentence the grammar has, and a search of its words

    corpus = build_teaching_corpus(seed=0)   # train / dev / test, deterministic from the seed
    align("The old man went to the market.")  # AlignedPair(src, "Le vieil homme est allé au marché.", links)
"""

from transformer.data.corpora.teaching.corpus import (
    GRAMMAR,
    TEACHING_SIZES,
    AlignedPair,
    align,
    build_teaching_corpus,
    format_links,
    vocabulary,
)

__all__ = ["GRAMMAR", "TEACHING_SIZES", "AlignedPair", "align", "build_teaching_corpus", "format_links", "vocabulary"]

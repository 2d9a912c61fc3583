"""Corpus loaders, one per source (bible, tsv, hf, debian, teaching), and mixes of them with weights (mix).

Each returns a `base.ParallelCorpus`; `transformer.data.load` chooses one from a `CorpusSpec` (transformer.data.spec).
"""

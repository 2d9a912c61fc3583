"""Which model is the teaching model (trained with `--corpus teaching`), and the gold links of its training
probes: what the Translate, Train and Explain pages ask of it. The Translate page's panels for it are in
ui.translate.teaching_panels.
"""

from __future__ import annotations

from transformer.data.corpora.teaching import align
from transformer.data.words import parse_links, words
from transformer.runs import ProbeRecord


def is_teaching(metadata: dict) -> bool:
    corpus = metadata.get("corpus")
    return isinstance(corpus, dict) and corpus.get("kind") == "teaching"


def probe_gold_cells(record: ProbeRecord) -> list[tuple[int, int]]:
    """(row, column) cells of a training probe's gold links, when its translation is the grammar's French."""
    from transformer.explain.alignment import link_cells, piece_words  # torch: only with a probe's maps to draw

    if not record.gold_links:
        return []
    pair = align(record.source)
    if pair is None or words(record.translation) != words(pair.tgt):
        return []
    return link_cells(parse_links(record.gold_links), piece_words(record.src_pieces), piece_words(record.tgt_pieces))

"""Words as the tokenizer's pre-tokenizer cuts them, and word links in the "i-j" text form.

Words are what the pre-tokenizer cuts before any subword merge: runs of letters and digits, an elided
article or contraction keeping its apostrophe ("l'homme" -> "l'" "homme"), and every punctuation mark on
its own ("est-ce que" -> "est" "-" "ce" "que"). Gold alignments (the teaching corpus) index these words,
and explain.alignment maps a model's pieces onto them. A link is (source word, target word), written "i-j"
as in the alignment literature (Och and Ney, 2003), with 0-based indices.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+'?|'|[^\w\s]")

Link = tuple[int, int]  # (source word index, target word index)


def words(text: str) -> list[str]:
    """The words of `text` as the tokenizer pre-tokenizes it (normalised text: one apostrophe kind)."""
    return _WORD.findall(text)


def format_links(links: frozenset[Link]) -> str:
    """Links in the usual "i-j" text form, sorted: "0-0 1-2 2-1"."""
    return " ".join(f"{s}-{t}" for s, t in sorted(links))


def parse_links(text: str) -> frozenset[Link]:
    """The inverse of `format_links`; a malformed link raises ValueError naming it."""
    links = set()
    for item in text.split():
        source, sep, target = item.partition("-")
        if not (sep and source.isdigit() and target.isdigit()):
            raise ValueError(f"malformed link {item!r}: expected source-target word indices such as 0-1")
        links.add((int(source), int(target)))
    return frozenset(links)

"""Why this output token rather than a word the user types? The contrastive question in one call (Yin & Neubig,
"Interpreting Language Models with Contrastive Explanations", EMNLP 2022): the typed word's first piece as the foil
(`foil.foil_word`), and f = log p(token) - log p(foil) attributed to the source words and the target prefix
(`attribution.attribute`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transformer.data.vocabulary import TokenizerLike
from transformer.explain.attribution import METHODS, TokenAttribution, attribute
from transformer.explain.foil import FoilWord, foil_word
from transformer.model.layers import Transformer


@dataclass(frozen=True)
class Contrast:
    """The typed word as a foil, and the attribution of f = log p(token) - log p(foil) (`attribution.f`)."""

    foil: FoilWord
    attribution: TokenAttribution


def contrast(model: Transformer, tokenizer: TokenizerLike, source_ids: Sequence[int], output_ids: Sequence[int],
             position: int, word: str, *, methods: Sequence[str] = tuple(METHODS), steps: int = 50) -> Contrast:
    """Output token `position` of output_ids (the translation of source_ids) attributed contrastively against the
    typed word's first piece; ValueError for a word the tokenizer cannot make (`foil_word`), or a bad position,
    method or step count (`attribute`)."""
    foil = foil_word(tokenizer, word)
    return Contrast(foil, attribute(model, tokenizer, source_ids, output_ids, position, foil=foil.id, methods=methods,
                                    steps=steps))

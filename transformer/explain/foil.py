"""A typed word as the foil of a contrastive question ("why *le* rather than *la*?"): attribution
(`attribution.attribute(..., foil=...)`) and patching (`patching.activation_patching(..., foil=...)`) measure
log p(token) - log p(foil) for one foil id, so a word stands for its first piece, the one the model would have to
emit first to go on to that word; `FoilWord.several` says when the word has more pieces than that one.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer.data.corpora.base import normalize_text
from transformer.data.vocabulary import TokenizerLike
from transformer.labels import shorten


@dataclass(frozen=True)
class FoilWord:
    word: str  # as typed, stripped
    id: int  # its first piece's: the foil the contrast measures
    pieces: tuple[str, ...]  # all its pieces as target text, the first one the foil's

    @property
    def piece(self) -> str:
        return self.pieces[0]

    @property
    def several(self) -> bool:
        """The word has more pieces than its first: the contrast is with that piece only."""
        return len(self.pieces) > 1

    @property
    def note(self) -> str:
        """What the contrast measures, in a sentence for the views ('' for a one-piece word)."""
        if not self.several:
            return ""
        return (f"“{self.word}” is {len(self.pieces)} pieces ({' '.join(self.pieces)}): the foil is its first, "
                f"{self.piece}")


def foil_word(tokenizer: TokenizerLike, word: str) -> FoilWord:
    """A typed target word's first piece as a foil; ValueError for an empty word, more than one word, or a word with
    pieces the target vocabulary lacks (<unk>), whose message shows the pieces the tokenizer makes."""
    if not isinstance(word, str) or not normalize_text(word).strip():
        raise ValueError(f"foil: type a target word, got {word!r}")
    word = normalize_text(word).strip()
    if len(word.split()) > 1:
        raise ValueError(f"foil: one word, got {len(word.split())} ({word!r}); the contrast is with one token")
    specials = tokenizer.specials
    ids = tokenizer.encode_target(word)[1 + len(specials.forced) : -1]  # start + forced (a language) + pieces + </s>
    if not ids or specials.unk in ids or ids[0] in specials.never:
        made = shorten(" ".join(tokenizer.target_pieces(ids)), 80) or "nothing"
        raise ValueError(f"foil: {word!r} has pieces the target vocabulary lacks (<unk>): the tokenizer makes {made} "
                         "of it, and the model cannot emit <unk>")
    return FoilWord(word, ids[0], tuple(tokenizer.target_pieces(ids)))

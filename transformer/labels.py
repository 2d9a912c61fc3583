"""Labels drawn in a bounded room: one rule for every view and chart (a long piece is shortened, and shown whole in
its title or hover). Pure text, no torch: the app's pages without a model read it too."""

from __future__ import annotations

import unicodedata

LABEL_CHARS = 24  # a longer label is shortened (the full piece in its title or hover)
HOVER_CHARS = 200  # a piece in a hover repeated once per cell of a map (n x n times) is shortened to this


def shorten(label: str, limit: int = LABEL_CHARS) -> str:
    """At most `limit` characters: the rest becomes an ellipsis. Every view and chart of the app shortens a piece
    here and shows it whole in its title or hover; time and size grow with `limit`, not with the piece."""
    return label if len(label) <= limit else label[: max(limit - 1, 1)] + "…"


def _char_width(c: str, font_px: float) -> float:
    return font_px * (0.92 if c in "MWmw@%" or unicodedata.east_asian_width(c) in "WF" else 0.62)


def text_width(label: str, font_px: float) -> float:
    """A generous estimate of a label's width in a proportional font: wide letters count more."""
    return sum(_char_width(c, font_px) for c in label)


def fit(label: str, room: float, font_px: float) -> str:
    """The longest `shorten`ing of label (at least one character) whose `text_width` fits in room px. One pass
    over the characters that fit, so a piece of 20,000 letters costs what one of 20 does."""
    ellipsis = _char_width("…", font_px)
    used, cut = 0.0, 0  # cut: how many characters fit before an ellipsis
    for i, c in enumerate(label):
        used += _char_width(c, font_px)
        if used > room:
            return label[: max(cut, 1)] + "…"
        if used + ellipsis <= room:
            cut = i + 1
    return label

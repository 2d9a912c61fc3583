"""Right-to-left text (Arabic, Hebrew, Persian) in labels and sentences: pure Python, no streamlit.

Browsers lay out a string left to right unless told otherwise, so an Arabic sentence in an LTR paragraph keeps
its final full stop on the wrong side, and a piece label "▁الارض" shows its word-start marker at the word's end.
Three tools fix that without HTML:
- `isolate(text)` wraps right-to-left text in RLI … PDI, so it reads right to left inside an English sentence;
- `piece_labels(pieces)` starts every right-to-left piece with a right-to-left mark (the "▁" then stands on the
  right, where the word starts) and joins the letters of a word split into pieces: the last letter of one piece
  and the first letter of the next take their connected forms (a zero-width joiner on each side of the cut), as
  they would inside the word;
- `is_rtl(text)` says which way a text reads: more right-to-left letters than left-to-right ones.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

RLM, ZWJ, RLI, FSI, PDI = "\u200f", "\u200d", "\u2067", "\u2068", "\u2069"
WORD_START = "▁"
# Arabic letters that join only to the letter before them (Unicode ArabicShaping.txt, joining type R): a letter
# after one of them starts a new connected group. Hamza (U+0621) joins neither side.
_RIGHT_JOINING = frozenset(
    "\u0622\u0623\u0624\u0625\u0627\u0629\u062f\u0630\u0631\u0632\u0648\u0671\u0672\u0673\u0675\u0676\u0677"
    "\u0688\u0689\u068a\u068b\u068c\u068d\u068e\u068f\u0690\u0691\u0692\u0693\u0694\u0695\u0696\u0697\u0698"
    "\u0699\u06c0\u06c3\u06c4\u06c5\u06c6\u06c7\u06c8\u06c9\u06ca\u06cb\u06cd\u06cf\u06d2\u06d3\u06ee\u06ef")
_NON_JOINING = frozenset("\u0621")
_ENDS_A_GROUP = _RIGHT_JOINING | _NON_JOINING  # letters after which the next one starts anew
_FORMAT = "\u200b\u200d"  # zero-width space (what `unique_labels` appends) and joiner


def is_rtl(text: str) -> bool:
    """True when text has more right-to-left letters (Hebrew, Arabic) than left-to-right ones."""
    balance = 0
    for ch in text:
        kind = unicodedata.bidirectional(ch)
        balance += 1 if kind in ("R", "AL") else -1 if kind == "L" else 0
    return balance > 0


def isolate(text: str) -> str:
    """Right-to-left text wrapped in an isolate, so it keeps its order inside a left-to-right line; other text
    unchanged."""
    return f"{RLI}{text}{PDI}" if is_rtl(text) else text


def _is_arabic_letter(ch: str) -> bool:
    return unicodedata.bidirectional(ch) == "AL" and unicodedata.category(ch) == "Lo"


def _edge(piece: str, last: bool) -> int | None:
    """Index of the first (or last) character of piece that is not a mark or a format character, or None."""
    order = range(len(piece) - 1, -1, -1) if last else range(len(piece))
    return next((i for i in order if unicodedata.category(piece[i]) not in ("Mn", "Me", "Cf")), None)


def _joined(left: str, right: str) -> bool:
    """True when the last letter of left connects to the first letter of right inside one word."""
    if right.startswith(WORD_START):
        return False
    i, j = _edge(left, last=True), _edge(right, last=False)
    if i is None or j is None:
        return False
    a, b = left[i], right[j]
    return (_is_arabic_letter(a) and _is_arabic_letter(b) and a not in _ENDS_A_GROUP
            and b not in _NON_JOINING)


def piece_labels(pieces: Sequence[str]) -> list[str]:
    """Labels for tokenizer pieces, as they should be shown: right-to-left pieces start with a right-to-left mark,
    and pieces cut from one Arabic word carry joiners at the cut. Other pieces are unchanged."""
    labels = list(pieces)
    for k in range(len(labels) - 1):
        if _joined(pieces[k], pieces[k + 1]):
            end = len(labels[k].rstrip(_FORMAT))  # after the letter and its marks, before a duplicate's spaces
            labels[k] = labels[k][:end] + ZWJ + labels[k][end:]
            labels[k + 1] = ZWJ + labels[k + 1]
    return [RLM + label if is_rtl(piece) else label for label, piece in zip(labels, pieces)]

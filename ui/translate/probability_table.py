"""The output pieces and their probabilities as an HTML table that wraps: rows of at most PER_ROW pieces, so that
a long sentence needs no horizontal scroll and the last piece (`</s>`) is always on screen. No streamlit.

The pieces are drawn as page text, the same way as the heatmap's labels (`transformer.bidi.piece_labels`):
right-to-left
pieces read right to left, first piece on the right, and pieces cut from one Arabic word keep their joined forms
(a canvas-drawn data grid shaped them apart).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from transformer.bidi import piece_labels
from transformer.labels import shorten

PER_ROW = 10  # pieces per row: ten columns fit the wide layout of a 1280 px window at any font size the app uses
STYLE = ("<style>.prob-table{border-collapse:collapse;margin:0.2em 0 0.6em 0}"
         ".prob-table td,.prob-table th{border:1px solid rgba(128,128,128,0.35);padding:2px 8px;text-align:center;"
         "font-weight:normal;white-space:nowrap}.prob-table th{background:rgba(128,128,128,0.08)}"
         ".prob-table td.pos{color:#888;font-size:0.8em}</style>")


def readable(p: float) -> str:
    """A probability in at most 7 characters that never reads as 0 unless it is: 0.412, 0.003, then 2.3e-05 below
    0.001 (a sampled piece at a high temperature is often that unlikely)."""
    return f"{p:.3f}" if p >= 0.001 or p == 0 else f"{p:.1e}"


def rows(pieces: Sequence[str], probs: Sequence[float], per_row: int = PER_ROW) -> list[list[tuple[int, str, float]]]:
    """(position from 1, label as shown, probability) in rows of at most per_row, in reading order of the pieces."""
    if len(pieces) != len(probs):
        raise ValueError(f"{len(pieces)} pieces but {len(probs)} probabilities")
    labels = piece_labels(pieces)
    cells = [(i + 1, label, float(p)) for i, (label, p) in enumerate(zip(labels, probs))]
    return [cells[i:i + per_row] for i in range(0, len(cells), per_row)]


def _heading(label: str) -> str:
    """A piece's cell: shortened when long, the whole piece then in its title (the hover)."""
    shown = shorten(label)
    title = "" if shown == label else f' title="{html.escape(label)}"'
    return f"<th{title}><bdi>{html.escape(shown)}</bdi></th>"


def probability_table(pieces: Sequence[str], probs: Sequence[float], *, rtl: bool = False,
                      per_row: int = PER_ROW) -> str:
    """The table as one HTML block (escaped pieces: a piece cannot become markup; a long one shortened, whole in its
    title). rtl lays every row out right to left, the first piece on the right; each piece is isolated (<bdi>), so
    "</s>" does not turn into "<s/>"."""
    direction = ' dir="rtl"' if rtl else ""
    body = []
    for row in rows(pieces, probs, per_row):
        body.append("<tr>" + "".join(f'<td class="pos">{i}</td>' for i, _, _ in row) + "</tr>")
        body.append("<tr>" + "".join(_heading(label) for _, label, _ in row) + "</tr>")
        body.append("<tr>" + "".join(f"<td>{readable(p)}</td>" for _, _, p in row) + "</tr>")
    return f'{STYLE}<table class="prob-table"{direction}>{"".join(body)}</table>'

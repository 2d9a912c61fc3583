"""The words of the "Greedy, beam, reference" view: its table's log-probability cells, and whether (and why) a
difference map between two outputs is drawn. No streamlit.

Two outputs with the same pieces have the same cross-attention (the decoder reads the same prefix at every step),
so their difference is zero everywhere: the view says they agree rather than draw an all-grey map.
"""

from __future__ import annotations

from collections.abc import Sequence

from ui.shared.text.plain import plain
from ui.shared.text.plain import score as text_score

NOT_SCORED = "—"  # a row without a log-probability of its own (the forced run's best token at each position)


def log_prob_cell(score: float | None) -> str:
    """A log-probability as the table shows it: three decimals, or a dash for a row that has none."""
    return NOT_SCORED if score is None else text_score(score)


def table_rows(rows: Sequence[tuple[str, str, float | None]]) -> list[list[str]]:
    """(output, text, log-probability or None) as the table's cells, every cell a string."""
    return [[name, text, log_prob_cell(score)] for name, text, score in rows]


def same_output_note(a: str, b: str) -> str:
    return (f"{plain(a[:1].upper() + a[1:])} and {plain(b)} write the same output, piece for piece, so their "
            "cross-attention maps are identical and there is no difference to draw. Pick another pair above (or "
            "type a reference translation) to see where two outputs part.")


def difference_caption(a: str, b: str, prefix: int, ids_a: Sequence[int], ids_b: Sequence[int]) -> str | None:
    """The difference map's caption, or None when the two outputs are the same and no map should be drawn."""
    if list(ids_a) == list(ids_b):
        return None
    colours = (f"red is more weight in {plain(a)}, blue more in {plain(b)} (rows are labelled with {plain(a)}'s "
               "pieces).")
    if prefix == 0:
        return f"The outputs differ from their first piece, so every row differs: {colours}"
    return (f"The outputs share their first {prefix} piece(s). Above the dashed line the rows are equal: a decoder "
            f"query reads only the tokens before it, which the two outputs share. Below it they part: {colours}")

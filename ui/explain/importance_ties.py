"""What a ranking of heads by importance says and does not say: ties, in the page's words. No streamlit.

Ranked by BLEU on a small sample, many heads leave BLEU exactly where it was; their order is then decided by the
drop in log-likelihood (HeadImportance.ranked), and the page says so rather than listing them as if one beat another.
"""

from __future__ import annotations

from transformer.explain import HeadImportance

UNITS = {"log_likelihood": "log-likelihood per token", "bleu": "BLEU"}


def value_text(value: float, by: str) -> str:
    """An importance as the page writes it: log-likelihood to 3 decimals, BLEU to 2 (a drop of 0.04 is no tie)."""
    return f"{value:+.3f}" if by == "log_likelihood" else f"{value:+.2f}"


def ranking_note(result: HeadImportance, by: str, shown: int) -> str | None:
    """A sentence on the ties among the first `shown` heads of ranked(by), or None when there is none."""
    ties = [(first, end, value) for first, end, value in result.ties(by) if first < shown]
    if not ties:
        return None
    parts = [f"heads {first + 1} to {end} of {len(result.ranked(by))} tie at {value_text(value, by)} {UNITS[by]}"
             for first, end, value in ties]
    broken = " by their drop in log-likelihood" if by == "bleu" else " by family, layer and head"
    return ("A tie: " + "; ".join(parts) + ". Switching any one of them off changes the score by the same amount, "
            f"so this sample does not tell them apart; they are listed{broken}.")


def keep_note(result: HeadImportance, k: int, by: str) -> str | None:
    """A sentence when keeping the top k cuts through a tie (some tied heads kept, others off), else None."""
    tie = result.tie_at(k, by)
    if tie is None:
        return None
    first, end, value = tie
    broken = "their drop in log-likelihood" if by == "bleu" else "family, layer and head"
    return (f"The top {k} keeps {k - first} of the {end - first} heads that tie at {value_text(value, by)} {UNITS[by]} "
            f"(ranks {first + 1} to {end}): which of them stay on is decided by {broken}, not by {UNITS[by]}.")

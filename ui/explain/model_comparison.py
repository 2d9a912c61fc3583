"""Compare models, like with like: which partners to offer first, and whether a difference of two maps means
anything. No streamlit.

A difference map subtracts row i of one map from row i of the other, so it only means something when both rows are
the same query token reading the same keys: the two models cut the sentence into the same pieces and wrote the same
output. Otherwise the page says why there is none and shows the two maps side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformer.decoding.translate import Translation
from ui.shared.models.catalog import LANGUAGES, ModelChoice

USES = {"enc_self": ("source",), "dec_self": ("target",), "cross": ("target", "source")}  # what a family's labels are


def partners(choices: Sequence[ModelChoice], current: str) -> list[ModelChoice]:
    """Every model but `current` (a path), those with its language pair first (each group in the picker's order)."""
    pair = next((c.languages for c in choices if c.path == current), None)
    others = [c for c in choices if c.path != current]
    return sorted(others, key=lambda c: pair is None or c.languages != pair)


def _language(choice: ModelChoice | None) -> str:
    code = choice.languages[1] if choice is not None and choice.languages else ""
    return LANGUAGES.get(code, code)


def why_no_difference(family: str, mine: Translation, other: Translation, me: ModelChoice | None = None,
                      partner: ModelChoice | None = None) -> str | None:
    """None when the two translations' maps of `family` have the same rows and columns (a difference map means
    something), else the reason there is none, in the page's words."""
    uses = USES[family]
    if "target" in uses and mine.target_pieces != other.target_pieces:
        ours, theirs = _language(me), _language(partner)
        if ours and theirs and ours != theirs:
            return (f"No difference map: this model writes {ours}, the other {theirs}, so their rows are tokens of "
                    "different languages and subtracting one from the other means nothing. Compare the two maps "
                    "side by side, or pick a model with the same language pair.")
        return ("No difference map: the two outputs are different tokens, so row i of one map is not row i of the "
                "other and subtracting them means nothing. Compare the two maps side by side (encoder "
                "self-attention reads only the source, which both share when the models cut it the same way).")
    if "source" in uses and mine.source_pieces != other.source_pieces:
        return ("No difference map: the two models cut the sentence into different pieces (their vocabularies "
                "differ), so their columns are not the same tokens. Compare the two maps side by side.")
    return None

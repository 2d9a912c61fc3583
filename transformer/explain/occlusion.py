"""Word occlusion, the one perturbation that the attribution view and the lens scores share.

Occlusion (Zeiler & Fergus, "Visualizing and Understanding Convolutional Networks", ECCV 2014), at the level
of words: word j is hidden by replacing every one of its pieces with <unk> (the tokenizer's `specials.unk`), and
its importance is the drop of the explained log-probability. `occluded_rows` builds the inputs of every word at
once, one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def n_words(index: Sequence[int | None]) -> int:
    """How many words a piece -> word index names (None: a control token, no word)."""
    return 1 + max((w for w in index if w is not None), default=-1)


def occluded_rows(ids: Sequence[int] | Tensor, index: Sequence[int | None], unk_id: int) -> Tensor:
    """(W, L) token ids: row j is `ids` (L,) or (1, L) with every piece of word j (index[p] == j) as unk_id."""
    row = torch.as_tensor(ids).reshape(1, -1)  # (1, L)
    rows = row.repeat(n_words(index), 1)  # (W, L): row j occludes word j
    for position, w in enumerate(index):
        if w is not None:
            rows[w, position] = unk_id
    return rows

"""The Learn page's section 3: Eq. 1 for one encoder head and one query, every intermediate as numpy (computed by
`transformer.explain.cell_arithmetic`). No streamlit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.explain import cell_arithmetic
from transformer.model.layers import Transformer


@dataclass
class AttentionSteps:
    """Eq. 1 for one encoder self-attention head and one query, every intermediate kept."""

    q: np.ndarray  # (Dh,) the query's projection
    k: np.ndarray  # (S, Dh) every key
    v: np.ndarray  # (S, Dh) every value
    scores: np.ndarray  # (S,) q . k / sqrt(Dh)
    mask: np.ndarray  # (S,) bool, True = may attend
    masked: np.ndarray  # (S,) scores with masked keys at -inf
    weights: np.ndarray  # (S,) softmax
    output: np.ndarray  # (Dh,) weights @ v
    model_weights: np.ndarray  # (S,) the same row as the model itself returns it


def encoder_attention_steps(model: Transformer, src_ids: list[int], layer: int, head: int, query: int,
                            pad_to: int = 0) -> AttentionSteps:
    """One encoder head's Eq. 1 for one query (`transformer.explain.cell_arithmetic`), as numpy.

    pad_to > len(src_ids) appends <pad> tokens, as a batch with a longer sentence would: their keys are masked.
    """
    padded = list(src_ids) + [model.config.pad_id] * max(0, pad_to - len(src_ids))
    cell = cell_arithmetic(model, padded, None, "enc_self", layer, head, query)
    as_np = lambda t: t.float().cpu().numpy()
    return AttentionSteps(as_np(cell.q), as_np(cell.k), as_np(cell.v), as_np(cell.scores), cell.mask.cpu().numpy(),
                          as_np(cell.masked), as_np(cell.weights), as_np(cell.output), as_np(cell.model_weights))

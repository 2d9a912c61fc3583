"""One query's attention rows in one layer, a row per head (the newest token in step-by-step decoding), as a
heatmap: what the Step page draws for cross- and self-attention, under any lens (`ui.shared.attention.lens_switch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import numpy as np

from transformer.charts.heatmap import heatmap
from transformer.charts.theme import NORMAL, Sizes

LAYER_ROW = "layer level"  # the name of a layer's own row under its heads' rows


@dataclass(frozen=True)
class QueryRows:
    """heads (H', Lk): a row per head (H' = 1 for a lens that reads all heads together); layer (Lk,): the layer's
    own row where the lens defines one apart from its heads (the norm-weighted lens's ||Σ_h alpha^h_ij f^h(x_j)||),
    else None."""

    heads: np.ndarray
    layer: np.ndarray | None = None

    def names(self) -> list[str]:
        n = np.asarray(self.heads).shape[0]
        heads = ["all heads"] if n == 1 else [f"head {h}" for h in range(n)]
        return heads if self.layer is None else [*heads, LAYER_ROW]

    def matrix(self) -> np.ndarray:
        heads = np.asarray(self.heads, dtype=np.float64)
        return heads if self.layer is None else np.vstack([heads, np.asarray(self.layer, dtype=np.float64)[None]])


def head_rows(rows: np.ndarray | QueryRows, key_labels: Sequence[str], *, title: str = "",
              sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """rows (H, Lk) or QueryRows: one query's attention row per head, the layer's own row last (LAYER_ROW)."""
    rows = rows if isinstance(rows, QueryRows) else QueryRows(np.asarray(rows))
    return heatmap(rows.matrix(), rows.names(), key_labels, title=title, row_title="", sizes=sizes)

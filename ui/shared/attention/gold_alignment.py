"""The alignment error rate (AER) of every cross-attention head against gold word links, as a layers x heads grid.
Altair, a pure function of numbers, no streamlit. (Gold links over an attention map are the heatmap's own
`outlines={"gold link": cells}`.)
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from transformer.charts.heatmap import Scale, heatmap
from transformer.charts.theme import NORMAL, Sizes

# Lower is better: green for a head that aligns well, red for one that does not; both ends dark (white numbers).
AER_SCALE = Scale("redyellowgreen", (0.0, 100.0), "AER %", reverse=True,
                  dark="datum.value < 15 || datum.value > 85")


def aer_grid(heads: Sequence[Sequence[float]], layer_mean: Sequence[float], *, title: str = "",
             sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Layers x (heads, mean of heads) of AER in percent, each cell's number written in it; lower is better, the
    best head is outlined. Maps of one map per layer (a layer-level lens) have one column, the layer's map of all
    heads together. Columns are short ("0", "mean") under the title "head", upright in a half-width column."""
    heads = np.asarray(heads, dtype=float)
    if heads.shape[1] == 1:
        grid = 100.0 * heads
        columns = ["all heads"]
    else:
        grid = 100.0 * np.column_stack([heads, np.asarray(layer_mean, dtype=float)])
        columns = [str(h) for h in range(heads.shape[1])] + ["mean"]  # numbered from 0, as elsewhere
    n_layers, n_heads = grid.shape[0], heads.shape[1]
    best_layer, best_head = np.unravel_index(np.argmin(grid[:, :n_heads]), (n_layers, n_heads))
    texts = np.vectorize(lambda v: f"{v:.0f}")(grid)
    return heatmap(grid, [str(i) for i in range(n_layers)], columns, title=title, row_title="layer",
                   col_title="head", scale=AER_SCALE, fmt=".1f", texts=texts,
                   outlines={"best": [(int(best_layer), int(best_head))]}, sizes=sizes)

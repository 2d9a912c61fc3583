"""The output projection's linear layer: nn.Linear, with a faster product of a few rows at inference.

A cached decoding step of a beam projects a few rows (K hypotheses per sentence) to the vocabulary and waits on
reading the (V, D) weight from memory (8 MB for the Bible models, more than a core's L2 cache). `F.linear(x, W)`
hands MKL the weight as the transposed view W^T, which MKL's sgemm repacks on every call from 4 rows on: 5 rows
took 1.8x the time of one in a beam step on an AVX-512 Xeon, against 1.4x with a row-major (D, V) copy multiplied
as it is (BENCHMARKS.md, "beam 5 against greedy"). 1 to 3 rows take MKL's matrix-vector path, which reads the
weight once and is fastest as it is; from about 256 rows the two are equal. The decoder's own layers keep
nn.Linear: their weights (at most 1 MB here) stay in the L2 cache, and there the copy gained nothing.

The copy is made on the first such product and kept beside the weight: the memory of the weight once more (8 MB
for the Bible models, 122 MB for opus-mt's 59,514 x 512), made again whenever the weight changes (a new tensor,
or its version counter: any in-place change through torch, as training and the explain interventions make; a
change through `.data` is not seen, so don't). Products under autograd, on other devices or dtypes, and of other
row counts are `F.linear`'s.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ROW_MAJOR_ROWS = (4, 128)  # the row counts whose products use the row-major copy (measured: BENCHMARKS.md)


class Linear(nn.Linear):
    """nn.Linear (the same parameters, state dict and hooks) whose products of ROW_MAJOR_ROWS rows without autograd
    multiply a row-major copy of the weight."""

    _row_major: tuple[tuple[int, int, torch.dtype], Tensor] | None = None  # (the weight's key, weight^T contiguous)

    def forward(self, x: Tensor) -> Tensor:
        rows = x.numel() // self.in_features
        if not ROW_MAJOR_ROWS[0] <= rows <= ROW_MAJOR_ROWS[1] or torch.is_grad_enabled() or not self._plain(x):
            return F.linear(x, self.weight, self.bias)
        x2 = x.reshape(rows, self.in_features)  # (rows, in)
        w_t = self.row_major_weight()  # (in, out)
        out = torch.mm(x2, w_t) if self.bias is None else torch.addmm(self.bias, x2, w_t)  # (rows, out)
        return out.view(*x.shape[:-1], self.out_features)

    def _plain(self, x: Tensor) -> bool:
        """A float32 CPU product of a weight that keeps a version counter (one made in inference mode has none)."""
        w = self.weight
        return x.device.type == "cpu" and x.dtype == w.dtype == torch.float32 and not w.is_inference()

    def row_major_weight(self) -> Tensor:
        """weight^T (in, out), contiguous: made again after any change of the weight."""
        w = self.weight
        key = (w.data_ptr(), w._version, w.dtype)
        if self._row_major is None or self._row_major[0] != key:
            self._row_major = (key, w.detach().t().contiguous())
        return self._row_major[1]

    def __getstate__(self) -> dict:
        """A copy (copy.deepcopy, pickling) leaves the row-major weight behind: the copy's weight is a new tensor."""
        state = super().__getstate__()
        state.pop("_row_major", None)
        return state

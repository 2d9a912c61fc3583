"""Dropout with cheap masks: 16 random bits per element instead of one Bernoulli draw.

torch's CPU dropout draws each mask element with `bernoulli_`, which took 9% of a training step in fp32 and 12%
in bf16 (BENCHMARKS.md). One 64-bit draw from torch's generator gives four 16-bit lanes, and an element is dropped
when its lane is below p * 2^16: the random numbers cost several times less, and the whole dropout of a
(3300, 1024) activation took 78 ms instead of F.dropout's 161 ms (one thread, shared machine). p is rounded to a
multiple of 2^-16 (0.1 becomes 0.100006) and the kept elements are scaled by the exact inverse of the rounded keep
probability, so the output stays unbiased. The draws come from torch's default generator, so `torch.manual_seed`
and `torch.set_rng_state` reproduce them (a resumed run continues the same curve).

Forward and backward are each a scaling and a fill in place (`DropoutFunction`), where
`x.masked_fill(mask, 0).mul_(scale)` under autograd made five passes over the activation (a copy, the fill, the
scaling, and a fill and a product in backward). A dropout's forward and backward of a (3900, 1024) activation
took 29-37 ms instead of 35-45 ms. An fp32 keep mask of 0 and 1 / (1 - p), one product each way, was faster
alone (24-29 ms) but not inside the step, where its four bytes an element are saved for backward
(issue 28, BENCHMARKS.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

LANES = 65536  # values of one 16-bit lane


def drop_mask(shape: torch.Size, p: float, device: torch.device) -> tuple[Tensor, float]:
    """A boolean mask of `shape`, True (drop) with probability p rounded to 2^-16, and the kept elements' scale."""
    drop = round(p * LANES)
    if drop >= LANES:
        raise ValueError(f"dropout probability {p} rounds to 1")
    n = shape.numel()
    # random_(min, None) draws all 64 bits; the default random_() leaves the sign bit 0, biasing one lane
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(2**63), None)
    lanes = words.view(torch.int16)[:n].view(shape)  # uniform over [-32768, 32767]
    return lanes < drop - LANES // 2, LANES / (LANES - drop)


class DropoutFunction(torch.autograd.Function):
    """y = x * scale with the dropped elements filled with 0, and dx the same of dy: two passes each way, the
    boolean mask saved for backward. x.mul(scale) rounds once, in any dtype, as `x.mul_(scale)` would."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        drop, ctx.scale = drop_mask(x.shape, p, x.device)
        ctx.save_for_backward(drop)
        return x.mul(ctx.scale).masked_fill_(drop, 0.0)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        (drop,) = ctx.saved_tensors
        return grad.mul(ctx.scale).masked_fill_(drop, 0.0), None


def cheap_dropout(x: Tensor, p: float) -> Tensor:
    """Inverted dropout of x in training: the same distribution as F.dropout up to p's rounding."""
    return DropoutFunction.apply(x, p)


class Dropout(nn.Module):
    """nn.Dropout with cheap masks; `cheap_masks = False` (see `use_cheap_dropout`) gives torch's own."""

    def __init__(self, p: float):
        super().__init__()
        self.p, self.cheap_masks = p, True

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        return cheap_dropout(x, self.p) if self.cheap_masks else F.dropout(x, self.p, True)

    def extra_repr(self) -> str:
        return f"p={self.p}, cheap_masks={self.cheap_masks}"


def use_cheap_dropout(model: nn.Module, enabled: bool = True) -> None:
    """Switch every Dropout of model between cheap masks and torch's Bernoulli masks."""
    for module in model.modules():
        if isinstance(module, Dropout):
            module.cheap_masks = enabled

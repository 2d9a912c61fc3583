"""Dropout with cheap masks: 16 random bits per element instead of one Bernoulli draw.

torch's CPU dropout draws each mask element with `bernoulli_`, which took 9% of a training step in fp32 and 12%
in bf16 (BENCHMARKS.md). One 64-bit draw from torch's generator gives four 16-bit lanes, and an element is dropped
when its lane is below p * 2^16: the random numbers cost several times less, and the whole dropout of a
(3300, 1024) activation took 78 ms instead of F.dropout's 161 ms (one thread, shared machine). p is rounded to a
multiple of 2^-16 (0.1 becomes 0.100006) and the kept elements are scaled by the exact inverse of the rounded keep
probability, so the output stays unbiased. The draws come from torch's default generator, so `torch.manual_seed`
and `torch.set_rng_state` reproduce them (a resumed run continues the same curve).

Forward and backward are each a scaling and a product by a 0 / 1 mask of one byte an element (`DropoutFunction`),
where `x.masked_fill(mask, 0).mul_(scale)` under autograd made five passes over the activation (a copy, the fill,
the scaling, and a fill and a product in backward). masked_fill_ with a boolean mask runs at a third of the speed
of a product on an AVX-512 Xeon (a quarter in bf16); the uint8 mask is the same draws' boolean one, reinterpreted.
An fp32 keep mask of 0 and 1 / (1 - p), one product each way, was faster alone on an AMD EPYC but not inside the
step, where its four bytes an element are saved for backward (issue 28, BENCHMARKS.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

LANES = 65536  # values of one 16-bit lane


def _lanes(shape: torch.Size, p: float, device: torch.device) -> tuple[Tensor, int, float]:
    """Uniform 16-bit lanes of `shape` from torch's generator, the lane below which an element is dropped (p rounded
    to 2^-16), and the kept elements' scale."""
    drop = round(p * LANES)
    if drop >= LANES:
        raise ValueError(f"dropout probability {p} rounds to 1")
    n = shape.numel()
    # random_(min, None) draws all 64 bits; the default random_() leaves the sign bit 0, biasing one lane
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(2**63), None)
    lanes = words.view(torch.int16)[:n].view(shape)  # uniform over [-32768, 32767]
    return lanes, drop - LANES // 2, LANES / (LANES - drop)


def drop_mask(shape: torch.Size, p: float, device: torch.device) -> tuple[Tensor, float]:
    """A boolean mask of `shape`, True (drop) with probability p rounded to 2^-16, and the kept elements' scale."""
    lanes, threshold, scale = _lanes(shape, p, device)
    return lanes < threshold, scale


def keep_mask(shape: torch.Size, p: float, device: torch.device) -> tuple[Tensor, float]:
    """drop_mask's complement from the same draws, as uint8 0 / 1 (what a product reads fastest), and the scale."""
    lanes, threshold, scale = _lanes(shape, p, device)
    return (lanes >= threshold).view(torch.uint8), scale


class DropoutFunction(torch.autograd.Function):
    """y = x * scale * keep and dx = dy * scale * keep, keep a 0 / 1 uint8 mask: two passes each way, the mask saved
    for backward. x.mul(scale) rounds once, in any dtype, as `x.mul_(scale)` would, and * 1 leaves it exact; a
    dropped element is 0 (-0 where x is negative: equal to 0 in every sum and product after it). A product by the
    uint8 mask took half the time of masked_fill_ with the boolean one in fp32 and a third in bf16 (BENCHMARKS.md,
    "the training step against its products")."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        keep, ctx.scale = keep_mask(x.shape, p, x.device)
        ctx.save_for_backward(keep)
        return x.mul(ctx.scale).mul_(keep)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        (keep,) = ctx.saved_tensors
        return grad.mul(ctx.scale).mul_(keep), None


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

"""The training loss: label-smoothed cross-entropy on the real target tokens only.

Three savings over `F.cross_entropy(model(src, tgt_in).logits, ..., ignore_index=pad)`, equal to it up to float
rounding (tests/training/test_optimisations.py):
- the output projection and the log-softmax run on the real tokens' rows only, never on padding (14% of target
  positions in Bible batches), and the 8k-way logits of a padded batch are never built;
- one hand-written gradient for log-softmax + label-smoothed NLL: softmax - smoothed target, a few passes over
  the logits where autograd makes eight (zeros, scatter, expand, add, log-softmax backward, ...);
- the projection, the loss and both gradients of the projection run CHUNK_ROWS rows at a time, in the forward
  pass: the (N, V) logits are never whole (3,400 x 8,000 fp32 is 109 MB, allocated, faulted in and read four
  times a step), and a chunk's logits are still warm when their gradient is taken. Alone, the projection and
  loss of a small-preset batch took 18-20% less time; inside the step the gain is 1-5%, within that machine's
  noise (BENCHMARKS.md, issue 28). Backward only scales the two saved gradients.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from transformer.model.layers import Transformer

CHUNK_ROWS = 512  # logits rows at a time: 512 x 8,000 fp32 is 16 MB (256 and 1,024 measured no better)


def smoothed_nll(log_probs: Tensor, target: Tensor, smoothing: float) -> Tensor:
    """log_probs (n, V) fp32, target (n,) -> sum over rows of (1 - eps) * NLL + eps * mean over the vocabulary
    of -log p, as F.cross_entropy defines label smoothing (0-dim fp32)."""
    nll = -log_probs.gather(1, target[:, None]).sum()
    return (1.0 - smoothing) * nll - smoothing / log_probs.size(-1) * log_probs.sum() if smoothing else nll


def logits_grad_(log_probs: Tensor, target: Tensor, smoothing: float) -> Tensor:
    """smoothed_nll's gradient with respect to the logits, built in log_probs' memory (n, V):
    softmax - ((1 - eps) * onehot(target) + eps / V) in each row."""
    grad = log_probs.exp_()
    if smoothing:
        grad.sub_(smoothing / log_probs.size(-1))
    grad[torch.arange(grad.size(0), device=grad.device), target] -= 1.0 - smoothing
    return grad


def compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype autocast would run a matrix product of x in here (x's own when autocast is off), but fp32 for
    fp16: these gradients are taken before GradScaler scales the loss, and fp16's range would flush the small
    ones to zero (bf16 has fp32's range)."""
    device = x.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
    return torch.float32 if dtype == torch.float16 else dtype


class ProjectedCrossEntropySum(torch.autograd.Function):
    """sum over rows of the smoothed NLL of states @ weight^T (+ bias), with d/dstates and d/dweight taken in forward.

    states (N, D), weight (V, D), bias (V,) or None (a fixed bias: no gradient), target (N,). The products run in
    compute_dtype (bf16 logits and gradients under bf16 autocast, as autocast's own F.linear and its backward
    would), the log-softmax in fp32.
    """

    @staticmethod
    def forward(ctx, states: Tensor, weight: Tensor, bias: Tensor | None, target: Tensor, smoothing: float,
                chunk_rows: int) -> Tensor:
        dtype = compute_dtype(states)
        grad_states, grad_weight = torch.empty_like(states), torch.zeros_like(weight)
        loss = torch.zeros((), dtype=torch.float32, device=states.device)
        with torch.autocast(states.device.type, enabled=False):
            w = weight.to(dtype)  # (V, D), cast once for all chunks
            b = None if bias is None else bias.to(dtype)  # (V,)
            for start in range(0, states.size(0), chunk_rows):
                rows = slice(start, start + chunk_rows)
                h = states[rows].to(dtype)  # (n, D)
                log_probs = torch.log_softmax(F.linear(h, w, b), dim=-1, dtype=torch.float32)  # (n, V)
                loss += smoothed_nll(log_probs, target[rows], smoothing)
                grad = logits_grad_(log_probs, target[rows], smoothing).to(dtype)  # (n, V)
                grad_states[rows] = grad @ w  # (n, D)
                if grad_weight.dtype == dtype:
                    grad_weight.addmm_(grad.t(), h)  # (V, D)
                else:
                    grad_weight += grad.t() @ h
        ctx.save_for_backward(grad_states, grad_weight)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, None, None, None, None]:
        grad_states, grad_weight = ctx.saved_tensors
        return grad_states * grad, grad_weight * grad, None, None, None, None


def projected_cross_entropy_sum(states: Tensor, weight: Tensor, target: Tensor, smoothing: float = 0.0,
                                chunk_rows: int = CHUNK_ROWS, bias: Tensor | None = None) -> Tensor:
    """states (N, D), the output projection's weight (V, D), target (N,) -> the summed label-smoothed
    cross-entropy of the logits states @ weight^T + bias (a fixed (V,) bias, e.g. final_logits_bias, or None),
    a 0-dim fp32 tensor. Without autograd (a dev loss) only the loss is computed, chunk by chunk."""
    if torch.is_grad_enabled() and (states.requires_grad or weight.requires_grad):
        return ProjectedCrossEntropySum.apply(states, weight, bias, target, smoothing, chunk_rows)
    loss = torch.zeros((), dtype=torch.float32, device=states.device)
    for start in range(0, states.size(0), chunk_rows):
        rows = slice(start, start + chunk_rows)
        loss += smoothed_nll(torch.log_softmax(F.linear(states[rows], weight, bias), dim=-1, dtype=torch.float32),
                             target[rows], smoothing)
    return loss


class TokenLoss(nn.Module):
    """model's summed loss over a batch's real target tokens; wraps the model so that DistributedDataParallel
    and torch.compile see one forward."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0) -> Tensor:
        """src (B, S), tgt_in and tgt_out (B, T) ids -> the loss summed over tgt_out's non-pad tokens."""
        real = (tgt_out.flatten() != self.model.config.pad_id).nonzero().squeeze(1)  # (N,) flat positions
        states = self.model.decoder_states(tgt_in, self.model.encode(src).memory, src)  # (B, T, D)
        return projected_cross_entropy_sum(states.flatten(0, 1).index_select(0, real), self.model.generator.weight,
                                           tgt_out.flatten().index_select(0, real), label_smoothing,
                                           bias=self.model.final_logits_bias)

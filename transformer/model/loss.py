"""The training loss: label-smoothed cross-entropy on the real target tokens only.

Two savings over `F.cross_entropy(model(src, tgt_in).logits, ..., ignore_index=pad)`, equal to it up to float
rounding (tests/test_fast_training.py):
- the output projection and the log-softmax run on the real tokens' rows only, never on padding (14% of target
  positions in Bible batches), and the 8k-way logits of a padded batch are never built;
- one hand-written backward for log-softmax + label-smoothed NLL: softmax - smoothed target, a few passes over
  the (N, V) matrix where autograd makes eight (zeros, scatter, expand, add, log-softmax backward, ...).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from transformer.model.layers import Transformer


class SmoothedCrossEntropySum(torch.autograd.Function):
    """sum over rows of (1 - eps) * NLL + eps * mean over the vocabulary of -log p, as F.cross_entropy defines
    label smoothing; computed in fp32 whatever the logits' dtype, the gradient returned in the logits' dtype."""

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, smoothing: float) -> Tensor:
        log_probs = torch.log_softmax(logits, dim=-1, dtype=torch.float32)  # (N, V)
        nll = -log_probs.gather(1, target[:, None]).sum()
        loss = (1.0 - smoothing) * nll - smoothing / logits.size(-1) * log_probs.sum() if smoothing else nll
        ctx.save_for_backward(log_probs, target)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        log_probs, target = ctx.saved_tensors
        eps, V = ctx.smoothing, log_probs.size(-1)
        # d/dlogits of each row: softmax - ((1 - eps) * onehot(target) + eps / V); the saved matrix is reused
        g = log_probs.exp_()  # (N, V)
        if eps:
            g.sub_(eps / V)
        rows = torch.arange(g.size(0), device=g.device)
        g[rows, target] -= 1.0 - eps
        return g.mul_(grad).to(ctx.dtype), None, None


def smoothed_cross_entropy_sum(logits: Tensor, target: Tensor, smoothing: float = 0.0) -> Tensor:
    """logits (N, V), target (N,) -> the summed label-smoothed cross-entropy, a 0-dim fp32 tensor."""
    return SmoothedCrossEntropySum.apply(logits, target, smoothing)


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
        logits = self.model.generator(states.flatten(0, 1).index_select(0, real))  # (N, V)
        return smoothed_cross_entropy_sum(logits, tgt_out.flatten().index_select(0, real), label_smoothing)

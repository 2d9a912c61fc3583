"""Masks and attention (Section 3.2): scaled dot-product attention (Eq. 1) and its multi-head form.

Shape letters as in `transformer.model.layers`. Masks are boolean, True where a query may attend to a key, and
broadcast to (B, H, L_q, L_k). Attention weights are only computed when asked for, and are returned, never
stored on a module.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.model.config import ModelConfig
from transformer.model.dropout import cheap_dropout

KV = tuple[Tensor, Tensor]  # keys and values, each (B, H, L, Dh)


def extend(past: Tensor, new: Tensor) -> Tensor:
    """past (B, H, T, Dh), a view of a buffer with room after it (`transformer.model.layers.DecoderCache`), and new
    (B, H, T_new, Dh) -> (B, H, T + T_new, Dh): new written into the room, the past not copied."""
    B, H, T, Dh = past.shape
    if past.stride(2) != Dh or past.stride(1) < (T + new.size(2)) * Dh:  # (B, H, capacity, Dh) buffers
        raise ValueError(f"no room after the {T} cached positions for {new.size(2)} more")
    longer = past.as_strided((B, H, T + new.size(2), Dh), past.stride())
    longer[:, :, T:] = new
    return longer


# ----------------------------------------------------------------------------- masks


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, L) token ids -> (B, 1, 1, L): every query may attend to every non-pad key."""
    return (ids != pad_id)[:, None, None, :]


def target_padding_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """(B, T) decoder input ids -> (B, 1, 1, T): padding_mask, but the first key is never padding.

    The first position holds the decoder's start token, which is the pad id itself in models that start from pad
    (Marian); a start token of its own (our <s>) is never pad, so there this is padding_mask exactly.
    """
    keys = tgt != pad_id  # (B, T)
    keys[:, :1] = True
    return keys[:, None, None, :]


def subsequent_mask(size: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, T, T) lower triangle: position t may attend to positions <= t (Section 3.2.3)."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]


def target_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """(B, T) decoder input ids -> (B, 1, T, T): causal, and no query attends to a padding key."""
    return target_padding_mask(tgt, pad_id) & subsequent_mask(tgt.size(1), tgt.device)


# ----------------------------------------------------------------------------- attention


def attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor, *, dropout_p: float = 0.0, need_weights: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Scaled dot-product attention, Eq. 1: softmax(Q K^T / sqrt(d_k)) V.

    q (B, H, L_q, Dh), k and v (B, H, L_k, Dh), mask broadcastable to (B, H, L_q, L_k).
    Returns the output (B, H, L_q, Dh) and, when need_weights, the weights (B, H, L_q, L_k).
    Masked keys get exactly 0 weight; a query with no key to attend to gets an all-zero row and
    a zero output (both paths agree on this). Dropout on the weights (training) takes the written-out path
    with cheap masks: SDPA's own dropout falls back to its math path with Bernoulli draws on a CPU, 20-35%
    slower forward and backward (BENCHMARKS.md, issue 28).
    """
    if not need_weights and not dropout_p:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, L_q, L_k): a new tensor, filled in place
    scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    # softmax of an all-min row is uniform, so zero masked keys after it too: a product by the 0 / 1 mask (weights
    # are >= 0, so w * 0 is masked_fill's +0), which runs at several times masked_fill's speed on a CPU
    weights = scores.softmax(dim=-1).mul(mask.view(torch.uint8))
    out = (cheap_dropout(weights, dropout_p) if dropout_p else weights) @ v  # (B, H, L_q, Dh)
    return out, weights if need_weights else None


class MultiHeadAttention(nn.Module):
    """Section 3.2.2: H heads attend in parallel to learned projections of queries, keys and values."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.dropout = config.n_heads, config.dropout
        self.w_q = nn.Linear(config.d_model, config.d_model)
        self.w_kv = nn.Linear(config.d_model, 2 * config.d_model)  # keys and values in one matmul
        self.w_o = nn.Linear(config.d_model, config.d_model)

    def split_heads(self, x: Tensor) -> Tensor:
        B, L, D = x.shape
        return x.view(B, L, self.n_heads, D // self.n_heads).transpose(1, 2)  # (B, H, L, Dh)

    def project_q(self, x: Tensor) -> Tensor:
        """(B, L, D) -> queries (B, H, L, Dh)."""
        return self.split_heads(self.w_q(x))

    def project_kv(self, source: Tensor) -> KV:
        """(B, L, D) -> keys and values (B, H, L, Dh): computed once per source for cross-attention."""
        k, v = self.w_kv(source).chunk(2, dim=-1)  # 2 x (B, L, D)
        return self.split_heads(k), self.split_heads(v)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention's queries, keys and values of x (B, L, D), each (B, H, L, Dh): project_q and project_kv.

        In training, one (D, 3D) product of w_q and w_kv concatenated (they stay separate parameters, so that
        checkpoints keep their names); decoding one token at a time would pay more for the copy than it gains.
        """
        if not self.training:
            return self.project_q(x), *self.project_kv(x)
        weight = torch.cat([self.w_q.weight, self.w_kv.weight])  # (3D, D)
        bias = torch.cat([self.w_q.bias, self.w_kv.bias])  # (3D,)
        q, k, v = F.linear(x, weight, bias).chunk(3, dim=-1)  # 3 x (B, L, D)
        return self.split_heads(q), self.split_heads(k), self.split_heads(v)

    def attend(
        self, q: Tensor, kv: KV, mask: Tensor, *, need_weights: bool = False, head_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Projected queries q (B, H, L_q, Dh) attend to kv; head_mask (H,) scales each head's output."""
        dropout_p = self.dropout if self.training else 0.0
        out, weights = attention(q, *kv, mask, dropout_p=dropout_p, need_weights=need_weights)
        if head_mask is not None:
            out = out * head_mask.view(1, -1, 1, 1)
        B, H, L, Dh = out.shape
        out = out.transpose(1, 2).reshape(B, L, H * Dh)  # (B, L_q, D): concatenate the heads
        return self.w_o(out), weights

    def forward(
        self, x: Tensor, kv: KV, mask: Tensor, *, need_weights: bool = False, head_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, L_q, D) attends to kv; head_mask (H,) scales each head's output (0 switches it off)."""
        return self.attend(self.project_q(x), kv, mask, need_weights=need_weights, head_mask=head_mask)

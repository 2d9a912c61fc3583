"""The blocks of Figure 1: the position-wise feed-forward network, the residual sublayer around each
attention and feed-forward, and the encoder and decoder layers built from them.

Shape letters as in `transformer.model.layers`.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from transformer.model.attention import KV, MultiHeadAttention, extend
from transformer.model.config import ModelConfig
from transformer.model.dropout import Dropout

ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu}  # swish(x) = x * sigmoid(x)


class FeedForward(nn.Module):
    """Section 3.3, Eq. 2: two linear maps with a ReLU (or GELU, or swish) between, applied at every position."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.w_1 = nn.Linear(config.d_model, config.d_ff)
        self.w_2 = nn.Linear(config.d_ff, config.d_model)
        self.activation = ACTIVATION_FUNCTIONS[config.activation]
        self.dropout = Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_2(self.dropout(self.activation(self.w_1(x))))  # (B, L, F) inside, (B, L, D) out


class Sublayer(nn.Module):
    """Residual connection around a sublayer with LayerNorm before it (pre-LN) or after it (paper)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.dropout)
        self.norm_first = config.norm_first

    def forward(self, x: Tensor, out: Tensor) -> Tensor:
        """x is the residual stream, out the sublayer's output computed from self.input(x)."""
        return x + self.dropout(out) if self.norm_first else self.norm(x + self.dropout(out))

    def input(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.norm_first else x


class EncoderLayer(nn.Module):
    """Figure 1, left: self-attention, then feed-forward."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.self_attn, self.feed_forward = MultiHeadAttention(config), FeedForward(config)
        self.sublayers = nn.ModuleList([Sublayer(config), Sublayer(config)])

    def forward(self, x: Tensor, src_mask: Tensor, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        h = self.sublayers[0].input(x)
        q, k, v = self.self_attn.project_qkv(h)  # (B, H, S, Dh) each
        out, weights = self.self_attn.attend(q, (k, v), src_mask, need_weights=need_weights)
        x = self.sublayers[0](x, out)
        x = self.sublayers[1](x, self.feed_forward(self.sublayers[1].input(x)))
        return x, weights  # (B, S, D), (B, H, S, S) or None


class DecoderLayer(nn.Module):
    """Figure 1, right: masked self-attention, cross-attention over the encoder memory, feed-forward."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(config), MultiHeadAttention(config)
        self.feed_forward = FeedForward(config)
        self.sublayers = nn.ModuleList([Sublayer(config) for _ in range(3)])

    def forward(
        self, x: Tensor, past: KV | None, cross_kv: KV, tgt_mask: Tensor, src_mask: Tensor, need_weights: bool
    ) -> tuple[Tensor, KV, Tensor | None, Tensor | None]:
        """x (B, T_new, D) are the new positions; past holds the keys and values of earlier ones, views of buffers
        with room for T_new more (`DecoderCache`), which this writes.

        Returns the new x, the self-attention keys and values of all positions so far (the next
        step's past), and the self- and cross-attention weights (None unless need_weights).
        """
        h = self.sublayers[0].input(x)
        q, k, v = self.self_attn.project_qkv(h)  # (B, H, T_new, Dh) each
        if past is not None:
            k, v = extend(past[0], k), extend(past[1], v)  # (B, H, T, Dh)
        out, self_weights = self.self_attn.attend(q, (k, v), tgt_mask, need_weights=need_weights)
        x = self.sublayers[0](x, out)
        out, cross_weights = self.cross_attn(self.sublayers[1].input(x), cross_kv, src_mask, need_weights=need_weights)
        x = self.sublayers[1](x, out)
        x = self.sublayers[2](x, self.feed_forward(self.sublayers[2].input(x)))
        return x, (k, v), self_weights, cross_weights

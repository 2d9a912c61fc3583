"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), from scratch.

Read top to bottom: masks, scaled dot-product attention, multi-head attention, feed-forward,
positional encoding, encoder layer, decoder layer, and the encoder-decoder model with its
incremental (KV-cached) decoding step.

Shape letters used in every comment:
    B batch, S source length, T target length, L any sequence length, H heads,
    D d_model, Dh head dim (D // H), F d_ff, V vocabulary size.

Masks are boolean, True where a query may attend to a key, and broadcast to (B, H, L_q, L_k).
Attention weights are only computed when asked for, and are returned, never stored on a module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.model.config import ModelConfig
from transformer.model.dropout import Dropout, cheap_dropout

KV = tuple[Tensor, Tensor]  # keys and values, each (B, H, L, Dh)


# ----------------------------------------------------------------------------- masks


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, L) token ids -> (B, 1, 1, L): every query may attend to every non-pad key."""
    return (ids != pad_id)[:, None, None, :]


def subsequent_mask(size: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, T, T) lower triangle: position t may attend to positions <= t (Section 3.2.3)."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]


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
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, L_q, L_k)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    # softmax of an all-min row is uniform, so zero masked keys after it too
    weights = scores.softmax(dim=-1).masked_fill(~mask, 0.0)
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


# ----------------------------------------------------------------------------- feed-forward and positions


class FeedForward(nn.Module):
    """Section 3.3, Eq. 2: two linear maps with a ReLU (or GELU) between, applied at every position."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.w_1 = nn.Linear(config.d_model, config.d_ff)
        self.w_2 = nn.Linear(config.d_ff, config.d_model)
        self.activation = F.relu if config.activation == "relu" else F.gelu
        self.dropout = Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_2(self.dropout(self.activation(self.w_1(x))))  # (B, L, F) inside, (B, L, D) out


def sinusoidal_encoding(max_len: int, d_model: int) -> Tensor:
    """Section 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...). Returns (max_len, D)."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
    return pe


class Embedding(nn.Module):
    """Token embedding scaled by sqrt(D) plus the sinusoidal position (Sections 3.4 and 3.5)."""

    def __init__(self, vocab_size: int, config: ModelConfig):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, config.d_model)
        self.scale = math.sqrt(config.d_model)
        self.register_buffer("pe", sinusoidal_encoding(config.max_len, config.d_model), persistent=False)
        self.dropout = Dropout(config.dropout)

    def forward(self, ids: Tensor, start: int = 0) -> Tensor:
        """ids (B, L) at positions start..start+L-1 -> (B, L, D)."""
        if start + ids.size(1) > self.pe.size(0):
            raise ValueError(f"sequence of {start + ids.size(1)} tokens exceeds max_len {self.pe.size(0)}")
        return self.dropout(self.tokens(ids) * self.scale + self.pe[start : start + ids.size(1)])


# ----------------------------------------------------------------------------- layers


class Sublayer(nn.Module):
    """Residual connection around a sublayer with LayerNorm before it (pre-LN) or after it (paper)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.norm = nn.LayerNorm(config.d_model)
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
        """x (B, T_new, D) are the new positions; past holds the keys and values of earlier ones.

        Returns the new x, the self-attention keys and values of all positions so far (the next
        step's past), and the self- and cross-attention weights (None unless need_weights).
        """
        h = self.sublayers[0].input(x)
        q, k, v = self.self_attn.project_qkv(h)  # (B, H, T_new, Dh) each
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # (B, H, T, Dh)
        out, self_weights = self.self_attn.attend(q, (k, v), tgt_mask, need_weights=need_weights)
        x = self.sublayers[0](x, out)
        out, cross_weights = self.cross_attn(self.sublayers[1].input(x), cross_kv, src_mask, need_weights=need_weights)
        x = self.sublayers[1](x, out)
        x = self.sublayers[2](x, self.feed_forward(self.sublayers[2].input(x)))
        return x, (k, v), self_weights, cross_weights


# ----------------------------------------------------------------------------- typed outputs


@dataclass
class AttentionMaps:
    """Per-layer attention weights; rows are queries, columns keys (for cross: rows are target tokens)."""

    enc_self: list[Tensor]  # n_encoder_layers x (B, H, S, S)
    dec_self: list[Tensor]  # n_decoder_layers x (B, H, T, T)
    cross: list[Tensor]  # n_decoder_layers x (B, H, T, S)


@dataclass
class EncoderOutput:
    memory: Tensor  # (B, S, D)
    attention: list[Tensor] | None  # n_encoder_layers x (B, H, S, S) when asked for


@dataclass
class DecoderOutput:
    logits: Tensor  # (B, T, V)
    self_attention: list[Tensor] | None  # n_decoder_layers x (B, H, T, T) when asked for
    cross_attention: list[Tensor] | None  # n_decoder_layers x (B, H, T, S) when asked for


@dataclass
class Seq2SeqOutput:
    logits: Tensor  # (B, T, V)
    attention: AttentionMaps | None


@dataclass(frozen=True)
class DecoderCache:
    """Everything a decoding step needs from earlier steps; immutable, so a step returns a new one."""

    tokens: Tensor  # (B, T) target ids fed so far
    self_kv: tuple[KV, ...]  # per decoder layer, (B, H, T, Dh) keys and values of the fed tokens
    cross_kv: tuple[KV, ...]  # per decoder layer, (B, H, S, Dh): projected once per source
    src_mask: Tensor  # (B, 1, 1, S)

    def reorder(self, index: Tensor) -> DecoderCache:
        """Select (and repeat) batch rows, e.g. the surviving hypotheses of a beam search step."""

        def pick(kv: KV) -> KV:
            return kv[0].index_select(0, index), kv[1].index_select(0, index)

        return DecoderCache(
            self.tokens.index_select(0, index),
            tuple(pick(kv) for kv in self.self_kv),
            tuple(pick(kv) for kv in self.cross_kv),
            self.src_mask.index_select(0, index),
        )


@dataclass
class StepOutput:
    logits: Tensor  # (B, V) for the next token
    cache: DecoderCache  # includes the token just fed
    self_attention: list[Tensor] | None  # n_decoder_layers x (B, H, T) row of the token just fed
    cross_attention: list[Tensor] | None  # n_decoder_layers x (B, H, S)


# ----------------------------------------------------------------------------- the model


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.src_embed = Embedding(config.src_vocab_size, config)
        self.tgt_embed = self.src_embed if config.share_embeddings else Embedding(config.tgt_vocab_size, config)
        self.encoder_layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.n_encoder_layers)])
        self.decoder_layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.n_decoder_layers)])
        # pre-LN leaves the residual stream unnormalised, so each stack ends with a LayerNorm
        self.encoder_norm = nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)
        self._init_weights()
        if config.tie_output:
            self.generator.weight = self.tgt_embed.tokens.weight

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        for embed in {self.src_embed, self.tgt_embed}:
            # std D^-1/2 so that the sqrt(D) scaling yields unit-variance inputs
            nn.init.normal_(embed.tokens.weight, std=self.config.d_model**-0.5)

    def encode(self, src: Tensor, *, return_attention: bool = False) -> EncoderOutput:
        """src (B, S) ids -> memory (B, S, D)."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        x, maps = self.src_embed(src), []
        for layer in self.encoder_layers:
            x, weights = layer(x, src_mask, return_attention)
            maps.append(weights)
        return EncoderOutput(self.encoder_norm(x), maps if return_attention else None)

    def _decoder_stack(
        self, tgt: Tensor, memory: Tensor, src: Tensor, return_attention: bool
    ) -> tuple[Tensor, list[Tensor | None], list[Tensor | None]]:
        """The decoder layers and final norm over tgt (B, T): states (B, T, D) and per-layer weights."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        tgt_mask = padding_mask(tgt, self.config.pad_id) & subsequent_mask(tgt.size(1), tgt.device)  # (B, 1, T, T)
        x, self_maps, cross_maps = self.tgt_embed(tgt), [], []
        for layer in self.decoder_layers:
            x, _, self_w, cross_w = layer(
                x, None, layer.cross_attn.project_kv(memory), tgt_mask, src_mask, return_attention
            )
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        return self.decoder_norm(x), self_maps, cross_maps

    def decoder_states(self, tgt: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        """Teacher-forced decoder states (B, T, D) before the output projection (training projects only the
        rows of real tokens, see transformer.model.loss)."""
        return self._decoder_stack(tgt, memory, src, False)[0]

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor, *, return_attention: bool = False) -> DecoderOutput:
        """Teacher-forced decoding: tgt (B, T) ids, memory (B, S, D), src (B, S) ids -> logits (B, T, V)."""
        x, self_maps, cross_maps = self._decoder_stack(tgt, memory, src, return_attention)
        logits = self.generator(x)
        if not return_attention:
            return DecoderOutput(logits, None, None)
        return DecoderOutput(logits, self_maps, cross_maps)

    def forward(self, src: Tensor, tgt: Tensor, *, return_attention: bool = False) -> Seq2SeqOutput:
        """src (B, S), tgt (B, T) ids -> logits (B, T, V) for the token after each target position."""
        enc = self.encode(src, return_attention=return_attention)
        dec = self.decode(tgt, enc.memory, src, return_attention=return_attention)
        if not return_attention:
            return Seq2SeqOutput(dec.logits, None)
        return Seq2SeqOutput(dec.logits, AttentionMaps(enc.attention, dec.self_attention, dec.cross_attention))

    # ------------------------------------------------------------------------- incremental decoding

    def start_cache(self, memory: Tensor, src: Tensor) -> DecoderCache:
        """An empty cache for decoding from memory (B, S, D): cross-attention keys and values computed once."""
        B = src.size(0)
        empty = memory.new_zeros(B, self.config.n_heads, 0, self.config.d_head)  # (B, H, 0, Dh)
        return DecoderCache(
            tokens=src.new_zeros(B, 0),
            self_kv=tuple((empty, empty) for _ in self.decoder_layers),
            cross_kv=tuple(layer.cross_attn.project_kv(memory) for layer in self.decoder_layers),
            src_mask=padding_mask(src, self.config.pad_id),
        )

    def decode_step(self, token: Tensor, cache: DecoderCache, *, return_attention: bool = False) -> StepOutput:
        """Feed one token per row, token (B,), attending to the cached prefix; equals a row of decode()."""
        tokens = torch.cat([cache.tokens, token[:, None]], dim=1)  # (B, T)
        tgt_mask = padding_mask(tokens, self.config.pad_id)  # (B, 1, 1, T): the new query sees every past key
        x = self.tgt_embed(token[:, None], start=cache.tokens.size(1))  # (B, 1, D)
        self_kv, self_rows, cross_rows = [], [], []
        for layer, past, cross_kv in zip(self.decoder_layers, cache.self_kv, cache.cross_kv):
            x, kv, self_w, cross_w = layer(x, past, cross_kv, tgt_mask, cache.src_mask, return_attention)
            self_kv.append(kv)
            if return_attention:
                self_rows.append(self_w[:, :, 0])  # (B, H, T)
                cross_rows.append(cross_w[:, :, 0])  # (B, H, S)
        h = self.decoder_norm(x[:, 0])  # (B, D)
        # a few rows (a beam) as (W h^T)^T: MKL then packs the rows, not the whole (V, D) weight, several times faster
        logits = (self.generator.weight @ h.t()).t() if 1 < h.size(0) <= 8 else self.generator(h)  # (B, V)
        new_cache = DecoderCache(tokens, tuple(self_kv), cache.cross_kv, cache.src_mask)
        if not return_attention:
            return StepOutput(logits, new_cache, None, None)
        return StepOutput(logits, new_cache, self_rows, cross_rows)

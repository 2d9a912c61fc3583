"""Lenses over attention itself: raw weights, norm-weighted weights, Shift-Att, and attention rollout.

Each returns a `LensMaps`: the three families' maps of one sentence in the layout of
`transformer.decoding.translate.TranslationAttention` (rows are queries, columns keys; row t of a decoder map
belongs to the query that emitted output token t, unless the lens says otherwise). A lens that reads every head
of a layer together gives one map per layer (H = 1).

- norm-weighted (Kobayashi et al., "Attention is Not Only a Weight: Analyzing Transformers with Vector Norms",
  EMNLP 2020, Eq. 5): alpha^h_ij ||f^h(x_j)||, where f^h(x) = (x W_V^h + b_V^h) W_O^h is what key j sends through
  head h (W_O^h the columns of W^O that read head h). In this pre-LN model x_j is the layer-normalised stream
  the sublayer projects (the encoder memory for cross-attention). Rows are renormalised to sum to 1, so that a
  lens compares with raw weights; when every ||f^h(x_j)|| is equal the lens equals raw attention. Those are the
  per-head maps; the layer's map is Kobayashi et al.'s layer-level measure, the norm of the head-summed vector
  ||Σ_h alpha^h_ij f^h(x_j)|| (rows renormalised), in `LensMaps.layer_maps`: heads that move opposite vectors
  cancel there, where a mean of the per-head maps would add them.
- Shift-Att (Chen et al., "Accurate Word Alignment Induction from Neural Machine Translation", EMNLP 2020, Sec.
  3.1): output token y_t is aligned by the cross-attention of the step at which y_t is the decoder's *input*,
  row t + 1 here. The last output token (normally </s>) is never an input when decoding; we feed it one extra
  step (see `trace`) and read that row, so every token has a row. Only cross-attention is shifted; the other
  families are shown as the lens below the shift shows them (raw or norm-weighted).
- rollout (Abnar and Zuidema, "Quantifying Attention Flow in Transformers", ACL 2020, Sec. 3): with the
  residual, A~_l = 0.5 mean_h A_l + 0.5 I (rows renormalised), and the encoder's layer l map is
  R_l = A~_l ... A~_1: how much each position draws on each *input* token. Decoder self-attention is rolled out
  the same way; cross-attention of decoder layer l is carried to the source tokens: mean_h A_cross,l R_L with
  R_L the whole encoder's rollout. That product has no residual and carries nothing through the decoder's
  self-attention (ALTI+'s decoder rollout does both): where layer l reads in the source words, not the share of
  an output token that comes from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer.explain.lenses.trace import SublayerTrace, Trace, head_outputs
from transformer.model.layers import Transformer

FAMILY_ATTN = {"enc_self": ("encoder_layers", "self_attn"), "dec_self": ("decoder_layers", "self_attn"),
               "cross": ("decoder_layers", "cross_attn")}


@dataclass(frozen=True)
class LayerMaps:
    """One map per layer of all its heads, where a lens defines its own (the norm-weighted lens's
    ||Σ_h alpha^h_ij f^h(x_j)||): enc_self (1, S, S), dec_self (1, T, T), cross (1, T, S) per layer."""

    enc_self: tuple[Tensor, ...]
    dec_self: tuple[Tensor, ...]
    cross: tuple[Tensor, ...]


@dataclass(frozen=True)
class LensMaps:
    """One lens's maps of one sentence. enc_self (H', S, S), dec_self (H', T, T), cross (H', T, S) per layer,
    H' = H or 1; source_share (per decoder layer, (T,)) is the share of each output token that comes from the
    source, for the lenses that split a token between source and target prefix (ALTI+), else None. layer_maps:
    the layer's own map where the lens defines one (norm-weighted), else None: the layer is the heads' mean."""

    lens: str
    enc_self: tuple[Tensor, ...]
    dec_self: tuple[Tensor, ...]
    cross: tuple[Tensor, ...]
    source_share: tuple[Tensor, ...] | None = None
    layer_maps: LayerMaps | None = None


def renormalise(maps: Tensor) -> Tensor:
    """Rows (last dim) scaled to sum to 1; an all-zero row (a fully masked query) stays zero."""
    return maps / maps.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(maps.dtype).tiny)


def crop(trace: Trace, family: str, maps: Tensor, shifted: bool = False) -> Tensor:
    """Decoder rows 0..T-1 (1..T when shifted) and, for dec_self, the T columns decoding had read."""
    if family == "enc_self":
        return maps
    T = trace.n_output
    rows = maps[..., 1 : T + 1, :] if shifted else maps[..., :T, :]
    return rows[..., :T] if family == "dec_self" else rows


def _sublayers(trace: Trace, family: str) -> tuple[SublayerTrace, ...]:
    return getattr(trace, family)


def raw(model: Transformer, trace: Trace) -> LensMaps:
    """alpha^h_ij as the model computes it."""
    del model
    return LensMaps("raw", *(tuple(crop(trace, f, s.weights) for s in _sublayers(trace, f))
                             for f in ("enc_self", "dec_self", "cross")))


def value_norms(model: Transformer, family: str, layer: int, sub: SublayerTrace) -> Tensor:
    """||f^h(x_j)|| of every head and key: (H, Lk)."""
    stack, name = FAMILY_ATTN[family]
    attn = getattr(getattr(model, stack)[layer], name)
    return head_outputs(attn, sub.keys_input).norm(dim=-1)


def norm_weighted_map(model: Transformer, family: str, layer: int, sub: SublayerTrace) -> Tensor:
    """Kobayashi et al.'s alpha^h_ij ||f^h(x_j)||, rows renormalised: (H, Lq, Lk)."""
    return renormalise(sub.weights * value_norms(model, family, layer, sub)[:, None, :])


def norm_layer_map(model: Transformer, family: str, layer: int, sub: SublayerTrace) -> Tensor:
    """Kobayashi et al.'s layer-level ||Σ_h alpha^h_ij f^h(x_j)||, rows renormalised: (1, Lq, Lk)."""
    stack, name = FAMILY_ATTN[family]
    moved = head_outputs(getattr(getattr(model, stack)[layer], name), sub.keys_input)  # (H, Lk, D)
    summed = torch.einsum("hqk,hkd->qkd", sub.weights, moved)  # (Lq, Lk, D): what key j sends query i, all heads
    return renormalise(summed.norm(dim=-1))[None]


def norm_weighted(model: Transformer, trace: Trace) -> LensMaps:
    families = ("enc_self", "dec_self", "cross")
    per_head = (tuple(crop(trace, f, norm_weighted_map(model, f, i, s)) for i, s in enumerate(_sublayers(trace, f)))
                for f in families)
    layer = (tuple(crop(trace, f, norm_layer_map(model, f, i, s)) for i, s in enumerate(_sublayers(trace, f)))
             for f in families)
    return LensMaps("norm", *per_head, layer_maps=LayerMaps(*layer))


def shift_att(model: Transformer, trace: Trace, *, norms: bool = False) -> LensMaps:
    """Chen et al.'s shifted cross-attention, row t the query that reads output token t; with norms, over the
    norm-weighted maps (Kobayashi et al. report the two together), the other families then norm-weighted too."""
    below = norm_weighted(model, trace) if norms else raw(model, trace)
    maps = [norm_weighted_map(model, "cross", i, s) if norms else s.weights for i, s in enumerate(trace.cross)]
    return LensMaps("shift_norm" if norms else "shift", below.enc_self, below.dec_self,
                    tuple(crop(trace, "cross", m, shifted=True) for m in maps))


def rollout(maps: Sequence[Tensor]) -> list[Tensor]:
    """Abnar and Zuidema's rollout with the residual: per layer (H, L, L) -> the rolled-out (L, L) of every layer,
    R_l = A~_l R_(l-1), A~ = renormalised 0.5 mean_h A + 0.5 I."""
    rolled, joint = [], None
    for weights in maps:
        eye = torch.eye(weights.size(-1), dtype=weights.dtype, device=weights.device)
        step = renormalise(0.5 * weights.mean(dim=0) + 0.5 * eye)  # (L, L)
        joint = step if joint is None else step @ joint
        rolled.append(joint)
    return rolled


def attention_rollout(model: Transformer, trace: Trace) -> LensMaps:
    """Rollout through the encoder and the decoder's self-attention, and cross-attention carried to the source."""
    del model
    enc = rollout([s.weights for s in trace.enc_self])
    dec = rollout([s.weights for s in trace.dec_self])
    cross = [s.weights.mean(dim=0) @ enc[-1] for s in trace.cross]  # (T + 1, S)
    return LensMaps("rollout", tuple(m[None] for m in enc), tuple(crop(trace, "dec_self", m[None]) for m in dec),
                    tuple(crop(trace, "cross", m[None]) for m in cross))

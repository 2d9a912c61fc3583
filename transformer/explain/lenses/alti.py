"""ALTI and ALTI+: how much each input token contributes to each position, through the whole model.

Ferrando, Gállego, Alastruey, Escolano and Costa-jussà, "Towards Opening the Black Box of Neural Machine
Translation: Source and Target Contributions to the Model Predictions" (ALTI+, EMNLP 2022), building on
Ferrando, Gállego and Costa-jussà, "Measuring the Mixing of Contextual Information in the Transformer" (ALTI,
EMNLP 2022). Written from the papers and checked against the authors' code (mt-upc/transformer-contributions-nmt,
`wrappers/transformer_wrapper.py`: `__get_contributions_module`, `get_contribution_rollout`).

Each attention sublayer's output y_i (the residual stream after it) is a sum of one vector per input:
    self-attention   y_i = sum_j T_i(x_j) + b_O,   T_i(x_j) = sum_h alpha^h_ij f^h(x_j) + [i = j] x_i
    cross-attention  y_i = sum_j T_i(m_j) + x_i + b_O, the residual x_i one more "input"
with f^h as in Kobayashi et al. (`attention.py`). In this pre-LN model y_i is read before any layer norm, so
nothing needs linearising; a post-LN model's norm is linearised as the paper's Eq. 7 does (the standard deviation
held at its value). The contribution of input j is c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), normalised to
sum to 1 per row (the authors' "min_sum"). The feed-forward and final norms act per position and mix nothing.

Rolled out across layers (ALTI): the encoder's R_l = C_l R_(l-1). ALTI+ for the decoder: per layer, the
self-attention contributions are scaled by the share the cross-attention sublayer leaves to its residual, and
put beside the cross-attention's source contributions carried to the source tokens, [C_cross R_enc, C_self r];
layers are rolled out as in the authors' `rollout`, the rows renormalised. Each output token's row then sums to
1 over the source tokens and the target prefix: `source_share` is the part of the source.
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer.explain.lenses.attention import LensMaps, renormalise
from transformer.explain.lenses.trace import SublayerTrace, Trace, head_outputs
from transformer.model.layers import MultiHeadAttention, Sublayer, Transformer


def _linearised_norm(vectors: Tensor, resultant_pre: Tensor, norm: Sublayer) -> tuple[Tensor, Tensor]:
    """Post-LN: LN(sum_j v_j) ~ sum_j gamma (v_j - mean v_j) / std + beta, std that of the real sum (Eq. 7).
    vectors (Lq, Lk, D), resultant_pre (Lq, D) -> the transformed vectors and the norm's real output."""
    ln = norm.norm
    std = (resultant_pre.var(dim=-1, unbiased=False, keepdim=True) + ln.eps).sqrt()  # (Lq, 1)
    centred = vectors - vectors.mean(dim=-1, keepdim=True)
    return ln.weight * centred / std[:, None, :], ln(resultant_pre)


def contributions(attn: MultiHeadAttention, sublayer: Sublayer, sub: SublayerTrace, *, cross: bool) -> Tensor:
    """c_ij of one attention sublayer: (Lq, Lk) for self-attention, (Lq, Lk + 1) for cross-attention (the last
    column is the residual). Rows are non-negative and sum to 1."""
    f = head_outputs(attn, sub.keys_input)  # (H, Lk, D)
    vectors = (sub.weights[..., None] * f[:, None]).sum(dim=0)  # (Lq, Lk, D): sum_h alpha^h_ij f^h(x_j)
    if cross:
        vectors = torch.cat([vectors, sub.residual[:, None, :]], dim=1)  # (Lq, Lk + 1, D)
    else:
        vectors = vectors + torch.diag_embed(sub.residual.T).permute(1, 2, 0)  # + [i = j] x_i
    resultant = vectors.sum(dim=1) + attn.w_o.bias  # (Lq, D) = x_i + the sublayer's output
    if not sublayer.norm_first:
        bias = attn.w_o.bias.expand(vectors.size(0), 1, -1)  # (Lq, 1, D)
        vectors, resultant = _linearised_norm(torch.cat([vectors, bias], dim=1), resultant, sublayer)
        vectors = vectors[:, :-1]  # the bias's share stays in the resultant only, as in the authors' code
    distance = (resultant[:, None, :] - vectors).abs().sum(dim=-1)  # (Lq, Lk): ||y_i - T_i(x_j)||_1
    return renormalise((resultant.abs().sum(dim=-1, keepdim=True) - distance).clamp(min=0.0))


def alti(model: Transformer, trace: Trace) -> LensMaps:
    """ALTI rollout through the encoder and ALTI+ through the decoder: one map per layer (H = 1)."""
    enc, joint = [], None
    for layer, sub in zip(model.encoder_layers, trace.enc_self):
        c = contributions(layer.self_attn, layer.sublayers[0], sub, cross=False)  # (S, S)
        joint = c if joint is None else c @ joint
        enc.append(joint)
    S, T = len(trace.src_ids), trace.n_output
    total, crosses, selves, shares = None, [], [], []
    for layer, self_sub, cross_sub in zip(model.decoder_layers, trace.dec_self, trace.cross):
        c_self = contributions(layer.self_attn, layer.sublayers[0], self_sub, cross=False)  # (T+1, T+1)
        c_cross = contributions(layer.cross_attn, layer.sublayers[1], cross_sub, cross=True)  # (T+1, S+1)
        from_source = c_cross[:, :S] @ enc[-1]  # (T+1, S): memory tokens carried to the source tokens
        from_prefix = c_self * c_cross[:, S:]  # (T+1, T+1): the residual's share, split by self-attention
        if total is None:
            total = torch.cat([from_source, from_prefix], dim=1)  # (T+1, S+T+1)
        else:
            total = renormalise(torch.cat([from_prefix @ total[:, :S] + from_source, from_prefix @ total[:, S:]],
                                          dim=1))
        crosses.append(total[None, :T, :S])
        selves.append(total[None, :T, S : S + T])  # the extra position is after every row kept: 0 there
        shares.append(total[:T, :S].sum(dim=-1))
    return LensMaps("alti", tuple(m[None] for m in enc), tuple(selves), tuple(crosses), tuple(shares))

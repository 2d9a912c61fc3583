"""Value zeroing: how much a token's output changes when one key's value vector is zeroed in its layer.

Mohebbi, Zuidema, Chrupała and Alishahi, "Quantifying Context Mixing in Transformers", EACL 2023, Sec. 2: to
score how much token i draws on token j in layer l, set j's value vector to zero in every head of that layer's
attention (its key stays, so every attention weight is unchanged), recompute the layer, and take the cosine
distance between token i's original and new layer output (the residual stream after the whole layer, its
feed-forward included). Each row is normalised to sum to 1 (their Sec. 2, "we normalize each row"); a row the
zeroing never changes stays zero. One map per layer (H = 1).

Here each attention family of a layer is scored on its own: encoder self-attention zeroes a source token's value,
decoder self-attention a target input token's, cross-attention a memory token's in that decoder layer. All keys
of a layer are zeroed in one batched pass (a batch of Lk copies, copy j with key j's value zeroed).
"""

from __future__ import annotations

import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.explain.lenses.attention import LensMaps, crop, renormalise
from transformer.explain.lenses.trace import Trace
from transformer.model.layers import MultiHeadAttention, Transformer, padding_mask, target_mask


def _zeroed_outputs(attn: MultiHeadAttention, x_q: Tensor, keys_input: Tensor, mask: Tensor) -> Tensor:
    """attn's output for queries x_q (Lq, D) over keys_input (Lk, D): copy 0 as it is, then once per zeroed key
    (Lk + 1, Lq, D). The unchanged copy goes through the same batched kernels, so that a key the query cannot see
    scores exactly 0 rather than rounding noise."""
    Lk = keys_input.size(0)
    q = attn.project_q(x_q[None]).expand(Lk + 1, -1, -1, -1)  # (Lk + 1, H, Lq, Dh)
    k, v = attn.project_kv(keys_input[None])  # (1, H, Lk, Dh) each
    eye = torch.eye(Lk, dtype=v.dtype, device=v.device)
    keep = torch.cat([torch.ones_like(eye[:1]), 1.0 - eye])  # (copies, keys): copy j + 1 has key j's value 0
    v = v * keep[:, None, :, None]  # (Lk + 1, H, Lk, Dh)
    out, _ = attn.attend(q, (k.expand(Lk + 1, -1, -1, -1), v), mask)
    return out  # (Lk + 1, Lq, D)


def cosine_scores(outputs: Tensor) -> Tensor:
    """The layer's outputs (Lk + 1 copies, Lq, D), copy 0 unchanged -> rows normalised cosine distances (Lq, Lk)."""
    distance = 1.0 - torch.nn.functional.cosine_similarity(outputs[1:], outputs[:1], dim=-1)  # (Lk, Lq)
    unchanged = (outputs[1:] == outputs[:1]).all(dim=-1)  # 1 - cos(x, x) rounds to ~1e-7, not 0
    distance = distance.masked_fill(unchanged, 0.0)
    return renormalise(distance.T.clamp(min=0.0))


@torch.no_grad()
def value_zeroing(model: Transformer, trace: Trace) -> LensMaps:
    """Every layer and family's value-zeroing map of the traced sentence, of at most `checks.MAX_ZEROED` source and
    output pieces together (as the app's limit: each layer runs once per token)."""
    if len(trace.src_ids) + trace.n_output > checks.MAX_ZEROED:
        raise ValueError(f"value zeroing takes at most {checks.MAX_ZEROED} source and output pieces together "
                         f"(src_ids and output_ids), got {len(trace.src_ids)} + {trace.n_output}")
    device = next(model.parameters()).device
    src = torch.tensor([list(trace.src_ids)], device=device)
    tgt = torch.tensor([list(trace.decoder_input)], device=device)
    src_mask = padding_mask(src, model.config.pad_id)  # (1, 1, 1, S)
    tgt_mask = target_mask(tgt, model.config.pad_id)
    enc = []
    for layer, sub in zip(model.encoder_layers, trace.enc_self):
        out = _zeroed_outputs(layer.self_attn, sub.keys_input, sub.keys_input, src_mask)  # (S + 1, S, D)
        x = layer.sublayers[0](sub.residual[None], out)
        x = layer.sublayers[1](x, layer.feed_forward(layer.sublayers[1].input(x)))
        enc.append(cosine_scores(x)[None])
    memory = trace.memory[None]
    dec_self, cross = [], []
    for layer, self_sub, cross_sub in zip(model.decoder_layers, trace.dec_self, trace.cross):
        # decoder self-attention: the whole layer after it runs again on each changed copy
        out = _zeroed_outputs(layer.self_attn, self_sub.keys_input, self_sub.keys_input, tgt_mask)  # (T+2, T+1, D)
        x = layer.sublayers[0](self_sub.residual[None], out)
        kv = layer.cross_attn.project_kv(memory.expand(x.size(0), -1, -1))
        x = layer.sublayers[1](x, layer.cross_attn(layer.sublayers[1].input(x), kv, src_mask)[0])
        x = layer.sublayers[2](x, layer.feed_forward(layer.sublayers[2].input(x)))
        dec_self.append(crop(trace, "dec_self", cosine_scores(x)[None]))
        # cross-attention: from the stream after self-attention, which the memory does not touch
        out = _zeroed_outputs(layer.cross_attn, layer.sublayers[1].input(cross_sub.residual[None])[0],
                              cross_sub.keys_input, src_mask)  # (S + 1, T+1, D)
        x = layer.sublayers[1](cross_sub.residual[None], out)
        x = layer.sublayers[2](x, layer.feed_forward(layer.sublayers[2].input(x)))
        cross.append(crop(trace, "cross", cosine_scores(x)[None]))
    return LensMaps("value_zeroing", tuple(enc), tuple(dec_self), tuple(cross))

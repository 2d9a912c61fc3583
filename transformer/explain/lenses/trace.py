"""One teacher-forced pass of one sentence that keeps what the lenses read: every layer's input residual stream,
the normalised input each attention sublayer projects (its keys' input), and every attention map.

The decoder reads the start token + the whole output, </s> included: one position more than decoding ever feeds.
The causal mask keeps the earlier rows exactly what decoding computed; the extra row, the query that reads the last
output token, is the one Shift-Att needs for that token (`lenses.attention.shift_att`).

Shape letters as in `transformer.model.layers`: S source length, T output length (the decoder here reads T + 1
positions), H heads, D d_model, Dh head dim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.data.tokenizer import SpecialIds
from transformer.model.layers import MultiHeadAttention, Transformer, padding_mask, target_mask


@dataclass(frozen=True)
class SublayerTrace:
    """One attention sublayer of one layer: alpha, and what its values are computed from."""

    residual: Tensor  # (Lq, D) the residual stream x entering the sublayer
    keys_input: Tensor  # (Lk, D) what W_V reads: the normalised stream (pre-LN), or the encoder memory
    weights: Tensor  # (H, Lq, Lk) alpha
    output: Tensor  # (Lq, D) the sublayer's output before the residual: sum_h alpha^h V^h W_O^h + b_O


@dataclass(frozen=True)
class Trace:
    """Everything of one pass (batch of one) that the lenses read."""

    src_ids: tuple[int, ...]
    decoder_input: tuple[int, ...]  # the start token + the output: T + 1 positions
    enc_self: tuple[SublayerTrace, ...]  # per encoder layer, Lq = Lk = S
    dec_self: tuple[SublayerTrace, ...]  # per decoder layer, Lq = Lk = T + 1
    cross: tuple[SublayerTrace, ...]  # per decoder layer, Lq = T + 1, Lk = S
    memory: Tensor  # (S, D) the encoder output after its final norm
    log_probs: Tensor  # (T,) log p of each output token given its prefix

    @property
    def n_output(self) -> int:
        return len(self.decoder_input) - 1


def values(attn: MultiHeadAttention, keys_input: Tensor) -> Tensor:
    """The value vectors x W_V^h + b_V^h of every head: (Lk, D) -> (H, Lk, Dh)."""
    _, v = attn.project_kv(keys_input[None])  # (1, H, Lk, Dh)
    return v[0]


def head_outputs(attn: MultiHeadAttention, keys_input: Tensor) -> Tensor:
    """f^h(x_j) = (x_j W_V^h + b_V^h) W_O^h of every head and key, W_O^h the columns of W^O reading head h:
    (Lk, D) -> (H, Lk, D)."""
    v = values(attn, keys_input)  # (H, Lk, Dh)
    H, _, Dh = v.shape
    w_o = attn.w_o.weight.view(-1, H, Dh).permute(1, 2, 0)  # (H, Dh, D): out = concat(heads) @ W^O.T
    return v @ w_o  # (H, Lk, D)


def _attend(attn: MultiHeadAttention, x_q: Tensor, keys_input: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """attn's output (1, Lq, D) and weights (H, Lq, Lk) for queries x_q (1, Lq, D) over keys_input (1, Lk, D)."""
    out, weights = attn(x_q, attn.project_kv(keys_input), mask, need_weights=True)
    return out, weights[0]


@torch.no_grad()
def trace(model: Transformer, src_ids: Sequence[int], output_ids: Sequence[int], *, specials: SpecialIds) -> Trace:
    """Run the model over src_ids and specials.start + output_ids, keeping each sublayer's inputs and maps (pre- or
    post-LN)."""
    device = next(model.parameters()).device
    src_ids = checks.source_ids(model, src_ids, "src_ids")
    output_ids = checks.target_ids(model, output_ids, "output_ids", read=1)
    src = torch.tensor([list(src_ids)], device=device)  # (1, S)
    tgt = torch.tensor([[specials.start, *output_ids]], device=device)  # (1, T + 1)
    src_mask = padding_mask(src, model.config.pad_id)  # (1, 1, 1, S)
    tgt_mask = target_mask(tgt, model.config.pad_id)  # (1, 1, T+1, T+1)
    x, enc_self = model.src_embed(src), []
    for layer in model.encoder_layers:
        h = layer.sublayers[0].input(x)
        out, weights = _attend(layer.self_attn, h, h, src_mask)
        enc_self.append(SublayerTrace(x[0], h[0], weights, out[0]))
        x = layer.sublayers[0](x, out)
        x = layer.sublayers[1](x, layer.feed_forward(layer.sublayers[1].input(x)))
    memory = model.encoder_norm(x)  # (1, S, D)
    x, dec_self, cross = model.tgt_embed(tgt), [], []
    for layer in model.decoder_layers:
        h = layer.sublayers[0].input(x)
        out, weights = _attend(layer.self_attn, h, h, tgt_mask)
        dec_self.append(SublayerTrace(x[0], h[0], weights, out[0]))
        x = layer.sublayers[0](x, out)
        out, weights = _attend(layer.cross_attn, layer.sublayers[1].input(x), memory, src_mask)
        cross.append(SublayerTrace(x[0], memory[0], weights, out[0]))
        x = layer.sublayers[1](x, out)
        x = layer.sublayers[2](x, layer.feed_forward(layer.sublayers[2].input(x)))
    logp = model.logits(model.decoder_norm(x[0, :-1])).float().log_softmax(-1)  # (T, V)
    target = torch.tensor(list(output_ids), device=device)
    return Trace(tuple(src_ids), (specials.start, *output_ids), tuple(enc_self), tuple(dec_self), tuple(cross),
                 memory[0], logp.gather(1, target[:, None])[:, 0])

"""The arithmetic behind one cell of any attention map: Eq. 1 for one head and one query, with the model's numbers.

For a query position and a head, every intermediate of softmax(q K^T / sqrt(d_k)) V is kept: the query's
projection q, every key k and value v, the scores, the mask, the weights, and the value-weighted sum that is
the head's output (before W^O mixes the heads). The layer's input is rebuilt as the model builds it: the
embedding passed through the earlier layers, then the sublayer's LayerNorm (pre-LN); cross-attention's query
comes after the layer's self-attention sublayer, its keys and values from the encoder memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.explain.interventions import FAMILIES, attention_module
from transformer.model.layers import Transformer, padding_mask, target_mask


@dataclass
class CellArithmetic:
    """Eq. 1 for one head and one query; the row of the map the cell sits in is `weights`."""

    family: str
    layer: int
    head: int
    query: int
    q: Tensor  # (Dh,) the query's projection
    k: Tensor  # (L_k, Dh) every key
    v: Tensor  # (L_k, Dh) every value
    scores: Tensor  # (L_k,) q . k / sqrt(Dh)
    mask: Tensor  # (L_k,) bool, True = may attend
    masked: Tensor  # (L_k,) scores with masked keys at -inf
    weights: Tensor  # (L_k,) softmax of masked; all 0 when every key is masked
    output: Tensor  # (Dh,) weights @ v: the head's output for this query
    model_weights: Tensor  # (L_k,) the same row as the model itself returns it
    query_input: Tensor  # (D,) what W^Q multiplies: the LayerNorm'd input of the sublayer at the query


def _inputs(model: Transformer, src: Tensor, tgt: Tensor | None, family: str, layer: int
            ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The attention's query input (1, L_q, D), key/value input (1, L_k, D), mask (L_q, L_k) and the model's
    own weights (H, L_q, L_k), for one layer of one family."""
    src_mask = padding_mask(src, model.config.pad_id)  # (1, 1, 1, S)
    if family == "enc_self":
        x = model.src_embed(src)  # (1, S, D)
        for earlier in model.encoder_layers[:layer]:
            x, _ = earlier(x, src_mask, False)
        enc_layer = model.encoder_layers[layer]
        _, reference = enc_layer(x, src_mask, True)  # (1, H, S, S)
        h = enc_layer.sublayers[0].input(x)
        return h, h, src_mask[0, 0].expand(src.size(1), -1), reference[0]
    memory = model.encode(src).memory  # (1, S, D)
    tgt_mask = target_mask(tgt, model.config.pad_id)  # (1, 1, T, T)
    x = model.tgt_embed(tgt)  # (1, T, D)
    for earlier in model.decoder_layers[:layer]:
        x, *_ = earlier(x, None, earlier.cross_attn.project_kv(memory), tgt_mask, src_mask, False)
    dec_layer = model.decoder_layers[layer]
    _, _, self_w, cross_w = dec_layer(x, None, dec_layer.cross_attn.project_kv(memory), tgt_mask, src_mask, True)
    h = dec_layer.sublayers[0].input(x)  # (1, T, D)
    if family == "dec_self":
        return h, h, tgt_mask[0, 0], self_w[0]
    out, _ = dec_layer.self_attn(h, dec_layer.self_attn.project_kv(h), tgt_mask)
    query_input = dec_layer.sublayers[1].input(dec_layer.sublayers[0](x, out))  # (1, T, D)
    return query_input, memory, src_mask[0, 0].expand(tgt.size(1), -1), cross_w[0]


@torch.inference_mode()
def cell_arithmetic(model: Transformer, source_ids: Sequence[int], decoder_input_ids: Sequence[int] | None,
                    family: str, layer: int, head: int, query: int) -> CellArithmetic:
    """Rebuild row `query` of one head's map of `family` ("enc_self", "dec_self" or "cross").

    source_ids may end in <pad> (their keys are masked, as in a batch); decoder_input_ids are what the decoder
    read (<s> + the output but its last token), needed for the decoder's families only.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    if family != "enc_self" and not decoder_input_ids:
        raise ValueError(f"{family} needs the decoder's input tokens")
    source_ids = checks.source_ids(model, source_ids)
    if decoder_input_ids:
        decoder_input_ids = checks.target_ids(model, decoder_input_ids, "decoder_input_ids")
    n_layers = model.config.n_encoder_layers if family == "enc_self" else model.config.n_decoder_layers
    layer = checks.layer_index(layer, "layer", n_layers)
    head = checks.integer(head, "head", 0, model.config.n_heads - 1)
    query = checks.position(query, "query", len(source_ids if family == "enc_self" else decoder_input_ids))
    device = next(model.parameters()).device
    src = torch.tensor([list(source_ids)], device=device)  # (1, S)
    tgt = torch.tensor([list(decoder_input_ids)], device=device) if decoder_input_ids else None  # (1, T)
    query_input, key_input, mask, reference = _inputs(model, src, tgt, family, layer)
    attn = attention_module(model, family, layer)
    q = attn.project_q(query_input)[0, head, query]  # (Dh,)
    k, v = (t[0, head] for t in attn.project_kv(key_input))  # (L_k, Dh) each
    scores = k @ q / math.sqrt(q.size(-1))  # (L_k,)
    row_mask = mask[query]
    masked = scores.masked_fill(~row_mask, float("-inf"))
    weights = masked.softmax(-1) if bool(row_mask.any()) else torch.zeros_like(scores)
    return CellArithmetic(family, layer, head, query, q, k, v, scores, row_mask, masked, weights, weights @ v,
                          reference[head, query], query_input[0, query])

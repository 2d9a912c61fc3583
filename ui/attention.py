"""Attention maps and the step-by-step attention arithmetic of a real model, as numpy: no streamlit.

Decoder rows follow the convention of the training probes: the target sequence is <s> followed by the
output tokens, so row t is the position holding token t, which predicts token t + 1.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from transformer.model import Transformer, padding_mask
from transformer.tokenizer import BOS_ID, SPECIAL_TOKENS

FAMILIES = {"cross": "cross-attention (decoder → encoder)", "enc_self": "encoder self-attention",
            "dec_self": "decoder self-attention"}


@dataclass
class AttentionSet:
    """All attention maps of one (source, output) pair; each array is (L, H, Lq, Lk)."""

    src_pieces: list[str]
    tgt_pieces: list[str]  # <s> + output tokens: the decoder's query positions
    enc_self: np.ndarray  # (L, H, S, S)
    dec_self: np.ndarray  # (L, H, T, T)
    cross: np.ndarray  # (L, H, T, S)

    def labels(self, family: str) -> tuple[list[str], list[str]]:
        """(query labels, key labels) of a family."""
        return {"enc_self": (self.src_pieces, self.src_pieces), "dec_self": (self.tgt_pieces, self.tgt_pieces),
                "cross": (self.tgt_pieces, self.src_pieces)}[family]

    def matrix(self, family: str, layer: int, head: int | None, hide_special: bool = False
               ) -> tuple[np.ndarray, list[str], list[str]]:
        """One head's map (head None: the mean of the heads), optionally without special-token rows and columns."""
        maps = getattr(self, family)[layer]  # (H, Lq, Lk)
        m = maps.mean(0) if head is None else maps[head]
        rows, cols = self.labels(family)
        if hide_special:
            keep_r = [i for i, p in enumerate(rows) if p not in SPECIAL_TOKENS]
            keep_c = [i for i, p in enumerate(cols) if p not in SPECIAL_TOKENS]
            m = m[np.ix_(keep_r, keep_c)]
            rows, cols = [rows[i] for i in keep_r], [cols[i] for i in keep_c]
        return m, rows, cols

    def to_npz(self) -> bytes:
        buf = io.BytesIO()
        np.savez_compressed(buf, enc_self=self.enc_self, dec_self=self.dec_self, cross=self.cross,
                            src_pieces=np.array(self.src_pieces), tgt_pieces=np.array(self.tgt_pieces))
        return buf.getvalue()

    def to_json(self) -> str:
        return json.dumps({"src_pieces": self.src_pieces, "tgt_pieces": self.tgt_pieces,
                           "shapes": "enc_self (L,H,S,S), dec_self (L,H,T,T), cross (L,H,T,S); rows are queries",
                           **{f: np.round(getattr(self, f), 5).tolist() for f in ("enc_self", "dec_self", "cross")}},
                          ensure_ascii=False)


@torch.inference_mode()
def compute_attention(model: Transformer, tokenizer, src_ids: list[int], out_ids: list[int]) -> AttentionSet:
    """Teacher-force <s> + out_ids through the model and keep every attention map."""
    device = next(model.parameters()).device
    tgt_ids = [BOS_ID, *out_ids][: model.config.max_len]
    src = torch.tensor([src_ids], device=device)
    tgt = torch.tensor([tgt_ids], device=device)
    maps = model(src, tgt, return_attention=True).attention
    stack = lambda ws: torch.stack([w[0] for w in ws]).float().cpu().numpy()  # (L, H, Lq, Lk)
    return AttentionSet(tokenizer.source_pieces(src_ids), tokenizer.target_pieces(tgt_ids),
                        stack(maps.enc_self), stack(maps.dec_self), stack(maps.cross))


@dataclass
class AttentionSteps:
    """Eq. 1 for one encoder self-attention head and one query, every intermediate kept."""

    q: np.ndarray  # (Dh,) the query's projection
    k: np.ndarray  # (S, Dh) every key
    v: np.ndarray  # (S, Dh) every value
    scores: np.ndarray  # (S,) q . k / sqrt(Dh)
    mask: np.ndarray  # (S,) True = may attend
    masked: np.ndarray  # (S,) scores with masked keys at -inf
    weights: np.ndarray  # (S,) softmax
    output: np.ndarray  # (Dh,) weights @ v
    model_weights: np.ndarray  # (S,) the same row as the model itself returns it


@torch.inference_mode()
def encoder_attention_steps(model: Transformer, src_ids: list[int], layer: int, head: int, query: int
                            ) -> AttentionSteps:
    """Rebuild one encoder head's attention by hand: the layer's input is the embedding passed through
    the earlier layers, LayerNorm'd by the layer's first sublayer (pre-LN) before the projections."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    src_mask = padding_mask(src, model.config.pad_id)  # (1, 1, 1, S)
    x = model.src_embed(src)  # (1, S, D)
    for earlier in model.encoder_layers[:layer]:
        x, _ = earlier(x, src_mask, False)
    enc_layer = model.encoder_layers[layer]
    h = enc_layer.sublayers[0].input(x)  # (1, S, D)
    attn = enc_layer.self_attn
    q = attn.split_heads(attn.w_q(h))[0, head]  # (S, Dh)
    k, v = (t[0, head] for t in attn.project_kv(h))  # (S, Dh) each
    d_head = q.size(-1)
    scores = k @ q[query] / math.sqrt(d_head)  # (S,)
    mask = src_mask[0, 0, 0]  # (S,)
    masked = scores.masked_fill(~mask, float("-inf"))
    weights = masked.softmax(-1)
    _, reference = enc_layer(x, src_mask, True)  # (1, H, S, S)
    as_np = lambda t: t.float().cpu().numpy()
    return AttentionSteps(as_np(q[query]), as_np(k), as_np(v), as_np(scores), as_np(mask), as_np(masked),
                          as_np(weights), as_np(weights @ v), as_np(reference[0, head, query]))

"""The attention maps of a `Translation`, shaped for the figures and the downloads: no streamlit (the Learn page's
Eq. 1 by hand: ui.learn.attention_steps).

Rows are queries, columns keys, as in `TranslationAttention`: a decoder query is labelled with the token it
emitted (`target_pieces`); it read the token before it, so the columns of decoder self-attention are
`target_input_pieces` (<s> + the output but its last token).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

import numpy as np
import torch

from transformer.bidi import piece_labels
from transformer.data.tokenizer import SPECIAL_TOKENS
from transformer.decoding.translate import TranslationAttention
from transformer.labels import HOVER_CHARS, shorten

FAMILIES = {"cross": "cross-attention (decoder → encoder)", "enc_self": "encoder self-attention",
            "dec_self": "decoder self-attention"}
NOTE_TITLE = "query read"  # the tooltip's name for `row_notes`
PIECES = ("source_pieces", "target_input_pieces", "target_pieces")  # the labels, exported with the maps
SHAPES = ("enc_self (L,H,S,S), dec_self (L,H,T,T), cross (L,H,T,S); rows are queries, columns keys: "
          "decoder rows are target_pieces (the token each query emitted), dec_self columns target_input_pieces")


def stacked(att: TranslationAttention, family: str) -> np.ndarray:
    """One family's maps of every layer: (L, H, Lq, Lk)."""
    return torch.stack(getattr(att, family)).float().cpu().numpy()


def labels(att: TranslationAttention, family: str) -> tuple[list[str], list[str]]:
    """(query labels, key labels) of a family."""
    return {"enc_self": (att.source_pieces, att.source_pieces),
            "dec_self": (att.target_pieces, att.target_input_pieces),
            "cross": (att.target_pieces, att.source_pieces)}[family]


def _kept(pieces: list[str], hide_special: bool) -> list[int]:
    return [i for i, p in enumerate(pieces) if not (hide_special and p in SPECIAL_TOKENS)]


def every_head(att: TranslationAttention, family: str, hide_special: bool = False
               ) -> tuple[np.ndarray, list[str], list[str]]:
    """Every layer's and head's map (L, H, Lq, Lk), optionally without special-token rows and columns."""
    rows, cols = labels(att, family)
    keep_r, keep_c = _kept(rows, hide_special), _kept(cols, hide_special)
    maps = stacked(att, family)[:, :, keep_r][..., keep_c]
    return maps, [rows[i] for i in keep_r], [cols[i] for i in keep_c]


def matrix(att: TranslationAttention, family: str, layer: int, head: int | None, hide_special: bool = False
           ) -> tuple[np.ndarray, list[str], list[str]]:
    """One head's map (head None: the mean of the heads), optionally without special-token rows and columns."""
    maps, rows, cols = every_head(att, family, hide_special)
    return (maps[layer].mean(0) if head is None else maps[layer, head]), rows, cols


def layer_matrix(own: Sequence[torch.Tensor], att: TranslationAttention, family: str, layer: int,
                 hide_special: bool = False) -> np.ndarray:
    """A lens's own map of a layer (own: per layer (1, Lq, Lk), `LensMaps.layer_maps`), the rows and columns of
    `matrix`."""
    rows, cols = labels(att, family)
    keep_r, keep_c = _kept(rows, hide_special), _kept(cols, hide_special)
    return own[layer][0].float().cpu().numpy()[keep_r][:, keep_c]


def row_notes(att: TranslationAttention, family: str, hide_special: bool = False) -> list[str] | None:
    """A tooltip line per decoder row of `matrix` (NOTE_TITLE): the token its query read."""
    if family == "enc_self":
        return None
    read = piece_labels(att.target_input_pieces)
    return [shorten(read[i], HOVER_CHARS) for i in _kept(att.target_pieces, hide_special)]


def to_npz(att: TranslationAttention) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{f: stacked(att, f) for f in FAMILIES},
                        **{p: np.array(getattr(att, p)) for p in PIECES})
    return buf.getvalue()


def to_json(att: TranslationAttention) -> str:
    return json.dumps({**{p: getattr(att, p) for p in PIECES}, "shapes": SHAPES,
                       **{f: np.round(stacked(att, f), 5).tolist() for f in FAMILIES}},
                      ensure_ascii=False)


def to_csv(att: TranslationAttention) -> str:
    """Every weight as a row: family, layer, head, query position and token, key position and token, weight."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["family", "layer", "head", "query", "query_token", "key", "key_token", "weight"])
    for family in FAMILIES:
        maps = stacked(att, family)  # (L, H, Lq, Lk)
        rows, cols = labels(att, family)
        for (layer, head, q, k), weight in np.ndenumerate(maps):
            writer.writerow([family, layer, head, q, rows[q], k, cols[k], f"{weight:.6f}"])
    return out.getvalue()

"""Input embeddings (Section 3.4) and the positions added to them: the sinusoidal encoding (Section 3.5) in one of
three layouts, or a learned table (BART's, mBART's), with an optional LayerNorm over their sum.

Shape letters as in `transformer.model.layers`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transformer.model.config import ModelConfig
from transformer.model.dropout import Dropout


def sinusoidal_encoding(max_len: int, d_model: int, layout: str = "interleaved") -> Tensor:
    """The (max_len, D) table of sinusoids of positions 0 .. max_len - 1.

    "interleaved", Section 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...).
    "halves", as Marian lays it out: the ceil(D/2) sines first, then the floor(D/2) cosines, computed in float64 and
    rounded once to float32 as transformers' MarianSinusoidalPositionalEmbedding does.
    "fairseq", as fairseq and tensor2tensor compute it (M2M100, NLLB): the D/2 sines of pos * 10000^(-i / (D/2 - 1)),
    then the cosines, a zero column for an odd D; in float32, the operations of transformers'
    M2M100SinusoidalPositionalEmbedding.get_embedding.
    """
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    if layout == "halves":
        i = torch.arange((d_model + 1) // 2, dtype=torch.float64)  # (ceil(D/2),)
        angle = position.double() / torch.pow(10000.0, 2 * i / d_model)  # (max_len, ceil(D/2))
        return torch.cat([angle.sin(), angle[:, : d_model // 2].cos()], dim=1).float()  # (max_len, D)
    if layout == "fairseq":
        half = d_model // 2
        step = math.log(10000) / max(half - 1, 1)  # a D of 2 or 3 has one frequency, 1
        freq = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step)  # (D/2,)
        angle = torch.arange(max_len, dtype=torch.int64).float()[:, None] * freq[None, :]  # (max_len, D/2)
        table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)  # (max_len, 2 * (D/2))
        return torch.cat([table, torch.zeros(max_len, d_model % 2)], dim=1)  # (max_len, D)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
    return pe


class Embedding(nn.Module):
    """Token embedding, scaled by sqrt(D) unless the config says not to, plus the position's vector, then (BART,
    mBART) a LayerNorm.

    `pe` is the position table: the sinusoids (a buffer, computed, never saved) or, with learned_positions, a
    parameter. Position p reads its row position_offset + p. `tokens` may be another Embedding's (one table shared
    by encoder and decoder, each with its own positions and norm).
    """

    def __init__(self, vocab_size: int, config: ModelConfig, tokens: nn.Embedding | None = None):
        super().__init__()
        self.tokens = tokens if tokens is not None else nn.Embedding(vocab_size, config.d_model)
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.offset, self.max_len = config.position_offset, config.max_len
        if config.learned_positions:
            self.pe = nn.Parameter(torch.zeros(config.max_len + config.position_offset, config.d_model))
        else:
            self.register_buffer("pe", self.sinusoids(config), persistent=False)
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.embedding_norm else nn.Identity()
        self.dropout = Dropout(config.dropout)

    @staticmethod
    def sinusoids(config: ModelConfig) -> Tensor:
        return sinusoidal_encoding(config.max_len + config.position_offset, config.d_model, config.positional_layout)

    def positions(self, start: int, length: int) -> Tensor:
        """The (length, D) vectors of positions start .. start + length - 1."""
        return self.pe[self.offset + start : self.offset + start + length]

    def forward(self, ids: Tensor, start: int = 0) -> Tensor:
        """ids (B, L) at positions start..start+L-1 -> (B, L, D)."""
        if start + ids.size(1) > self.max_len:
            raise ValueError(f"sequence of {start + ids.size(1)} tokens exceeds max_len {self.max_len}")
        return self.dropout(self.norm(self.tokens(ids) * self.scale + self.positions(start, ids.size(1))))

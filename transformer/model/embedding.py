"""Input embeddings (Section 3.4) and the sinusoidal positional encoding (Section 3.5), in either layout.

Shape letters as in `transformer.model.layers`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transformer.model.config import ModelConfig
from transformer.model.dropout import Dropout


def sinusoidal_encoding(max_len: int, d_model: int, layout: str = "interleaved") -> Tensor:
    """The (max_len, D) table of sinusoids of pos * 10000^(-2i/D).

    "interleaved", Section 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...).
    "halves", as Marian and fairseq lay it out: the ceil(D/2) sines first, then the floor(D/2) cosines, computed
    in float64 and rounded once to float32 as transformers' MarianSinusoidalPositionalEmbedding does.
    """
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    if layout == "halves":
        i = torch.arange((d_model + 1) // 2, dtype=torch.float64)  # (ceil(D/2),)
        angle = position.double() / torch.pow(10000.0, 2 * i / d_model)  # (max_len, ceil(D/2))
        return torch.cat([angle.sin(), angle[:, : d_model // 2].cos()], dim=1).float()  # (max_len, D)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
    return pe


class Embedding(nn.Module):
    """Token embedding, scaled by sqrt(D) unless the config says not to, plus the sinusoidal position."""

    def __init__(self, vocab_size: int, config: ModelConfig):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, config.d_model)
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        pe = sinusoidal_encoding(config.max_len, config.d_model, config.positional_layout)
        self.register_buffer("pe", pe, persistent=False)
        self.dropout = Dropout(config.dropout)

    def forward(self, ids: Tensor, start: int = 0) -> Tensor:
        """ids (B, L) at positions start..start+L-1 -> (B, L, D)."""
        if start + ids.size(1) > self.pe.size(0):
            raise ValueError(f"sequence of {start + ids.size(1)} tokens exceeds max_len {self.pe.size(0)}")
        return self.dropout(self.tokens(ids) * self.scale + self.pe[start : start + ids.size(1)])

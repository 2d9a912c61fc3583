"""The model's hyperparameters: one frozen dataclass, saved beside the weights as JSON."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

ACTIVATIONS = ("relu", "gelu", "swish")
POSITIONAL_LAYOUTS = ("interleaved", "halves", "fairseq")
MAX_POSITION_OFFSET = 16  # fairseq's models start at 2 (BART, mBART; M2M100: its pad id + 1)
# Upper bounds on what a config may ask for: far above any model this tool trains (the shipped ones have d_model
# 256, 3 + 3 layers, max_len 512), low enough that a hostile config.json cannot make a model that fills the memory.
LIMITS = {"src_vocab_size": 1_000_000, "tgt_vocab_size": 1_000_000, "d_model": 8192, "n_heads": 256,
          "n_encoder_layers": 64, "n_decoder_layers": 64, "d_ff": 65_536, "max_len": 16_384}
BOOLS = ("norm_first", "share_embeddings", "tie_output", "scale_embedding", "final_logits_bias", "final_norm",
         "embedding_norm", "learned_positions")
# Keys added after the first checkpoints shipped: a config.json without them loads with their defaults, which are
# what those checkpoints were trained and computed with. Every other key must be present (a default would silently
# stand in for what the weights were trained with).
ADDED_KEYS = ("scale_embedding", "positional_layout", "final_logits_bias", "layer_norm_eps", "final_norm",
              "embedding_norm", "learned_positions", "position_offset")


@dataclass(frozen=True)
class ModelConfig:
    """Defaults are the base model of Vaswani et al. (2017), Table 3."""

    src_vocab_size: int = 8000  # source token ids are in [0, src_vocab_size)
    tgt_vocab_size: int = 8000  # target token ids are in [0, tgt_vocab_size)
    d_model: int = 512  # width of every residual stream
    n_heads: int = 8  # d_model is split into n_heads heads of d_model // n_heads
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    d_ff: int = 2048  # inner width of the position-wise feed-forward network
    dropout: float = 0.1  # on sublayer outputs, embeddings and attention weights
    max_len: int = 512  # longest sequence the positional encoding table covers
    pad_id: int = 0  # masks are built from this id: callers pass token ids only
    norm_first: bool = True  # pre-LN trains without warmup tricks; False is the paper's post-LN
    activation: str = "relu"  # "relu" as in the paper, "gelu", or "swish" (x * sigmoid(x), Marian's)
    share_embeddings: bool = False  # one embedding table for source and target (needs one vocabulary)
    tie_output: bool = False  # output projection reuses the target embedding (Section 3.4)
    scale_embedding: bool = True  # token embeddings times sqrt(d_model) (Section 3.4); False leaves them as they are
    positional_layout: str = "interleaved"  # sin, cos alternating (Section 3.5); "halves": sines, then cosines
    # (Marian); "fairseq": sines, then cosines of pos * 10000^(-i / (D/2 - 1)) (M2M100, NLLB)
    final_logits_bias: bool = False  # a fixed (tgt_vocab_size,) bias added to the logits (Marian's)
    layer_norm_eps: float = 1e-5  # the epsilon of every LayerNorm
    final_norm: bool = True  # a pre-LN stack ends with a LayerNorm; post-LN stacks have none (their last sublayer's
    # norm ends them), so with norm_first false this changes nothing
    embedding_norm: bool = False  # a LayerNorm on token + position embeddings, one per side (BART's and mBART's)
    learned_positions: bool = False  # a learned table of positions, one per side, instead of the sinusoids
    position_offset: int = 0  # the table row of position 0: fairseq's models skip rows (2: BART, mBART, M2M100)

    def __post_init__(self) -> None:
        # types first: "no" is not False, 6.0 layers is not 6, and 0 heads must not reach the modulo below
        for name, limit in LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an integer, got {type(value).__name__} {_short(value)}")
            if not 1 <= value <= limit:
                raise ValueError(f"{name} must be between 1 and {limit:,}, got {_short(value)}")
        if not isinstance(self.pad_id, int) or isinstance(self.pad_id, bool) \
                or not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id must be an integer id of both vocabularies, got {_short(self.pad_id)}")
        for name in BOOLS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {_short(getattr(self, name))}")
        if not isinstance(self.dropout, (int, float)) or isinstance(self.dropout, bool):
            raise ValueError(f"dropout must be a number, got {type(self.dropout).__name__} {_short(self.dropout)}")
        if not isinstance(self.layer_norm_eps, (int, float)) or isinstance(self.layer_norm_eps, bool) \
                or not 0 < self.layer_norm_eps < 1:
            raise ValueError(f"layer_norm_eps must be a number in (0, 1), got {_short(self.layer_norm_eps)}")
        if not isinstance(self.activation, str):
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {_short(self.activation)}")
        if not isinstance(self.positional_layout, str) or self.positional_layout not in POSITIONAL_LAYOUTS:
            raise ValueError(f"positional_layout must be one of {POSITIONAL_LAYOUTS}, got "
                             f"{_short(self.positional_layout)}")
        if not isinstance(self.position_offset, int) or isinstance(self.position_offset, bool) \
                or not 0 <= self.position_offset <= MAX_POSITION_OFFSET:
            raise ValueError(f"position_offset must be an integer between 0 and {MAX_POSITION_OFFSET}, got "
                             f"{_short(self.position_offset)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("share_embeddings needs src_vocab_size == tgt_vocab_size")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        return strict_from_dict(cls, data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ModelConfig:
        return cls.from_dict(json.loads(text))


def _short(value: Any) -> str:
    """value for an error message, cut to one short line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def strict_from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Build a config dataclass from a dict, refusing keys it does not know."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return cls(**data)

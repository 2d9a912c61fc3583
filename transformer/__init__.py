"""A from-scratch Transformer that returns every attention map, for exploring what attention does.

The public names are imported on first use (PEP 562): `import transformer.runs` or `transformer.data.spec` then
costs no torch import, which the app's pages without a model (Train, the Teacher's guide) never need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformer.model.config import ModelConfig
    from transformer.model.layers import AttentionMaps, DecoderCache, Seq2SeqOutput, StepOutput, Transformer

_HOMES = {"ModelConfig": "transformer.model.config", "AttentionMaps": "transformer.model.layers",
          "DecoderCache": "transformer.model.layers", "Seq2SeqOutput": "transformer.model.layers",
          "StepOutput": "transformer.model.layers", "Transformer": "transformer.model.layers"}
__all__ = ["AttentionMaps", "DecoderCache", "ModelConfig", "Seq2SeqOutput", "StepOutput", "Transformer"]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'transformer' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

"""A from-scratch Transformer that returns every attention map, for exploring what attention does."""

from transformer.model.config import ModelConfig
from transformer.model.layers import AttentionMaps, DecoderCache, Seq2SeqOutput, StepOutput, Transformer

__all__ = ["AttentionMaps", "DecoderCache", "ModelConfig", "Seq2SeqOutput", "StepOutput", "Transformer"]

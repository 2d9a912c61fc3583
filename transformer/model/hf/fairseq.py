"""M2M100 (and NLLB-200, the same model), mBART (and mBART-50) and BART: the config mapping onto our ModelConfig.

transformers' three classes are one Transformer with options, each a ModelConfig option here:

                        M2M100 / NLLB            mBART / mBART-50           BART
    LayerNorm           pre-LN, final norms      pre-LN, final norms        post-LN (as the paper)
    positions           sinusoids (fairseq's),   learned, row 2 first       learned, row 2 first
                        row pad_id + 1 first
    on the embeddings   -                        a LayerNorm                a LayerNorm
    scaled by sqrt(D)   scale_embedding          scale_embedding            scale_embedding (False in bart-large)
    activation          relu                     gelu                       gelu
    output              tied to the embeddings   tied, + final_logits_bias  tied, + final_logits_bias

Encoder, decoder and output share one embedding table in all three (`model.shared`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from transformer.model.config import MAX_POSITION_OFFSET, ModelConfig
from transformer.model.hf.common import HF_CONFIG, ImportFailed, refuse_options, shared_fields


@dataclass(frozen=True)
class Family:
    name: str  # for messages and the model card
    architectures: tuple[str, ...]  # config.json's architectures we read (a bare *Model: its lm_head is tied anyway)
    options: dict[str, Any]  # our ModelConfig options
    # fairseq's keys that transformers ignores, at the value its class computes
    legacy: dict[str, Any] = field(default_factory=dict)


FAMILIES = {
    "m2m_100": Family("M2M100", ("M2M100ForConditionalGeneration", "M2M100Model"),
                      dict(norm_first=True, final_norm=True, positional_layout="fairseq", final_logits_bias=False),
                      dict(normalize_before=True, add_final_layer_norm=True, normalize_embedding=False,
                           layernorm_embedding=False, static_position_embeddings=True, add_bias_logits=False)),
    "mbart": Family("mBART", ("MBartForConditionalGeneration", "MBartModel"),
                    dict(norm_first=True, final_norm=True, learned_positions=True, position_offset=2,
                         embedding_norm=True, final_logits_bias=True),
                    dict(normalize_before=True, add_final_layer_norm=True, normalize_embedding=True,
                         layernorm_embedding=True, static_position_embeddings=False, add_bias_logits=False)),
    "bart": Family("BART", ("BartForConditionalGeneration", "BartModel"),
                   dict(norm_first=False, final_norm=False, learned_positions=True, position_offset=2,
                        embedding_norm=True, final_logits_bias=True),
                   dict(normalize_before=False, add_final_layer_norm=False, normalize_embedding=True,
                        layernorm_embedding=True, static_position_embeddings=False, add_bias_logits=False)),
}


def model_config(hf: dict[str, Any], where: str = HF_CONFIG) -> ModelConfig:
    """Our ModelConfig for an M2M100Config, MBartConfig or BartConfig (as config.json holds it)."""
    family = FAMILIES[hf["model_type"]]
    architectures = hf.get("architectures") or [family.architectures[0]]
    if not set(architectures) <= set(family.architectures):
        raise ImportFailed(f"{where}: architectures {architectures}: of model_type {hf['model_type']!r} we import "
                           f"{' and '.join(family.architectures)}")
    refuse_options(hf, where, family.legacy, family.architectures[0])
    fields = shared_fields(hf, where)
    options = dict(family.options)
    if hf["model_type"] == "m2m_100":  # positions count from pad_id + 1 (fairseq's make_positions)
        pad = hf.get("pad_token_id")
        if not isinstance(pad, int) or not 0 <= pad < MAX_POSITION_OFFSET:
            raise ImportFailed(f"{where}: pad_token_id {pad!r}: M2M100's positions start at pad_token_id + 1, and "
                               f"we implement rows up to {MAX_POSITION_OFFSET}")
        options["position_offset"] = pad + 1
    try:
        return ModelConfig(src_vocab_size=hf.get("vocab_size"), tgt_vocab_size=hf.get("vocab_size"), **fields,
                           share_embeddings=True, tie_output=bool(hf.get("tie_word_embeddings", True)),
                           scale_embedding=bool(hf.get("scale_embedding", hf["model_type"] == "m2m_100")), **options)
    except (TypeError, ValueError) as exc:
        raise ImportFailed(f"{where}: {exc}") from exc

"""Marian (the opus-mt models): config mapping and tokenizer.

Marian is the paper's Transformer with a few differences, each a ModelConfig option: swish (SiLU) in the
feed-forward network, post-LN with no final LayerNorm, sinusoids laid out as sines then cosines, a fixed bias on
the logits, one embedding table shared by encoder, decoder and output. The decoder starts from <pad> (the last
id), ends with </s> (0) and never emits <pad>: the tokenizer's special ids (`transformer.data.sentencepiece`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from transformer.data import sentencepiece as spm
from transformer.data.vocabulary import TokenizerError
from transformer.model.config import ModelConfig
from transformer.model.hf.card import languages
from transformer.model.hf.common import GENERATION_CONFIG, HF_CONFIG, ImportFailed, Source, shared_fields
from transformer.model.metadata import CODE

ARCHITECTURE = "MarianMTModel"
FILES = [spm.SOURCE_SPM, spm.TARGET_SPM, spm.VOCAB, spm.TARGET_VOCAB, spm.TOKENIZER_CONFIG]  # what a download needs
# Options of Marian's (and BART's) config that transformers' MarianMTModel does not compute, or we do not: the value
# that is fine, and why another is refused.
REFUSED = {"normalize_before": (False, "pre-LN Marian"), "add_bias_logits": (False, "a learned logits bias"),
           "normalize_embedding": (False, "a LayerNorm on the embeddings"),
           "layernorm_embedding": (False, "a LayerNorm on the embeddings"),
           "add_final_layer_norm": (False, "a final LayerNorm"),
           "static_position_embeddings": (True, "learned position embeddings")}


def model_config(hf: dict[str, Any], where: str = HF_CONFIG) -> ModelConfig:
    """Our ModelConfig for a MarianConfig (as config.json holds it); ImportFailed names what is not implemented."""
    if hf.get("architectures", [ARCHITECTURE]) != [ARCHITECTURE]:
        raise ImportFailed(f"{where}: model_type {hf.get('model_type')!r}, architectures {hf.get('architectures')}: "
                           "only Marian translation models (MarianMTModel, e.g. Helsinki-NLP/opus-mt-*) are imported")
    for key, (fine, why) in REFUSED.items():
        if key in hf and hf[key] != fine:
            raise ImportFailed(f"{where}: {key} = {json.dumps(hf[key])}: {why} is not implemented")
    fields = shared_fields(hf, where)
    shared = hf.get("share_encoder_decoder_embeddings", True)
    vocab_size = hf.get("vocab_size")
    tgt_vocab_size = vocab_size if shared else hf.get("decoder_vocab_size") or vocab_size
    try:
        return ModelConfig(
            src_vocab_size=vocab_size, tgt_vocab_size=tgt_vocab_size, **fields, norm_first=False,
            share_embeddings=bool(shared), tie_output=bool(hf.get("tie_word_embeddings", True)),
            scale_embedding=bool(hf.get("scale_embedding", False)), positional_layout="halves",
            final_logits_bias=True, final_norm=False)
    except (TypeError, ValueError) as exc:
        raise ImportFailed(f"{where}: {exc}") from exc


def tokenizer_for(source: Source, hf: dict[str, Any], generation: dict[str, Any],
                  config: ModelConfig) -> spm.SentencePieceTokenizer:
    """The Marian tokenizer of the folder, its special ids checked against the config's and the decoding rules'."""
    folder = source.folder
    try:
        tokenizer = spm.SentencePieceTokenizer.from_marian_folder(folder)
    except TokenizerError as exc:
        raise ImportFailed(str(exc)) from exc
    sizes = (tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
    if sizes != (config.src_vocab_size, config.tgt_vocab_size):
        raise ImportFailed(f"{folder / spm.VOCAB}: vocabularies of {sizes[0]:,} (source) and {sizes[1]:,} (target) "
                           f"pieces, but {HF_CONFIG} has embeddings of {config.src_vocab_size:,} and "
                           f"{config.tgt_vocab_size:,} rows")
    specials = tokenizer.specials
    rules = {**hf, **generation}  # generation_config.json wins, as in transformers' generate
    for file, values in ((HF_CONFIG, hf), (GENERATION_CONFIG, generation)):
        for key, ours in (("pad_token_id", specials.pad), ("eos_token_id", specials.eos)):
            if values.get(key, ours) != ours:
                raise ImportFailed(f"{folder / file}: {key} is {values[key]}, but the vocabulary's {key[:3]} token is "
                                   f"{ours}")
    start = rules.get("decoder_start_token_id", specials.pad)
    bad = rules.get("bad_words_ids") or []
    if not isinstance(bad, list) or any(not isinstance(w, list) or len(w) != 1 for w in bad):
        raise ImportFailed(f"{folder}: bad_words_ids {bad}: only single tokens can be banned (ours: never)")
    never = tuple(sorted({specials.pad, *(w[0] for w in bad)}))
    try:
        return tokenizer.with_specials(dataclasses.replace(specials, start=start, never=never))
    except (TokenizerError, TypeError, ValueError) as exc:
        raise ImportFailed(f"{folder}: special ids {exc}") from exc


def language_pair(source: Source, src: str | None, tgt: str | None) -> dict[str, str]:
    """{src, tgt}: as given, else as the folder's tokenizer_config.json or the name (opus-mt-SRC-TGT) says; ImportFailed
    when a side is unknown or not a language code, so that no checkpoint the loader refuses is ever written."""
    found = languages(source.folder, source.name, src, tgt)
    for side, flag in (("src", "--src"), ("tgt", "--tgt")):
        code = found[side]
        if code is None:
            raise ImportFailed(f"{source.name}: which language is the {'source' if side == 'src' else 'target'}? "
                               f"{spm.TOKENIZER_CONFIG} has no {'source_lang' if side == 'src' else 'target_lang'} "
                               f"and the name is not opus-mt-SRC-TGT: pass {flag} CODE (e.g. {flag} "
                               f"{'en' if side == 'src' else 'fr'})")
        check_code(code, flag, source.name)
    return {"src": found["src"], "tgt": found["tgt"]}


def check_code(code: Any, flag: str, name: str) -> None:
    """ImportFailed unless code is a language code that metadata.json may hold."""
    if not isinstance(code, str) or not CODE.fullmatch(code):
        raise ImportFailed(f"{name}: {flag} {str(code)[:30]!r} is not a language code such as en, fr or zh_Hant "
                           "(letters, digits, - and _)")

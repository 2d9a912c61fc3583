"""Where an imported model came from: its metadata.json fields and the MODEL_CARD.md written beside it.

OPUS-MT models (Tiedemann & Thottingal, EAMT 2020) are released under CC-BY 4.0: the credit goes with them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import torch

from transformer.data import sentencepiece as spm
from transformer.files import read_json_object
from transformer.model.config import ModelConfig
from transformer.model.layers import Transformer

PROVENANCE = ("source_model", "languages", "licence", "credit")  # what a fine-tuned checkpoint keeps of its origin
CARD, MODEL_CARD = "README.md", "MODEL_CARD.md"  # the source's card (a Hub download has one), ours
OPUS_MT_LICENCE = "CC-BY-4.0"
OPUS_MT_CREDIT = "OPUS-MT (Tiedemann & Thottingal, EAMT 2020), Language Technology Research Group, University of " \
                 "Helsinki"


def languages(folder: Path, name: str, src: str | None = None, tgt: str | None = None) -> dict[str, str | None]:
    """The language pair: src and tgt as given, else tokenizer_config's source_lang and target_lang, else the name's
    opus-mt-SRC-TGT; None for a side none of them names."""
    config = read_json_object(folder / spm.TOKENIZER_CONFIG)
    found = re.search(r"opus-mt-(?:tc-(?:big-)?)?([A-Za-z_]+)-([A-Za-z_]+)", name)
    return {"src": src or config.get("source_lang") or (found.group(1) if found else None),
            "tgt": tgt or config.get("target_lang") or (found.group(2) if found else None)}


def licence_of(name: str, folder: Path, given: str | None) -> str:
    """given, else OPUS-MT's for an opus-mt model, else the licence its card (README.md) names."""
    if given:
        return given
    card = folder / CARD
    text = card.read_text(encoding="utf-8", errors="replace")[:4000] if card.is_file() else ""
    if "opus-mt" in name.lower() or "OPUS-MT" in text:
        return OPUS_MT_LICENCE
    found = re.search(r"^license:\s*(\S+)", text, re.M)
    return found.group(1) if found else "unknown: see the source model's card"


def provenance(metadata: dict[str, Any]) -> dict[str, Any]:
    """The fields of a checkpoint's metadata that say where its weights came from: a fine-tuned import keeps them
    (CC-BY asks for the credit)."""
    return {key: metadata[key] for key in PROVENANCE if key in metadata}


def metadata(name: str, langs: dict[str, str], hf: dict[str, Any], model: Transformer, licence: str,
             dtype: torch.dtype) -> dict[str, Any]:
    """metadata.json: where the model came from (name, a Hub name or a folder), its languages and licence; hf is its
    config.json updated with its generation_config.json."""
    return {
        "description": f"{name} ({langs['src']} -> {langs['tgt']}), a Marian model imported from Hugging Face",
        "source_model": name,
        "languages": langs,
        "licence": licence,
        "credit": OPUS_MT_CREDIT if licence == OPUS_MT_LICENCE else name,
        "imported": {"by": "transformer.model.hf", "date": dt.date.today().isoformat(), "dtype": str(dtype)[6:],
                     "transformers_version": hf.get("transformers_version")},
        "n_params": sum(p.numel() for p in model.parameters()),
        "hf_generation": {k: v for k, v in hf.items()
                          if k in ("num_beams", "max_length", "length_penalty", "forced_eos_token_id", "early_stopping",
                                   "no_repeat_ngram_size", "bad_words_ids", "renormalize_logits")},
    }


def model_card(meta: dict[str, Any], config: ModelConfig, tokenizer: spm.SentencePieceTokenizer) -> str:
    langs, s, gen = meta["languages"], tokenizer.specials, meta["hf_generation"]
    return f"""# {meta['source_model']}, imported

A Marian translation model ({langs['src']} -> {langs['tgt']}) from Hugging Face, converted on
{meta['imported']['date']} by `python -m transformer.model.hf` into this project's own Transformer. The weights are
the source's, renamed and checked for shape ({meta['n_params']:,} parameters, stored as {meta['imported']['dtype']});
nothing was trained. Greedy search gives the same tokens and probabilities as transformers' `generate`.

- Source: {meta['source_model']}
- Licence: {meta['licence']}. Credit: {meta['credit']}.
- Architecture: d_model {config.d_model}, {config.n_encoder_layers} + {config.n_decoder_layers} layers, {config.n_heads}
  heads, d_ff {config.d_ff}, {config.src_vocab_size:,} source / {config.tgt_vocab_size:,} target pieces,
  {config.activation}, post-LN (no final LayerNorm), sinusoids as sines then cosines, a fixed logits bias,
  {'one embedding table for encoder, decoder and output' if config.share_embeddings else 'separate embeddings'}.
- Tokenizer: Marian's SentencePiece models and vocabulary, in tokenizer.json; the decoder starts with {s.start}, a
  sentence ends with {s.eos}, never emitted: {list(s.never)}.
- The source's generation settings: {json.dumps(gen)}. Beam search here ranks finished hypotheses by our length
  penalty; see docs/real-models.md for where it differs from transformers'.

If you use it, cite the model's authors: {meta['credit']}.
"""

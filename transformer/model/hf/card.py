"""Where an imported model came from: its metadata.json fields and the MODEL_CARD.md written beside it.

OPUS-MT models (Tiedemann & Thottingal, EAMT 2020) are released under CC-BY 4.0: the credit goes with them. Meta's
releases say theirs in their cards (README.md's `license:`), which a Hub download holds; a folder without one gets
the licence of the Hub family its name matches (`LICENCES`), or "unknown".
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
# Hub names -> the licence their cards declare (docs/real-models.md says which were checked)
LICENCES = ((r"facebook/nllb-200", "CC-BY-NC-4.0"), (r"facebook/m2m100", "MIT"), (r"facebook/mbart-large-50", "MIT"),
            (r"facebook/bart-large-cnn", "MIT"), (r"facebook/bart-(base|large)$", "Apache-2.0"))
CREDITS = {  # the family (as transformer.model.hf names it) -> its paper
    "Marian": OPUS_MT_CREDIT,
    "M2M100": "M2M-100 (Fan et al., Beyond English-Centric Multilingual Machine Translation, JMLR 2021), Meta AI",
    "NLLB-200": "NLLB-200 (NLLB Team et al., No Language Left Behind, 2022), Meta AI",
    "mBART": "mBART (Liu et al., Multilingual Denoising Pre-training for Neural Machine Translation, TACL 2020), "
             "Meta AI",
    "mBART-50": "mBART-50 (Tang et al., Multilingual Translation with Extensible Multilingual Pretraining and "
                "Finetuning, 2020), Meta AI",
    "BART": "BART (Lewis et al., ACL 2020), Meta AI",
}


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
    if found:
        return found.group(1)
    return next((licence for pattern, licence in LICENCES if re.search(pattern, name)),
                "unknown: see the source model's card")


def provenance(metadata: dict[str, Any]) -> dict[str, Any]:
    """The fields of a checkpoint's metadata that say where its weights came from: a fine-tuned import keeps them
    (CC-BY asks for the credit)."""
    return {key: metadata[key] for key in PROVENANCE if key in metadata}


def metadata(name: str, family: str, langs: dict[str, str], hf: dict[str, Any], model: Transformer, licence: str,
             dtype: torch.dtype) -> dict[str, Any]:
    """metadata.json: where the model came from (name, a Hub name or a folder), its family, languages and licence;
    hf is its config.json updated with its generation_config.json."""
    return {
        "description": f"{name} ({langs['src']} -> {langs['tgt']}), imported from Hugging Face ({family})",
        "source_model": name,
        "languages": langs,
        "licence": licence,
        "credit": OPUS_MT_CREDIT if licence == OPUS_MT_LICENCE else CREDITS.get(family, name),
        "imported": {"by": "transformer.model.hf", "family": family, "date": dt.date.today().isoformat(),
                     "dtype": str(dtype)[6:],
                     "transformers_version": hf.get("transformers_version")},
        "n_params": sum(p.numel() for p in model.parameters()),
        "hf_generation": {k: v for k, v in hf.items()
                          if k in ("num_beams", "max_length", "length_penalty", "forced_eos_token_id", "early_stopping",
                                   "no_repeat_ngram_size", "bad_words_ids", "renormalize_logits",
                                   "decoder_start_token_id", "forced_bos_token_id")},
    }


def architecture(config: ModelConfig) -> str:
    """The options that set the model apart from the paper's, in words."""
    final = config.norm_first and config.final_norm
    norm = "pre-LN with a final LayerNorm" if final else "post-LN (no final LayerNorm)"
    positions = (f"learned positions (row {config.position_offset} first)" if config.learned_positions else
                 {"interleaved": "sinusoids (the paper's)", "halves": "sinusoids as sines then cosines",
                  "fairseq": "fairseq's sinusoids"}[config.positional_layout]
                 + (f" from row {config.position_offset}" if config.position_offset else ""))
    parts = [config.activation, norm, positions, "a LayerNorm on the embeddings" if config.embedding_norm else "",
             "embeddings scaled by sqrt(d_model)" if config.scale_embedding else "unscaled embeddings",
             "a fixed logits bias" if config.final_logits_bias else "",
             "one embedding table for encoder, decoder and output" if config.share_embeddings and config.tie_output
             else "shared embeddings" if config.share_embeddings else "separate embeddings"]
    return ", ".join(p for p in parts if p)


def model_card(meta: dict[str, Any], config: ModelConfig, tokenizer: Any) -> str:
    langs, s, gen, family = meta["languages"], tokenizer.specials, meta["hf_generation"], meta["imported"]["family"]
    codes = getattr(tokenizer, "language_codes", [])
    many = (f"\n- Languages: {len(codes)} codes ({', '.join(codes[:6])}, ...); it starts as {langs['src']} -> "
            f"{langs['tgt']}, and `--src-lang`/`--tgt-lang` (translate) or the app's picker choose others; the target "
            f"language's token is {'the forced first output token' if s.forced else 'the decoder start'}."
            if codes else "")
    return f"""# {meta['source_model']}, imported

A translation model of the {family} family ({langs['src']} -> {langs['tgt']}) from Hugging Face, converted on
{meta['imported']['date']} by `python -m transformer.model.hf` into this project's own Transformer. The weights are
the source's, renamed and checked for shape ({meta['n_params']:,} parameters, stored as {meta['imported']['dtype']});
nothing was trained. Greedy search gives the same tokens and probabilities as transformers' `generate`.

- Source: {meta['source_model']}
- Licence: {meta['licence']}. Credit: {meta['credit']}.
- Architecture: d_model {config.d_model}, {config.n_encoder_layers} + {config.n_decoder_layers} layers, {config.n_heads}
  heads, d_ff {config.d_ff}, {config.src_vocab_size:,} source / {config.tgt_vocab_size:,} target pieces,
  {architecture(config)}.
- Tokenizer: the source's, in tokenizer.json; the decoder starts with {s.start}{f', then {list(s.forced)} forced' if
  s.forced else ''}, a sentence ends with {s.eos}, never emitted: {list(s.never)}.{many}
- The source's generation settings: {json.dumps(gen)}. Beam search here ranks finished hypotheses by our length
  penalty; see docs/real-models.md for where it differs from transformers'.

If you use it, cite the model's authors: {meta['credit']}.
"""

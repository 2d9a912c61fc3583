"""The import: a Hugging Face folder or Hub name -> a checkpoint of our own, and its command line.

Everything is read and checked before anything is written: the config (`marian`, `fairseq`), the tokenizer, every
tensor (`weights`), the languages and the metadata the loader will check. The checkpoint is then written by
`transformer.model.checkpoint` atomically, so a failed import leaves --out as it was.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

import transformer.model.hf.fairseq as fairseq
import transformer.model.hf.marian as marian
from transformer.model.checkpoint import CheckpointError, save_checkpoint
from transformer.model.hf.card import CARD, MODEL_CARD, OPUS_MT_LICENCE, licence_of, metadata, model_card
from transformer.model.hf.common import (
    GENERATION_CONFIG,
    HF_CONFIG,
    HF_WEIGHTS,
    ImportFailed,
    Source,
    read_json,
    read_weights,
    resolve,
)
from transformer.model.hf.fairseq_tokenizer import FILES as FAIRSEQ_FILES
from transformer.model.hf.fairseq_tokenizer import read_tokenizer, tokenizer_class
from transformer.model.hf.weights import state_dict
from transformer.model.layers import Transformer
from transformer.model.metadata import metadata_problem

log = logging.getLogger(__name__)

HUB_FILES = sorted({HF_CONFIG, GENERATION_CONFIG, HF_WEIGHTS, CARD, *marian.FILES, *FAIRSEQ_FILES})
ARCHITECTURES = ("MarianMTModel (opus-mt), M2M100ForConditionalGeneration (M2M100, NLLB-200), "
                 "MBartForConditionalGeneration (mBART, mBART-50), BartForConditionalGeneration (BART)")
# a fairseq family's name, by its model type and tokenizer class (NLLB is M2M100's model with its own tokenizer)
FAMILY_NAMES = {("m2m_100", "NllbTokenizer"): "NLLB-200", ("mbart", "MBart50Tokenizer"): "mBART-50"}


def _read(source: Source, hf: dict[str, Any], generation: dict[str, Any], src_lang: str | None,
          tgt_lang: str | None) -> tuple[str, Any, Any, dict[str, str]]:
    """The family's name, our ModelConfig, the tokenizer and the language pair {src, tgt} of a folder."""
    where, model_type = str(source.folder / HF_CONFIG), hf.get("model_type")
    if model_type == "marian":
        config = marian.model_config(hf, where)
        tokenizer = marian.tokenizer_for(source, hf, generation, config)
        return "Marian", config, tokenizer, marian.language_pair(source, src_lang, tgt_lang)
    if model_type not in fairseq.FAMILIES:
        raise ImportFailed(f"{where}: model_type {model_type!r}, architectures {hf.get('architectures')}: we import "
                           f"{ARCHITECTURES}")
    config = fairseq.model_config(hf, where)
    named = tokenizer_class(source, hf, read_json(source.folder / "tokenizer_config.json", required=False))
    family = FAMILY_NAMES.get((model_type, named), fairseq.FAMILIES[model_type].name)
    tokenizer = read_tokenizer(source, hf, generation, config, src_lang, tgt_lang)
    # BART reads and writes English (it has no language codes); the flags may say otherwise
    langs = {"src": tokenizer.src_lang or src_lang or "en", "tgt": tokenizer.tgt_lang or tgt_lang or "en"}
    for side, flag in (("src", "--src-lang"), ("tgt", "--tgt-lang")):
        marian.check_code(langs[side], flag, source.name)
    return family, config, tokenizer, langs


def import_model(src: str, out: str | Path, *, dtype: torch.dtype = torch.float32, force: bool = False,
                 licence: str | None = None, src_lang: str | None = None, tgt_lang: str | None = None) -> Path:
    """Convert SRC (folder or Hub name) into the checkpoint OUT; ImportFailed before anything is written. src_lang and
    tgt_lang: the language pair (Marian: where the folder does not name it; many-to-many models: the languages they
    start with, which translate and the app can change)."""
    out = Path(out)
    if out.exists() and not force:
        raise ImportFailed(f"{out}: already exists; pass --force to replace it")
    source = resolve(src, HUB_FILES)
    hf = read_json(source.folder / HF_CONFIG)
    generation = read_json(source.folder / GENERATION_CONFIG, required=False)
    family, config, tokenizer, langs = _read(source, hf, generation, src_lang, tgt_lang)
    converter = "MarianMTModel" if family == "Marian" else "AutoModelForSeq2SeqLM"
    weights = state_dict(read_weights(source.folder, converter), config, family)
    model = Transformer.from_weights(config, weights)  # the tensors themselves: no second copy of the weights
    meta = metadata(source.name, family, langs, {**hf, **generation}, model,
                    licence_of(source.name, source.folder, licence), dtype)
    if (problem := metadata_problem(meta)) is not None:  # what the loader would refuse is never written
        raise ImportFailed(f"{source.name}: {problem}")
    card = model_card(meta, config, tokenizer)
    try:
        save_checkpoint(out, model, tokenizer=tokenizer, metadata=meta, dtype=dtype,
                        write_extra=lambda folder: (folder / MODEL_CARD).write_text(card, encoding="utf-8"))
    except (CheckpointError, OSError) as exc:
        raise ImportFailed(f"{out}: cannot write the checkpoint ({exc})") from exc
    log.info("imported %s (%s) into %s", source.name, family, out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer.model.hf",
                                     description="Import a Hugging Face translation model into a checkpoint of this "
                                                 f"project's own Transformer: {ARCHITECTURES}.")
    parser.add_argument("src", help="a folder that save_pretrained or a Hub download wrote, or a Hub name such as "
                                    "Helsinki-NLP/opus-mt-en-fr or facebook/nllb-200-distilled-600M (downloaded when "
                                    "this machine is online)")
    parser.add_argument("--out", required=True, help="the checkpoint folder to write, e.g. checkpoints/opus-mt-en-fr")
    parser.add_argument("--half", action="store_true", help="store the weights in float16 (half the file)")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    parser.add_argument("--licence", help=f"the licence to record (default: {OPUS_MT_LICENCE} for OPUS-MT models, "
                                          "else the model card's)")
    parser.add_argument("--src", "--src-lang", dest="src_lang",
                        help="the source language: Marian's where tokenizer_config.json and the name (opus-mt-SRC-TGT) "
                             "do not say it (e.g. en); a many-to-many model's code to start with (en for M2M100, "
                             "eng_Latn for NLLB-200, en_XX for mBART)")
    parser.add_argument("--tgt", "--tgt-lang", dest="tgt_lang",
                        help="the target language, likewise (e.g. fr, fra_Latn, fr_XX)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        out = import_model(args.src, args.out, dtype=torch.float16 if args.half else torch.float32, force=args.force,
                           licence=args.licence, src_lang=args.src_lang, tgt_lang=args.tgt_lang)
    except ImportFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"imported {args.src} into {out}")
    return 0

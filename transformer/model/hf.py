"""Hugging Face Marian (the opus-mt models) -> a checkpoint of our own Transformer: config mapping, weight renames,
the import command.

    python -m transformer.model.hf Helsinki-NLP/opus-mt-en-fr --out checkpoints/opus-mt-en-fr   # online
    transformer-import ./opus-mt-en-fr --out checkpoints/opus-mt-en-fr   # a folder save_pretrained or a download wrote

Marian is the paper's Transformer with a few differences, each a ModelConfig option: swish (SiLU) in the
feed-forward network, post-LN with no final LayerNorm, sinusoids laid out as sines then cosines, a fixed bias on
the logits, one embedding table shared by encoder, decoder and output. The decoder starts from <pad> (the last
id), ends with </s> (0) and never emits <pad>: the tokenizer's special ids (`transformer.data.sentencepiece`).

Only `model.safetensors` and the JSON and SentencePiece files are read; `pytorch_model.bin` is never unpickled. A
config whose architecture or options we do not implement is refused by name, and a folder with missing or
inconsistent files (vocabulary sizes, shapes) gets one `ImportFailed` naming the file, before anything is written.
The checkpoint is written by `transformer.model.checkpoint` (atomically: a failed import leaves --out untouched),
with metadata.json (source, languages, licence) and a generated MODEL_CARD.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from transformer.data import sentencepiece as spm
from transformer.data.vocabulary import TokenizerError
from transformer.model.checkpoint import CONFIG_FILE, WEIGHTS_FILE, CheckpointError, save_checkpoint, unique_state_dict
from transformer.model.config import ModelConfig
from transformer.model.embedding import sinusoidal_encoding
from transformer.model.hf_card import CARD, MODEL_CARD, OPUS_MT_LICENCE, languages, licence_of, metadata, model_card
from transformer.model.layers import Transformer
from transformer.model.metadata import CODE, metadata_problem

log = logging.getLogger(__name__)

HF_CONFIG, HF_WEIGHTS = CONFIG_FILE, WEIGHTS_FILE  # transformers names them as we do
GENERATION_CONFIG, PICKLED_WEIGHTS = "generation_config.json", "pytorch_model.bin"
HUB_FILES = [HF_CONFIG, GENERATION_CONFIG, HF_WEIGHTS, spm.SOURCE_SPM, spm.TARGET_SPM, spm.VOCAB, spm.TARGET_VOCAB,
             spm.TOKENIZER_CONFIG, CARD]
HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}  # transformers' name -> ours
# Options of Marian's (and BART's) config that transformers' MarianMTModel does not compute, or we do not: the value
# that is fine, and why another is refused.
REFUSED = {"normalize_before": (False, "pre-LN Marian"), "add_bias_logits": (False, "a learned logits bias"),
           "normalize_embedding": (False, "a LayerNorm on the embeddings"),
           "layernorm_embedding": (False, "a LayerNorm on the embeddings"),
           "add_final_layer_norm": (False, "a final LayerNorm"),
           "static_position_embeddings": (True, "learned position embeddings")}


class ImportFailed(ValueError):
    """The source cannot be imported: missing, refused, or inconsistent; the message names the file and the problem."""


@dataclass(frozen=True)
class Source:
    folder: Path
    name: str  # the Hub name, or the folder as given


# ----------------------------------------------------------------------------- the config


def _read_json(file: Path, required: bool = True) -> dict[str, Any]:
    if not file.is_file():
        if required:
            raise ImportFailed(f"{file}: file is missing")
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ImportFailed(f"{file}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ImportFailed(f"{file}: expected a JSON object")
    return data


def model_config(hf: dict[str, Any], where: str = HF_CONFIG) -> ModelConfig:
    """Our ModelConfig for a MarianConfig (as config.json holds it); ImportFailed names what is not implemented."""
    if hf.get("model_type") != "marian" or hf.get("architectures", ["MarianMTModel"]) != ["MarianMTModel"]:
        raise ImportFailed(f"{where}: model_type {hf.get('model_type')!r}, architectures {hf.get('architectures')}: "
                           "only Marian translation models (MarianMTModel, e.g. Helsinki-NLP/opus-mt-*) are imported")
    for key, (fine, why) in REFUSED.items():
        if key in hf and hf[key] != fine:
            raise ImportFailed(f"{where}: {key} = {json.dumps(hf[key])}: {why} is not implemented")
    activation = hf.get("activation_function", "gelu")
    if activation not in ACTIVATIONS:
        raise ImportFailed(f"{where}: activation_function {activation!r} is not implemented (swish, silu, relu or "
                           "gelu are)")
    for ours, (enc, dec) in {"n_heads": ("encoder_attention_heads", "decoder_attention_heads"),
                             "d_ff": ("encoder_ffn_dim", "decoder_ffn_dim")}.items():
        if hf.get(enc) != hf.get(dec):
            raise ImportFailed(f"{where}: {enc} {hf.get(enc)} and {dec} {hf.get(dec)} differ; our model has one "
                               f"{ours}")
    shared = hf.get("share_encoder_decoder_embeddings", True)
    vocab_size = hf.get("vocab_size")
    tgt_vocab_size = vocab_size if shared else hf.get("decoder_vocab_size") or vocab_size
    try:
        return ModelConfig(
            src_vocab_size=vocab_size, tgt_vocab_size=tgt_vocab_size, d_model=hf.get("d_model"),
            n_heads=hf.get("encoder_attention_heads"), n_encoder_layers=hf.get("encoder_layers"),
            n_decoder_layers=hf.get("decoder_layers"), d_ff=hf.get("encoder_ffn_dim"),
            dropout=float(hf.get("dropout", 0.1)), max_len=hf.get("max_position_embeddings"),
            pad_id=hf.get("pad_token_id"), norm_first=False, activation=ACTIVATIONS[activation],
            share_embeddings=bool(shared), tie_output=bool(hf.get("tie_word_embeddings", True)),
            scale_embedding=bool(hf.get("scale_embedding", False)), positional_layout="halves",
            final_logits_bias=True, layer_norm_eps=1e-5, final_norm=False)  # nn.LayerNorm's eps, as transformers
    except (TypeError, ValueError) as exc:
        raise ImportFailed(f"{where}: {exc}") from exc


# ----------------------------------------------------------------------------- the weights

ATTENTION = {"w_q": "q_proj", "w_kv": ("k_proj", "v_proj"), "w_o": "out_proj"}  # ours -> transformers'
ENCODER_LAYER = {"self_attn": "self_attn", "sublayers.0.norm": "self_attn_layer_norm", "feed_forward.w_1": "fc1",
                 "feed_forward.w_2": "fc2", "sublayers.1.norm": "final_layer_norm"}
DECODER_LAYER = {"self_attn": "self_attn", "sublayers.0.norm": "self_attn_layer_norm", "cross_attn": "encoder_attn",
                 "sublayers.1.norm": "encoder_attn_layer_norm", "feed_forward.w_1": "fc1", "feed_forward.w_2": "fc2",
                 "sublayers.2.norm": "final_layer_norm"}
IGNORED = re.compile(r"model\.(encoder|decoder)\.embed_positions\.weight")  # static sinusoids, checked, not loaded


def renames(config: ModelConfig) -> dict[str, tuple[str, ...]]:
    """Our parameter name -> the transformers tensor(s) it is made of (keys and values: two, stacked)."""
    table: dict[str, tuple[str, ...]] = {
        "src_embed.tokens.weight": ("model.shared.weight", "model.encoder.embed_tokens.weight"),
        "final_logits_bias": ("final_logits_bias",),
    }
    if not config.share_embeddings:
        table["src_embed.tokens.weight"] = ("model.encoder.embed_tokens.weight",)
        table["tgt_embed.tokens.weight"] = ("model.decoder.embed_tokens.weight",)
    if not config.tie_output:
        table["generator.weight"] = ("lm_head.weight",)
    for stack, n_layers, layer_table in (("encoder", config.n_encoder_layers, ENCODER_LAYER),
                                         ("decoder", config.n_decoder_layers, DECODER_LAYER)):
        for i in range(n_layers):
            for ours, theirs in layer_table.items():
                parts = ATTENTION.items() if ours.endswith("attn") else [("", theirs)]
                for sub, hf_sub in parts:
                    name = f"{ours}.{sub}" if sub else ours
                    hf_names = (hf_sub,) if isinstance(hf_sub, str) else hf_sub
                    prefix = f"model.{stack}.layers.{i}.{theirs + '.' if sub else ''}"
                    for param in ("weight", "bias"):
                        table[f"{stack}_layers.{i}.{name}.{param}"] = tuple(f"{prefix}{h}.{param}" for h in hf_names)
    return table


def _tensor(hf: dict[str, torch.Tensor], names: tuple[str, ...], stacked: bool) -> tuple[torch.Tensor, str]:
    """The tensor for one of our parameters: the first of names present (alternatives), or all stacked (k and v)."""
    if stacked:
        missing = [n for n in names if n not in hf]
        if missing:
            raise ImportFailed(f"{HF_WEIGHTS}: has no {missing[0]}")
        return torch.cat([hf[n] for n in names]), " + ".join(names)
    name = next((n for n in names if n in hf), None)
    if name is None:
        raise ImportFailed(f"{HF_WEIGHTS}: has no {' or '.join(names)}")
    return hf[name], name


def state_dict(hf: dict[str, torch.Tensor], model: Transformer) -> dict[str, torch.Tensor]:
    """model's weights from transformers' tensors, each checked for its shape; every tensor must be used."""
    config = model.config
    table, used, state = renames(config), set(), {}
    for ours, target in unique_state_dict(model).items():
        if ours not in table:
            raise ImportFailed(f"our model's {ours} has no counterpart in a Marian checkpoint")
        names = table[ours]
        if ours == "final_logits_bias" and names[0] not in hf:  # transformers fills a missing bias with zeros too
            tensor, name = torch.zeros(config.tgt_vocab_size), names[0]
        else:
            tensor, name = _tensor(hf, names, stacked=".w_kv." in ours)
        tensor = tensor.reshape(-1) if ours == "final_logits_bias" and tensor.dim() == 2 else tensor  # (1, V)
        if tensor.shape != target.shape:
            raise ImportFailed(f"{HF_WEIGHTS}: {name} has shape {tuple(tensor.shape)}, but {HF_CONFIG} makes "
                               f"{ours} {tuple(target.shape)}")
        used.update(name.split(" + "))
        state[ours] = tensor.float()
    used |= _check_tied(hf, state, config)
    _check_positions(hf, config)
    unused = sorted(n for n in hf if n not in used and not IGNORED.fullmatch(n))
    if unused:
        raise ImportFailed(f"{HF_WEIGHTS}: tensors we do not compute: {', '.join(unused[:5])}"
                           f"{' ...' if len(unused) > 5 else ''} (an option of another architecture?)")
    return state


def _check_tied(hf: dict[str, torch.Tensor], state: dict[str, torch.Tensor], config: ModelConfig) -> set[str]:
    """The copies of a shared or tied table that a file holds (older files hold all four names) must equal the
    table we load; returns their names."""
    table = "src_embed.tokens.weight" if config.share_embeddings else "tgt_embed.tokens.weight"
    copies = [("src_embed.tokens.weight", "model.encoder.embed_tokens.weight")] if config.share_embeddings else []
    copies += [(table, "model.decoder.embed_tokens.weight")] if config.share_embeddings else []
    copies += [(table, "lm_head.weight")] if config.tie_output else []
    for ours, name in copies:
        if name in hf and (hf[name].shape != state[ours].shape or not torch.equal(hf[name].float(), state[ours])):
            raise ImportFailed(f"{HF_WEIGHTS}: {name} differs from the table {HF_CONFIG} ties it to")
    return {name for _, name in copies if name in hf}


def _check_positions(hf: dict[str, torch.Tensor], config: ModelConfig) -> None:
    """Saved position tables (older files hold them) must be the static sinusoids we compute."""
    table = sinusoidal_encoding(config.max_len, config.d_model, config.positional_layout)
    for name in (n for n in hf if IGNORED.fullmatch(n)):
        if hf[name].shape != table.shape or not torch.allclose(hf[name].float(), table, atol=1e-4):
            raise ImportFailed(f"{HF_WEIGHTS}: {name} is not the static sinusoid table (learned positions are not "
                               "implemented)")


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """model.safetensors' tensors; a folder with only pytorch_model.bin is refused, never unpickled."""
    file = folder / HF_WEIGHTS
    if not file.is_file():
        if (folder / PICKLED_WEIGHTS).exists():
            raise ImportFailed(
                f"{folder}: has only {PICKLED_WEIGHTS}, a pickle, which this import never opens (unpickling runs "
                f"code). Convert it once where you trust the file, with transformers: python -c \"from transformers "
                f"import MarianMTModel as M; M.from_pretrained('{folder}').save_pretrained('{folder}')\" writes "
                f"{HF_WEIGHTS} beside it")
        raise ImportFailed(f"{file}: file is missing")
    try:
        return load_file(str(file))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ImportFailed(f"{file}: cannot be read as safetensors ({exc})") from exc


# ----------------------------------------------------------------------------- the tokenizer


def tokenizer_for(folder: Path, hf: dict[str, Any], generation: dict[str, Any],
                  config: ModelConfig) -> spm.SentencePieceTokenizer:
    """The Marian tokenizer of folder, its special ids checked against the config's and the decoding rules'."""
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


# ----------------------------------------------------------------------------- the import


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
        if not isinstance(code, str) or not CODE.fullmatch(code):
            raise ImportFailed(f"{source.name}: {flag} {str(code)[:30]!r} is not a language code such as en, fr or "
                               "zh_Hant (letters, digits, - and _)")
    return {"src": found["src"], "tgt": found["tgt"]}


def resolve(src: str) -> Source:
    """A folder as it is, or a Hub name (owner/name) downloaded with huggingface_hub (its cache)."""
    folder = Path(src)
    if folder.is_dir():
        return Source(folder, src)
    if not HUB_NAME.fullmatch(src):
        raise ImportFailed(f"{src}: no such folder, and not a Hugging Face name such as Helsinki-NLP/opus-mt-en-fr")
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(src, allow_patterns=HUB_FILES))
    except Exception as exc:  # offline, unknown repository, refused: one line, whatever huggingface_hub raised
        if type(exc).__name__ in ("RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"):
            raise ImportFailed(f"{src}: not found on the Hugging Face Hub ({type(exc).__name__})") from exc
        raise ImportFailed(f"{src}: cannot download it (offline? {type(exc).__name__}). On a machine that is online, "
                           f"run `hf download {src} --local-dir DIR`, copy DIR here and pass it: "
                           f"python -m transformer.model.hf DIR --out OUT") from exc
    if not (folder / HF_WEIGHTS).is_file():  # only pytorch_model.bin there, which is not even downloaded
        raise ImportFailed(f"{src}: has no {HF_WEIGHTS} on the Hub (pickled weights only?). Convert them once where "
                           f"you trust them: python -c \"from transformers import MarianMTModel as M; "
                           f"M.from_pretrained('{src}').save_pretrained('DIR')\", then pass DIR")
    return Source(folder, src)


def import_marian(src: str, out: str | Path, *, dtype: torch.dtype = torch.float32, force: bool = False,
                  licence: str | None = None, src_lang: str | None = None, tgt_lang: str | None = None) -> Path:
    """Convert SRC (folder or Hub name) into the checkpoint OUT; ImportFailed before anything is written. src_lang
    and tgt_lang name the language pair where the folder does not."""
    out = Path(out)
    if out.exists() and not force:
        raise ImportFailed(f"{out}: already exists; pass --force to replace it")
    source = resolve(src)
    langs = language_pair(source, src_lang, tgt_lang)
    hf = _read_json(source.folder / HF_CONFIG)
    generation = _read_json(source.folder / GENERATION_CONFIG, required=False)
    config = model_config(hf, str(source.folder / HF_CONFIG))
    tokenizer = tokenizer_for(source.folder, hf, generation, config)
    model = Transformer(config)
    # shared and tied tables are filled through their first name
    model.load_state_dict(state_dict(read_weights(source.folder), model), strict=False)
    meta = metadata(source.name, langs, {**hf, **generation}, model, licence_of(source.name, source.folder, licence),
                    dtype)
    if (problem := metadata_problem(meta)) is not None:  # what the loader would refuse is never written
        raise ImportFailed(f"{source.name}: {problem}")
    card = model_card(meta, config, tokenizer)
    try:
        save_checkpoint(out, model, tokenizer=tokenizer, metadata=meta, dtype=dtype,
                        write_extra=lambda folder: (folder / MODEL_CARD).write_text(card, encoding="utf-8"))
    except (CheckpointError, OSError) as exc:
        raise ImportFailed(f"{out}: cannot write the checkpoint ({exc})") from exc
    log.info("imported %s into %s", source.name, out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer.model.hf", description=__doc__.split("\n")[0])
    parser.add_argument("src", help="a folder that save_pretrained or a Hub download wrote, or a Hub name such as "
                                    "Helsinki-NLP/opus-mt-en-fr (downloaded when this machine is online)")
    parser.add_argument("--out", required=True, help="the checkpoint folder to write, e.g. checkpoints/opus-mt-en-fr")
    parser.add_argument("--half", action="store_true", help="store the weights in float16 (half the file)")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    parser.add_argument("--licence", help=f"the licence to record (default: {OPUS_MT_LICENCE} for OPUS-MT models)")
    parser.add_argument("--src", dest="src_lang", help="the source language code, e.g. en (default: tokenizer_config.json's "
                                      "source_lang, or the SRC of a name opus-mt-SRC-TGT)")
    parser.add_argument("--tgt", dest="tgt_lang", help="the target language code, e.g. fr (default: target_lang, or the TGT of the name)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        out = import_marian(args.src, args.out, dtype=torch.float16 if args.half else torch.float32, force=args.force,
                            licence=args.licence, src_lang=args.src_lang, tgt_lang=args.tgt_lang)
    except ImportFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"imported {args.src} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

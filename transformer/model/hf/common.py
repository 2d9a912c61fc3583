"""What every family's import shares: its error, the source folder (or the Hub download), the JSON and safetensors
files read from it, and the config fields that every family maps the same way."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from transformer.model.checkpoint import CONFIG_FILE, WEIGHTS_FILE

HF_CONFIG, HF_WEIGHTS = CONFIG_FILE, WEIGHTS_FILE  # transformers names them as we do
GENERATION_CONFIG, PICKLED_WEIGHTS, TOKENIZER_CONFIG = "generation_config.json", "pytorch_model.bin", \
    "tokenizer_config.json"
HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}  # transformers' name -> ours


class ImportFailed(ValueError):
    """The source cannot be imported: missing, refused, or inconsistent; the message names the file and the problem."""


@dataclass(frozen=True)
class Source:
    folder: Path
    name: str  # the Hub name, or the folder as given


def read_json(file: Path, required: bool = True) -> dict[str, Any]:
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


def read_weights(folder: Path, converter: str) -> dict[str, torch.Tensor]:
    """model.safetensors' tensors; a folder with only pytorch_model.bin is refused, never unpickled (converter: the
    transformers class whose save_pretrained would convert it)."""
    file = folder / HF_WEIGHTS
    if not file.is_file():
        if (folder / PICKLED_WEIGHTS).exists():
            raise ImportFailed(
                f"{folder}: has only {PICKLED_WEIGHTS}, a pickle, which this import never opens (unpickling runs "
                f"code). Convert it once where you trust the file, with transformers: python -c \"from transformers "
                f"import {converter} as M; M.from_pretrained('{folder}').save_pretrained('{folder}')\" writes "
                f"{HF_WEIGHTS} beside it")
        raise ImportFailed(f"{file}: file is missing")
    try:
        return load_file(str(file))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ImportFailed(f"{file}: cannot be read as safetensors ({exc})") from exc


def resolve(src: str, patterns: list[str]) -> Source:
    """A folder as it is, or a Hub name (owner/name) downloaded with huggingface_hub (its cache): only the files
    that match patterns."""
    folder = Path(src)
    if folder.is_dir():
        return Source(folder, src)
    if not HUB_NAME.fullmatch(src):
        raise ImportFailed(f"{src}: no such folder, and not a Hugging Face name such as Helsinki-NLP/opus-mt-en-fr")
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(src, allow_patterns=patterns))
    except Exception as exc:  # offline, unknown repository, refused: one line, whatever huggingface_hub raised
        if type(exc).__name__ in ("RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"):
            raise ImportFailed(f"{src}: not found on the Hugging Face Hub ({type(exc).__name__})") from exc
        raise ImportFailed(f"{src}: cannot download it (offline? {type(exc).__name__}). On a machine that is online, "
                           f"run `hf download {src} --local-dir DIR`, copy DIR here and pass it: "
                           f"python -m transformer.model.hf DIR --out OUT") from exc
    if not (folder / HF_WEIGHTS).is_file():  # only pytorch_model.bin there, which is not even downloaded
        raise ImportFailed(f"{src}: has no {HF_WEIGHTS} on the Hub (pickled weights only?). Convert them once where "
                           f"you trust them: python -c \"from transformers import AutoModelForSeq2SeqLM as M; "
                           f"M.from_pretrained('{src}').save_pretrained('DIR')\", then pass DIR")
    return Source(folder, src)


def shared_fields(hf: dict[str, Any], where: str) -> dict[str, Any]:
    """The ModelConfig fields every family reads alike: sizes, heads, dropout, pad id, the activation. ImportFailed
    for an activation we do not compute, or encoder and decoder of different widths (our model has one of each)."""
    activation = hf.get("activation_function", "gelu")
    if activation not in ACTIVATIONS:
        raise ImportFailed(f"{where}: activation_function {activation!r} is not implemented (swish, silu, relu or "
                           "gelu are)")
    for ours, (enc, dec) in {"n_heads": ("encoder_attention_heads", "decoder_attention_heads"),
                             "d_ff": ("encoder_ffn_dim", "decoder_ffn_dim")}.items():
        if hf.get(enc) != hf.get(dec):
            raise ImportFailed(f"{where}: {enc} {hf.get(enc)} and {dec} {hf.get(dec)} differ; our model has one "
                               f"{ours}")
    return dict(d_model=hf.get("d_model"), n_heads=hf.get("encoder_attention_heads"),
                n_encoder_layers=hf.get("encoder_layers"), n_decoder_layers=hf.get("decoder_layers"),
                d_ff=hf.get("encoder_ffn_dim"), dropout=float(hf.get("dropout", 0.1)),
                max_len=hf.get("max_position_embeddings"), pad_id=hf.get("pad_token_id"),
                activation=ACTIVATIONS[activation],
                layer_norm_eps=1e-5)  # nn.LayerNorm's default, which every family's LayerNorm keeps


def refuse_options(hf: dict[str, Any], where: str, fine: dict[str, Any], architecture: str) -> None:
    """Legacy keys of fairseq's configs (normalize_before, ...) that transformers' class does not read: a value
    other than what the class computes means weights trained another way, which neither computes."""
    for key, value in fine.items():
        if key in hf and hf[key] != value:
            raise ImportFailed(f"{where}: {key} = {json.dumps(hf[key])}: {architecture} computes "
                               f"{key} = {json.dumps(value)}, and so do we; the weights were trained otherwise")

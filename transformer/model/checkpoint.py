"""Checkpoints are directories: config.json, model.safetensors, tokenizer.json, metadata.json.

No pickle anywhere: weights are safetensors, everything else JSON, and nothing else is ever read. Writes go
to a temporary sibling directory that is renamed into place, so a killed process never leaves a
half-written checkpoint (`recover_interrupted_saves` finishes a swap that a kill cut in two).
`load_checkpoint` is the one loader for the CLI, the app and the tests; whatever is wrong with a checkpoint
(truncated, not safetensors, shapes or dtypes that do not match its config, a tokenizer of another size, a
symlink out of the directory) raises one CheckpointError naming the file and the problem.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from transformer.data.tokenizer import Tokenizer
from transformer.model.config import ModelConfig
from transformer.model.layers import Transformer

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "metadata.json"
WEIGHT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # what save_checkpoint writes


class CheckpointError(Exception):
    """A checkpoint is missing, truncated, corrupt, or does not match its config."""


@dataclass
class Checkpoint:
    path: Path
    config: ModelConfig
    model: Transformer  # in eval mode, on the requested device, fp32
    tokenizer: Tokenizer | None
    metadata: dict[str, Any] = field(default_factory=dict)


def unique_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each tensor once: tied or shared weights appear under their first name."""
    seen, state = set(), {}
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            state[name] = tensor
    return state


def save_checkpoint(
    path: str | Path,
    model: Transformer,
    *,
    tokenizer: Tokenizer | None = None,
    metadata: dict[str, Any] | None = None,
    dtype: torch.dtype = torch.float32,
    write_extra: Callable[[Path], None] | None = None,
) -> Path:
    """Write a checkpoint directory atomically; dtype=torch.float16 halves the file (loaded back as fp32).

    write_extra(directory) adds files (the training state) before the directory is renamed into place.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        (tmp / CONFIG_FILE).write_text(model.config.to_json(), encoding="utf-8")
        weights = {k: v.detach().to("cpu", dtype).contiguous() for k, v in unique_state_dict(model).items()}
        save_file(weights, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
        if tokenizer is not None:
            tokenizer.save(tmp / TOKENIZER_FILE)
        (tmp / METADATA_FILE).write_text(json.dumps(metadata or {}, indent=2, ensure_ascii=False), encoding="utf-8")
        if write_extra is not None:
            write_extra(tmp)
        _swap_into_place(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("saved checkpoint %s", path)
    return path


def copy_checkpoint(source: str | Path, path: str | Path) -> Path:
    """Copy a checkpoint directory as atomically as save_checkpoint writes one."""
    source, path = Path(source), Path(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        _swap_into_place(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _old(path: Path) -> Path:
    return path.with_name(f".{path.name}.old")


def _swap_into_place(tmp: Path, path: Path) -> None:
    """Rename the complete tmp over path. Two renames: a kill between them leaves path missing and
    .NAME.old complete, which recover_interrupted_saves puts right."""
    _readable_like_any_new_file(tmp)
    old = _old(path)
    if path.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)


def recover_interrupted_saves(directory: str | Path) -> None:
    """After a kill, in a folder of checkpoints: bring back each checkpoint caught between the two renames
    of _swap_into_place, and remove half-written temporaries.

    Only for the process that owns the folder (a training run's lock): another one may be saving right now.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return
    for old in directory.glob(".*.old"):
        path = directory / old.name[1 : -len(".old")]
        if not path.exists():
            os.replace(old, path)
            log.info("restored %s, whose replacement was interrupted", path)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for tmp in directory.glob(".*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


def _readable_like_any_new_file(directory: Path) -> None:
    """mkdtemp and mkstemp make owner-only paths; give the checkpoint the modes the umask gives new files."""
    umask = os.umask(0)
    os.umask(umask)
    directory.chmod(0o777 & ~umask)
    for file in directory.iterdir():
        file.chmod(0o666 & ~umask)


def inside_checkpoint(directory: Path, file: Path) -> Path:
    """file, refusing a symlink (or a symlinked directory) that leads out of the checkpoint directory."""
    if file.is_symlink() or file.exists():
        if not file.resolve().is_relative_to(directory.resolve()):
            raise CheckpointError(f"{file}: links outside the checkpoint directory ({file.resolve()}); refused")
    return file


def _read_json(file: Path) -> Any:
    inside_checkpoint(file.parent, file)
    if not file.is_file():
        raise CheckpointError(f"{file}: file is missing")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{file}: not valid JSON ({e})") from e


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load a checkpoint directory; every failure raises CheckpointError naming the file and the problem."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"{path}: no checkpoint directory here")
    config_file, weights_file = path / CONFIG_FILE, inside_checkpoint(path, path / WEIGHTS_FILE)
    config_data = _read_json(config_file)
    try:
        config = ModelConfig.from_dict(config_data)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{config_file}: {e}") from e
    missing_keys = sorted({f.name for f in dataclasses.fields(ModelConfig)} - set(config_data))
    if missing_keys:  # a default would silently stand in for what the weights were trained with
        raise CheckpointError(f"{config_file}: missing ModelConfig keys: {', '.join(missing_keys)}")
    if not weights_file.is_file():
        raise CheckpointError(f"{weights_file}: file is missing")
    try:
        weights = load_file(str(weights_file))
    except Exception as e:  # safetensors raises its own error types for truncated or garbage files
        raise CheckpointError(f"{weights_file}: cannot be read as safetensors ({e})") from e

    model = Transformer(config)
    expected = unique_state_dict(model)
    missing, unexpected = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{weights_file}: does not match {CONFIG_FILE} (missing: {missing[:5]}, unexpected: {unexpected[:5]})"
        )
    for name, tensor in weights.items():
        if tensor.shape != expected[name].shape:
            raise CheckpointError(
                f"{weights_file}: {name} has shape {tuple(tensor.shape)}, config expects {tuple(expected[name].shape)}"
            )
        if tensor.dtype not in WEIGHT_DTYPES:
            raise CheckpointError(f"{weights_file}: {name} has dtype {tensor.dtype}, expected one of "
                                  f"{', '.join(str(d) for d in WEIGHT_DTYPES)}")
    weights = {k: v.float() for k, v in weights.items()}
    model.load_state_dict(weights, strict=False)  # shared weights are filled through their first name
    model.to(device).eval()

    tokenizer = None
    tokenizer_file = inside_checkpoint(path, path / TOKENIZER_FILE)
    if tokenizer_file.is_file():
        try:
            tokenizer = Tokenizer.load(tokenizer_file)
        except ValueError as e:
            raise CheckpointError(f"{tokenizer_file}: {e}") from e
        sizes = (tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
        if sizes[0] > config.src_vocab_size or sizes[1] > config.tgt_vocab_size:  # ids past the embedding table
            raise CheckpointError(f"{tokenizer_file}: vocabularies of {sizes[0]} (source) and {sizes[1]} (target) "
                                  f"tokens do not fit the embeddings of {CONFIG_FILE} ({config.src_vocab_size} and "
                                  f"{config.tgt_vocab_size} rows)")
    metadata = _read_json(path / METADATA_FILE) if (path / METADATA_FILE).exists() else {}
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{path / METADATA_FILE}: expected a JSON object, got {type(metadata).__name__}")
    return Checkpoint(path, config, model, tokenizer, metadata)


def average_checkpoints(paths: list[str | Path], out: str | Path, *, dtype: torch.dtype = torch.float32) -> Path:
    """Average the weights of checkpoints of one model (e.g. the last few of a run) into a new checkpoint.

    The config, tokenizer and metadata are the first checkpoint's; metadata records what was averaged.
    """
    if not paths:
        raise CheckpointError("nothing to average: give at least one checkpoint")
    first = load_checkpoint(paths[0])
    total = {k: v.double() for k, v in unique_state_dict(first.model).items()}
    for path in paths[1:]:
        other = load_checkpoint(path)
        if other.config != first.config:
            raise CheckpointError(f"{path}: its config differs from {paths[0]}'s, so the weights cannot be averaged")
        for k, v in unique_state_dict(other.model).items():
            total[k] += v.double()
    first.model.load_state_dict({k: (v / len(paths)).float() for k, v in total.items()}, strict=False)
    metadata = {**first.metadata, "averaged_from": [str(p) for p in paths]}
    return save_checkpoint(out, first.model, tokenizer=first.tokenizer, metadata=metadata, dtype=dtype)

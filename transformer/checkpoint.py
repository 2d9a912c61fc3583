"""Checkpoints are directories: config.json, model.safetensors, tokenizer.json, metadata.json.

No pickle anywhere: weights are safetensors, everything else JSON. Writes go to a temporary sibling
directory that is renamed into place, so a killed process never leaves a half-written checkpoint.
`load_checkpoint` is the one loader for the CLI, the app and the tests.
"""

from __future__ import annotations

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

from transformer.config import ModelConfig
from transformer.files import write_text_atomic
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "metadata.json"


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


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file beside path, then rename it over path."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False))


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
        _readable_like_any_new_file(tmp)
        old = path.with_name(f".{path.name}.old")
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("saved checkpoint %s", path)
    return path


def _readable_like_any_new_file(directory: Path) -> None:
    """mkdtemp and mkstemp make owner-only paths; give the checkpoint the modes the umask gives new files."""
    umask = os.umask(0)
    os.umask(umask)
    directory.chmod(0o777 & ~umask)
    for file in directory.iterdir():
        file.chmod(0o666 & ~umask)


def _read_json(file: Path) -> Any:
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
    config_file, weights_file = path / CONFIG_FILE, path / WEIGHTS_FILE
    try:
        config = ModelConfig.from_dict(_read_json(config_file))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{config_file}: {e}") from e
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
    weights = {k: v.float() for k, v in weights.items()}
    model.load_state_dict(weights, strict=False)  # shared weights are filled through their first name
    model.to(device).eval()

    tokenizer = None
    if (path / TOKENIZER_FILE).is_file():
        try:
            tokenizer = Tokenizer.load(path / TOKENIZER_FILE)
        except ValueError as e:
            raise CheckpointError(f"{path / TOKENIZER_FILE}: {e}") from e
    metadata = _read_json(path / METADATA_FILE) if (path / METADATA_FILE).exists() else {}
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

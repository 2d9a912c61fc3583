"""Checkpoints are directories: config.json, model.safetensors, tokenizer.json, metadata.json, checksums.json.

No pickle anywhere: weights are safetensors, everything else JSON, and nothing else is ever read. Writes go
to a temporary sibling directory that is renamed into place, so a killed process never leaves a
half-written checkpoint (`recover_interrupted_saves` finishes a swap that a kill cut in two).
`load_checkpoint` is the one loader for the CLI, the app and the tests; whatever is wrong with a checkpoint
(truncated, not safetensors, a config of the wrong types or out of range, shapes or dtypes that do not match
its config, NaN or infinite weights, a tokenizer of another size, a file too large, not a regular file, or a
symlink out of the directory, a checksum that does not match) raises one CheckpointError naming the file and
the problem, and it is found before the model is built.

checksums.json holds the SHA-256 of every file save_checkpoint writes except metadata.json (descriptive, edited
by hand; `transformer.model.metadata` checks its types instead), and not of documentation beside them (*.md). A
checkpoint written before checksums existed has none and loads as before; `write_checksums(directory)` adds them
without changing any other file (the shipped models have them so).
"""

from __future__ import annotations

import dataclasses
import hashlib
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

from transformer.data.tokenizer import TokenizerLike, load_tokenizer
from transformer.devices import inference_device
from transformer.model.checkpoint_files import (  # noqa: F401 (the names this module has always had)
    CHECKSUMS_FILE,
    CONFIG_FILE,
    MAX_JSON_BYTES,
    MAX_TOKENIZER_BYTES,
    METADATA_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
)
from transformer.model.config import ADDED_KEYS, ModelConfig
from transformer.model.layers import Transformer
from transformer.model.metadata import metadata_problem

log = logging.getLogger(__name__)

WEIGHT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # what save_checkpoint writes
FINITE_CHUNK = 1 << 22  # elements checked at a time: isfinite's temporaries stay small beside a 1 GB embedding


class CheckpointError(Exception):
    """A checkpoint is missing, truncated, corrupt, or does not match its config."""


@dataclass
class Checkpoint:
    path: Path
    config: ModelConfig
    model: Transformer  # in eval mode, on the requested device, fp32
    tokenizer: TokenizerLike | None  # ours or an imported one; its `specials` are the ids decoding uses
    metadata: dict[str, Any] = field(default_factory=dict)


def unique_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each tensor once: tied or shared weights appear under their first name. Tensors are told
    apart by identity (a tied weight is one Parameter), which works on the meta device too, where no tensor has
    data."""
    seen, state = set(), {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            state[name] = tensor.detach()
    return state


def save_checkpoint(
    path: str | Path,
    model: Transformer,
    *,
    tokenizer: TokenizerLike | None = None,
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
        write_checksums(tmp)
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


def regular_file(file: Path, max_bytes: int | None = None) -> Path:
    """file, or CheckpointError when it is missing, not a regular file (a FIFO would block the reader), or larger
    than max_bytes (refused by its size, before a byte is read)."""
    inside_checkpoint(file.parent, file)
    if not file.exists():
        raise CheckpointError(f"{file}: file is missing")
    if not file.is_file():
        raise CheckpointError(f"{file}: not a regular file; refused")
    size = file.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise CheckpointError(f"{file}: {size:,} bytes, more than the {max_bytes:,} a checkpoint's file may have; "
                              "refused")
    return file


def _read_json(file: Path) -> Any:
    regular_file(file, MAX_JSON_BYTES.get(file.name))
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{file}: not valid JSON ({e})") from e
    except RecursionError:
        raise CheckpointError(f"{file}: JSON nested too deeply; refused") from None


# ----------------------------------------------------------------------------- checksums


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_checksums(directory: Path) -> None:
    """checksums.json: the SHA-256 of every file in directory but metadata.json, documentation (*.md) and itself."""
    files = {f.name: _sha256(f) for f in sorted(Path(directory).iterdir())
             if f.is_file() and f.name not in (METADATA_FILE, CHECKSUMS_FILE) and f.suffix != ".md"}
    (Path(directory) / CHECKSUMS_FILE).write_text(json.dumps({"sha256": files}, indent=2), encoding="utf-8")


def read_checksums(directory: Path) -> dict[str, str] | None:
    """The recorded SHA-256 per file name, or None for a checkpoint written before checksums existed."""
    if not (directory / CHECKSUMS_FILE).exists() and not (directory / CHECKSUMS_FILE).is_symlink():
        return None
    data = _read_json(directory / CHECKSUMS_FILE)
    sums = data.get("sha256") if isinstance(data, dict) else None
    if not isinstance(sums, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in sums.items()):
        raise CheckpointError(f"{directory / CHECKSUMS_FILE}: expected {{\"sha256\": {{file: digest}}}}")
    return sums


def verify_checksum(file: Path, sums: dict[str, str] | None) -> None:
    """CheckpointError when file's SHA-256 differs from what its checkpoint recorded (a flipped bit, a file
    swapped from another model), or when a checkpoint with checksums has none for it."""
    if sums is None:
        return
    if file.name not in sums:
        raise CheckpointError(f"{file}: {CHECKSUMS_FILE} has no checksum for it; refused")
    if _sha256(file) != sums[file.name]:
        raise CheckpointError(f"{file}: its SHA-256 differs from the one in {CHECKSUMS_FILE}: the file is damaged "
                              "or comes from another checkpoint")


def minimum_parameters(config: ModelConfig) -> int:
    """A lower bound on the parameters config describes (its weight matrices and embeddings, without biases and
    norms): more than the weights file holds means the config does not describe those weights."""
    d, f = config.d_model, config.d_ff
    embeddings = config.src_vocab_size * d + (0 if config.share_embeddings else config.tgt_vocab_size * d)
    output = 0 if config.tie_output else config.tgt_vocab_size * d
    return (embeddings + output + config.n_encoder_layers * (4 * d * d + 2 * d * f)
            + config.n_decoder_layers * (8 * d * d + 2 * d * f))


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load a checkpoint directory; every failure raises CheckpointError naming the file and the problem.

    Everything is checked before the model is built: the config's types and ranges, its size against the
    weights, each file's size and checksum, and every weight finite.
    """
    path, device = Path(path), inference_device(device)  # ValueError for a device this machine lacks
    if not path.is_dir():
        raise CheckpointError(f"{path}: no checkpoint directory here")
    sums = read_checksums(path)
    config_file, weights_file = path / CONFIG_FILE, inside_checkpoint(path, path / WEIGHTS_FILE)
    verify_checksum(regular_file(config_file, MAX_JSON_BYTES[CONFIG_FILE]), sums)
    config_data = _read_json(config_file)
    try:
        config = ModelConfig.from_dict(config_data)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{config_file}: {e}") from e
    missing_keys = sorted({f.name for f in dataclasses.fields(ModelConfig)} - set(config_data) - set(ADDED_KEYS))
    if missing_keys:  # a default would silently stand in for what the weights were trained with
        raise CheckpointError(f"{config_file}: missing ModelConfig keys: {', '.join(missing_keys)}")
    tokenizer = None
    tokenizer_file = inside_checkpoint(path, path / TOKENIZER_FILE)
    if tokenizer_file.exists() or tokenizer_file.is_symlink():
        regular_file(tokenizer_file, MAX_TOKENIZER_BYTES)
        verify_checksum(tokenizer_file, sums)
        try:
            tokenizer = load_tokenizer(tokenizer_file)
        except ValueError as e:
            raise CheckpointError(f"{tokenizer_file}: {e}") from e
        sizes = (tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
        if sizes != (config.src_vocab_size, config.tgt_vocab_size):  # ids past the table, or rows never used
            raise CheckpointError(f"{tokenizer_file}: vocabularies of {sizes[0]} (source) and {sizes[1]} (target) "
                                  f"tokens do not match the embeddings of {CONFIG_FILE} ({config.src_vocab_size} and "
                                  f"{config.tgt_vocab_size} rows): is it another model's tokenizer?")
        if tokenizer.specials.pad != config.pad_id:  # the model would mask another id than the batches pad with
            raise CheckpointError(f"{tokenizer_file}: its pad id {tokenizer.specials.pad} is not the pad_id "
                                  f"{config.pad_id} of {CONFIG_FILE}")
    metadata_file = path / METADATA_FILE
    metadata = _read_json(metadata_file) if metadata_file.exists() or metadata_file.is_symlink() else {}
    if (problem := metadata_problem(metadata)) is not None:
        raise CheckpointError(f"{metadata_file}: {problem}")
    regular_file(weights_file)
    verify_checksum(weights_file, sums)
    try:
        weights = load_file(str(weights_file))
    except Exception as e:  # safetensors raises its own error types for truncated or garbage files
        raise CheckpointError(f"{weights_file}: cannot be read as safetensors ({e})") from e
    held, needed = sum(t.numel() for t in weights.values()), minimum_parameters(config)
    if needed > held:  # before building: 10^9 layers would fill the memory first
        raise CheckpointError(f"{config_file}: describes a model of at least {needed:,} parameters, but {WEIGHTS_FILE} "
                              f"holds {held:,}")
    for name, tensor in weights.items():
        if tensor.dtype not in WEIGHT_DTYPES:
            raise CheckpointError(f"{weights_file}: {name} has dtype {tensor.dtype}, expected one of "
                                  f"{', '.join(str(d) for d in WEIGHT_DTYPES)}")
        if not all(torch.isfinite(part).all() for part in tensor.reshape(-1).split(FINITE_CHUNK)):
            raise CheckpointError(f"{weights_file}: {name} holds NaN or infinite values; refused")

    with torch.device("meta"):  # the shapes only: no memory, no random initialisation
        expected = unique_state_dict(Transformer(config))
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
    for name in list(weights):  # one tensor at a time: a float16 file never stands beside all of its float32 copy
        weights[name] = weights[name].float()
    # the model holds the loaded tensors themselves (shared weights through their first name): the weights once
    model = Transformer.from_weights(config, weights)
    model.to(device).eval()

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

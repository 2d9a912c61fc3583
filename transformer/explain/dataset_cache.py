"""The on-disk cache of a split's table (`transformer.explain.dataset`): this module is the format's one owner.

One safetensors file per model and split, named by a digest of its key (the checkpoint's path and weights' time
stamp, the split, the lenses): the arrays (token states, head statistics' sums, alignment counts) as tensors,
the rows and the key as JSON in the file's metadata. No pickle. A write goes to a temporary file beside the cache,
is flushed to disk and renamed over it, so a reader sees the old file or the new one, never half of one, even when
the writer is killed mid-write (SIGKILL, a power cut); the temporary files such a writer leaves are never read and
are removed by a later write once STALE_TEMP_SECONDS old. A computation that stopped (its time cap, a stop, a kill)
leaves the rows of its last whole write; the next one reads them and goes on (resumable).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load, save
from torch import Tensor

FORMAT = "attention-explorer dataset cache 1"
MAX_CACHE_BYTES = 512 * 2**20  # a 2,000-sentence split of a large model stays far below
STALE_TEMP_SECONDS = 3600.0  # a temporary file this old was left by a killed writer (a write takes seconds)


class DatasetCacheError(ValueError):
    """A cache file exists but cannot be used; the message says why (the caller recomputes)."""


@dataclass(frozen=True)
class CachedRows:
    """What a cache file holds: the rows done so far (in the split's order) and the arrays that go with them."""

    key: dict
    rows: list[dict]
    arrays: dict[str, Tensor]


def cache_path(folder: Path, key: dict) -> Path:
    digest = hashlib.blake2s(json.dumps(key, sort_keys=True).encode(), digest_size=10).hexdigest()
    return Path(folder) / f"dataset-{digest}.safetensors"


def read_cache(path: Path, key: dict) -> CachedRows | None:
    """The cached rows for key, None when there is no file; DatasetCacheError when the file is unusable
    (truncated, not safetensors, another format or key, arrays that do not match the rows)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        if not path.is_file() or path.stat().st_size > MAX_CACHE_BYTES:
            raise DatasetCacheError(f"{path} is not a regular file of at most {MAX_CACHE_BYTES // 2**20} MB")
        data = path.read_bytes()
    except OSError as e:
        raise DatasetCacheError(f"{path} cannot be read ({e})") from e
    try:
        arrays = load(data)
        header_len = int.from_bytes(data[:8], "little")
        metadata = json.loads(data[8 : 8 + header_len]).get("__metadata__") or {}
    except Exception as e:  # safetensors raises its own error types for truncated or garbage files
        raise DatasetCacheError(f"{path} is not a dataset cache ({type(e).__name__}: {e})") from e
    if metadata.get("format") != FORMAT:
        raise DatasetCacheError(f"{path} is not a dataset cache of this version")
    try:
        stored_key, rows = json.loads(metadata["key"]), json.loads(metadata["rows"])
    except (KeyError, json.JSONDecodeError) as e:
        raise DatasetCacheError(f"{path}: its rows cannot be read ({e})") from e
    if stored_key != key:
        raise DatasetCacheError(f"{path} belongs to another model or split")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DatasetCacheError(f"{path}: its rows are not a list of records")
    for name, array in arrays.items():
        if name.startswith("sentence.") and array.shape[:1] != (len(rows),):
            raise DatasetCacheError(f"{path}: array {name} has {array.shape[0]} rows for {len(rows)} sentences")
    return CachedRows(stored_key, rows, arrays)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def write_cache(path: Path, cached: CachedRows) -> None:
    """Write atomically: a temporary file beside path, flushed to disk, renamed over it (then the folder flushed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"format": FORMAT, "key": json.dumps(cached.key, sort_keys=True),
                "rows": json.dumps(cached.rows, ensure_ascii=False)}
    data = save({k: v.contiguous() for k, v in cached.arrays.items()}, metadata=metadata)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # else a crash after the rename can leave the new name on an empty file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    _remove_stale_temps(path)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a folder that cannot be opened (another OS): the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temps(path: Path) -> None:
    """Remove the temporary files of path that a killed writer left (old enough that no writer still fills them)."""
    now = time.time()
    for temp in path.parent.glob(f"{_temp_prefix(path)}*.tmp"):
        try:
            if now - temp.stat().st_mtime > STALE_TEMP_SECONDS:
                temp.unlink()
        except OSError:  # removed meanwhile by another server sharing the cache
            pass


def concatenate(before: dict[str, Tensor], after: dict[str, Tensor]) -> dict[str, Tensor]:
    """The arrays of two runs of rows, one after the other (along the first dimension)."""
    if not before:
        return dict(after)
    return {name: torch.cat([before[name], after[name]]) for name in before}

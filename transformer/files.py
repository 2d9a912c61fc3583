"""Atomic file writes (a crash mid-write leaves the previous file intact), and reads that never block on a FIFO."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write text to a temporary file beside path, then rename it over path.

    The file gets the mode any new file gets under the umask (0644 usually), as checkpoints do, not
    mkstemp's owner-only 0600: run.json, status.json and tokenizer.json are read by other users too.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file beside path, then rename it over path."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False))


def read_small_text(path: str | Path, max_bytes: int | None = None) -> str | None:
    """The text of a regular file of at most max_bytes, or None: missing, not a regular file (opening a FIFO would
    wait for a writer forever), larger than max_bytes, or unreadable. Undecodable bytes become U+FFFD."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or (max_bytes is not None and info.st_size > max_bytes):
            return None
        # O_NONBLOCK: should a FIFO take the file's place after the check, opening it does not wait either
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except OSError:
        return None
    if max_bytes is not None and len(data) > max_bytes:
        return None
    return data.decode("utf-8", errors="replace")


def read_json_object(path: str | Path, max_bytes: int = 1 << 20) -> dict[str, Any]:
    """A small JSON object from a file, or {} when it is missing, not a regular file, too large, half-written,
    nested too deeply or not an object."""
    text = read_small_text(path, max_bytes)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}

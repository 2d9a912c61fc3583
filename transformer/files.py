"""Atomic file writes: a crash mid-write leaves the previous file intact."""

from __future__ import annotations

import json
import os
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

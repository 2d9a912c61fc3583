"""A checkpoint directory's file names, the sizes read from it, and which shipped checkpoint comes first: what
finding and listing checkpoints needs, without torch (`transformer.model.checkpoint` reads and writes them)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "metadata.json"
CHECKSUMS_FILE = "checksums.json"
# Largest files read: far above what a real checkpoint holds (a shipped tokenizer is 0.4 MB), so that a hostile
# file is refused by its size before it is parsed (a 200 MB tokenizer took 59 s and 3.3 GB to refuse otherwise).
MAX_JSON_BYTES = {CONFIG_FILE: 64 * 1024, METADATA_FILE: 1024 * 1024, CHECKSUMS_FILE: 64 * 1024}
MAX_TOKENIZER_BYTES = 32 * 1024 * 1024
DEFAULT_MODEL = "en-fr-bible"  # the model used when none is named, wherever others ship beside it


def checkpoint_order(paths: Iterable[Path]) -> list[Path]:
    """DEFAULT_MODEL first, then the others by name."""
    return sorted(paths, key=lambda p: (p.name != DEFAULT_MODEL, p.name))

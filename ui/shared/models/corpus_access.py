"""Which files a page may read because a checkpoint's metadata names them as its corpus. No streamlit.

A checkpoint's `metadata.corpus.path` is only text in a file anyone can edit: followed blindly, it would make the
Translate page read any file on the machine and list its lines as example sentences. A tsv or debian corpus (a mix's
part included) is read only from the data folder (ui.shared.training.jobs.data_dir), the runs folder (an uploaded
corpus) or checkpoints/, after resolving `..` and links; EXPLORER_ANY_TSV_PATH=1 (a trusted single user) lifts this, as
it does for the Train page's TSV path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ui.shared.models.catalog import checkpoints_dir, runs_dir
from ui.shared.training.jobs import any_tsv_path, data_dir


def readable_path(path: object) -> bool:
    """True for a path (relative ones from the working directory, as the loaders read them) inside a folder the
    explorer may read corpora from, links and `..` resolved."""
    if any_tsv_path():
        return True
    if not isinstance(path, str) or not path or "\x00" in path:
        return False
    target = Path(os.path.realpath(path))
    return any(target.is_relative_to(Path(os.path.realpath(root))) for root in (data_dir(), runs_dir(),
                                                                                 checkpoints_dir()))


def _part_readable(spec: Any) -> bool:
    return isinstance(spec, dict) and (spec.get("path") is None or readable_path(spec.get("path")))


def corpus_readable(corpus: dict[str, Any]) -> bool:
    """True when every file the recorded corpus (each part of a mix) names lies where a page may read it."""
    parts = corpus.get("parts") or []
    return _part_readable(corpus) and all(isinstance(p, dict) and _part_readable(p.get("corpus")) for p in parts)


def readable_parts(corpus: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded corpus without the parts of a mix that a page may not read (None when nothing is left)."""
    if corpus.get("kind") != "mix":
        return corpus if corpus_readable(corpus) else None
    parts = [p for p in corpus.get("parts") or [] if isinstance(p, dict) and _part_readable(p.get("corpus"))]
    return {**corpus, "parts": parts} if parts else None

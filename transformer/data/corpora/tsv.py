"""Sentence pairs from a local tab-separated file, split at random (deterministic from a seed)."""

from __future__ import annotations

from pathlib import Path

from transformer.data.corpora.base import CorpusError, ParallelCorpus, normalize_text, random_split

DEBIAN_COLUMNS = 4  # split<TAB>source<TAB>english<TAB>target (transformer.data.corpora.debian)


def load_tsv(path: str | Path, src: str = "en", tgt: str = "fr", dev_fraction: float = 0.02,
             test_fraction: float = 0.02, seed: int = 0) -> ParallelCorpus:
    """`src<TAB>tgt` lines; a third column (Tatoeba/manythings attribution) is ignored; a byte-order mark is not
    part of the first sentence."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError as exc:
        raise CorpusError(f"corpus file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read corpus file {path}: {exc}") from exc
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise CorpusError(f"{path}:{number}: expected 2 or 3 tab-separated columns, got {len(fields)}")
        pairs.append((normalize_text(fields[0]), normalize_text(fields[1])))
    splits = random_split(pairs, dev_fraction, test_fraction, seed)
    return ParallelCorpus(src, tgt, **splits, description=f"TSV: {path.name} ({src} -> {tgt})")


def tsv_kind(path: str | Path) -> str:
    """"debian" for a file of the Debian corpus's four columns, else "tsv": the corpus kind that reads it."""
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            first = next((line for line in lines if line.strip()), "")
    except OSError as exc:
        raise CorpusError(f"cannot read corpus file {path}: {exc}") from exc
    return "debian" if len(first.rstrip("\r\n").split("\t")) == DEBIAN_COLUMNS else "tsv"

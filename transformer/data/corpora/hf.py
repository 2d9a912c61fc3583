"""Sentence pairs from a Hugging Face dataset: a Hub name, a local json/jsonl/csv file or a saved dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from transformer.data.corpora.base import CorpusError, Pair, ParallelCorpus, normalize_text, random_split


class HFSource(Protocol):
    """The fields of transformer.data.spec.CorpusSpec that an hf corpus reads (the spec sits above its loaders)."""

    src: str
    tgt: str
    path: str | None
    hf_name: str | None
    hf_config: str | None
    src_field: str | None
    tgt_field: str | None
    dev_fraction: float
    test_fraction: float
    seed: int


def _open_hf(spec: HFSource):
    import datasets  # slow to import; only hf corpora need it

    source = spec.path or spec.hf_name
    local = Path(source)
    try:
        if local.is_dir():
            return datasets.load_from_disk(str(local))
        if local.suffix in (".json", ".jsonl", ".csv"):
            if not local.is_file():
                raise CorpusError(f"corpus file not found: {local}")
            builder = "csv" if local.suffix == ".csv" else "json"
            return datasets.load_dataset(builder, data_files=str(local))
        if spec.path:
            raise CorpusError(f"{local} is neither a saved dataset directory nor a .json/.jsonl/.csv file")
        return datasets.load_dataset(spec.hf_name, spec.hf_config)
    except CorpusError:
        raise
    except Exception as exc:  # datasets raises many unrelated types for one user mistake
        raise CorpusError(f"cannot load Hugging Face dataset {source!r}: {exc}") from exc


def _hf_pairs(rows, spec: HFSource, split: str) -> list[Pair]:
    columns = rows.column_names
    if spec.src_field is None:
        if "translation" not in columns:
            raise CorpusError(f"split {split!r} has no `translation` column (columns: {', '.join(columns)}); "
                              "set src_field and tgt_field")
        pairs = []
        for row in rows["translation"]:
            if spec.src not in row or spec.tgt not in row:
                raise CorpusError(f"translation entries have languages {sorted(row)}, "
                                  f"not {spec.src!r} and {spec.tgt!r}")
            pairs.append((row[spec.src], row[spec.tgt]))
    else:
        missing = [f for f in (spec.src_field, spec.tgt_field) if f not in columns]
        if missing:
            raise CorpusError(f"split {split!r} lacks fields {missing} (columns: {', '.join(columns)})")
        pairs = list(zip(rows[spec.src_field], rows[spec.tgt_field]))
    return [(normalize_text(str(s or "")), normalize_text(str(t or ""))) for s, t in pairs]


def load_hf(spec: HFSource) -> ParallelCorpus:
    """The dataset's train/validation/test splits where present, a random split of train otherwise."""
    import datasets

    data = _open_hf(spec)
    if isinstance(data, datasets.Dataset):
        data = datasets.DatasetDict({"train": data})
    if "train" not in data:
        raise CorpusError(f"dataset has no train split (splits: {', '.join(data)})")
    given = {"dev": next((s for s in ("validation", "dev", "valid") if s in data), None),
             "test": "test" if "test" in data else None}
    train = _hf_pairs(data["train"], spec, "train")
    carved = random_split(train, 0.0 if given["dev"] else spec.dev_fraction,
                          0.0 if given["test"] else spec.test_fraction, spec.seed)
    splits = {name: _hf_pairs(data[given[name]], spec, given[name]) if given[name] else carved[name]
              for name in ("dev", "test")}
    name = spec.hf_name or Path(spec.path).name
    config = f"/{spec.hf_config}" if spec.hf_config else ""
    return ParallelCorpus(spec.src, spec.tgt, carved["train"], splits["dev"], splits["test"],
                          description=f"Hugging Face: {name}{config} ({spec.src} -> {spec.tgt})")

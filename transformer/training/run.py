"""A training run on disk: its spec (run.json), its checkpoints, and the one error type a run stops with.

The run folder's files are named by `transformer.runs`; a run's checkpoints are written in the format of
`transformer.model.checkpoint` (plus the optimizer state of `transformer.training.recipe` in `latest`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformer.data.spec import CorpusSpec
from transformer.data.tokenizer import Tokenizer
from transformer.files import create_json
from transformer.model.checkpoint import (
    CONFIG_FILE,
    METADATA_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    copy_checkpoint,
    read_checksums,
    save_checkpoint,
    verify_checksum,
)
from transformer.model.config import strict_from_dict
from transformer.model.layers import Transformer
from transformer.runs import RunFiles, read_run_json, run_name_problem
from transformer.training.recipe import (
    OPTIMIZER_FILE,
    TRAINER_STATE_FILE,
    TokenizerSettings,
    TrainConfig,
    TrainState,
    save_training_state,
)

log = logging.getLogger(__name__)


class TrainingError(RuntimeError):
    """Training cannot go on; the message says why and what was kept."""


@dataclass(frozen=True)
class RunSpec:
    """Everything run.json holds: enough to start the run again or resume it."""

    corpus: CorpusSpec
    tokenizer: TokenizerSettings
    model: dict[str, Any]  # ModelConfig fields except vocabulary sizes (set from the tokenizer)
    train: TrainConfig
    preset: str | None = None
    # A trained checkpoint to start from (fine-tuning): its weights, architecture and vocabulary replace
    # `model` and `tokenizer`, which then only record what the run was asked for.
    init_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"corpus": self.corpus.to_dict(), "tokenizer": dataclasses.asdict(self.tokenizer),
                "model": dict(self.model), "train": dataclasses.asdict(self.train), "preset": self.preset}
        return data | ({"init_from": self.init_from} if self.init_from else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(CorpusSpec.from_dict(data["corpus"]), strict_from_dict(TokenizerSettings, data["tokenizer"]),
                   data["model"], strict_from_dict(TrainConfig, data["train"]), data.get("preset"),
                   data.get("init_from"))


def create_run(root: str | Path, spec: RunSpec) -> Path:
    """Make a new run directory holding run.json; refuses to overwrite an existing run."""
    files = RunFiles(Path(root))
    if problem := run_name_problem(files.root.name):
        raise TrainingError(f"--out {root}: {problem}; choose another name")
    if files.root.is_symlink() or (files.root.exists() and not files.root.is_dir()):
        raise TrainingError(f"--out {root}: a file or link of that name is in the way; choose another name")
    taken = TrainingError(f"{root} already holds a run; resume it with --resume, or choose another --out")
    if files.run_json.exists():
        raise taken
    try:
        files.root.mkdir(parents=True, exist_ok=True)
        created = create_json(files.run_json, spec.to_dict())  # of two runs started at once, one gets the folder
    except OSError as e:
        raise TrainingError(f"--out {root}: the run folder cannot be made there ({e.strerror})") from e
    if not created:
        raise taken
    return files.root


def load_run_spec(root: str | Path) -> RunSpec:
    try:
        data = read_run_json(root)
    except (OSError, ValueError) as e:
        raise TrainingError(f"{root}: run.json cannot be read ({e})") from e
    if data is None:
        raise TrainingError(f"{root} is not a run directory (no run.json)")
    return RunSpec.from_dict(data)


@contextlib.contextmanager
def writing(files: RunFiles, what: str | Path) -> Iterator[None]:
    """A failed write (disk full, read-only folder) becomes a TrainingError that says what was kept."""
    try:
        yield
    except OSError as e:
        latest = files.checkpoint("latest")
        kept = f"the previous checkpoint {latest} is intact" if latest.is_dir() else "no checkpoint was saved yet"
        raise TrainingError(f"could not write {what}: {e}; stopped, and {kept}") from e


class RunCheckpoints:
    """A run's checkpoints: `latest` with the optimizer (what --resume continues), `best` by dev BLEU, and a copy
    of each saved step, the last keep_last of them kept. Rank 0 writes them."""

    def __init__(self, files: RunFiles, model: Transformer, tokenizer: Tokenizer, meta: dict[str, Any], keep_last: int):
        self.files, self.keep_last = files, keep_last
        self.model, self.tokenizer, self.meta = model, tokenizer, meta

    def write(self, name: str, state: TrainState, optimizer=None) -> Path:
        metadata = {**self.meta, "step": state.step, "epoch": state.epoch, "elapsed": state.elapsed,
                    "best_dev_bleu": state.best_bleu, "run": str(self.files.root)}
        saved = dataclasses.replace(state)  # as it is now, not as the loop goes on
        extra = None if optimizer is None else (lambda d: save_training_state(d, optimizer, saved))
        with writing(self.files, f"the checkpoint {self.files.checkpoint(name)}"):
            return save_checkpoint(self.files.checkpoint(name), self.model, tokenizer=self.tokenizer,
                                   metadata=metadata, write_extra=extra)

    def save_latest(self, optimizer, state: TrainState) -> None:
        path = self.write("latest", state, optimizer)
        if self.keep_last > 0:
            step_path = self.files.checkpoint(f"step-{state.step:07d}")
            with writing(self.files, f"the checkpoint {step_path}"):
                copy_checkpoint(path, step_path)
            for old in sorted(self.files.checkpoints.glob("step-*"))[: -self.keep_last]:
                shutil.rmtree(old, ignore_errors=True)


# ----------------------------------------------------------------------------- where a resume starts


def checkpoint_problem(path: Path) -> str | None:
    """Why a run's checkpoint cannot be resumed from (a file missing, a checksum that differs), or None."""
    for name in (CONFIG_FILE, WEIGHTS_FILE, TRAINER_STATE_FILE, OPTIMIZER_FILE):
        if not (path / name).is_file():
            return f"{name} is missing"
    try:
        sums = read_checksums(path)
        for name in sums or ():
            verify_checksum(path / name, sums)
    except (CheckpointError, OSError) as e:
        return str(e)
    return None


def resume_point(files: RunFiles) -> Path | None:
    """The checkpoint a run continues from: `latest` when it is intact, else the newest intact step-N (a warning
    says so). None for a run that has saved no checkpoint yet, which starts at step 0 (what a killed run logged
    before its first save is logged again). A run with checkpoints but none intact to resume from is refused
    (TrainingError): starting again would drop its metric records and let a worse model overwrite `best`."""
    latest = files.checkpoint("latest")
    steps = sorted(files.checkpoints.glob("step-*"), reverse=True) if files.checkpoints.is_dir() else []
    problems = []
    for path in [latest, *steps]:
        if not path.is_dir():
            continue
        problem = checkpoint_problem(path)
        if problem is None:
            if path != latest:
                log.warning("%s: %s; resuming from %s, the newest intact checkpoint", latest,
                            problems[0] if problems else "missing", path.name)
            return path
        problems.append(f"{path.name}: {problem}")
    if not problems and not files.checkpoint("best").is_dir():
        return None
    found = "; ".join(problems) if problems else "checkpoints/latest is missing and there is no step-N checkpoint"
    raise TrainingError(f"{files.root}: cannot resume: {found}. Starting again from step 0 would drop the run's "
                        "metrics and overwrite its best checkpoint; train into a new run (--out) instead")


def best_saved_score(files: RunFiles) -> float | None:
    """The dev BLEU recorded in the run's `best` checkpoint, or None: a resume never replaces it by a worse one."""
    try:
        score = json.loads((files.checkpoint("best") / METADATA_FILE).read_text(encoding="utf-8")).get("best_dev_bleu")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    ok = isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
    return float(score) if ok else None

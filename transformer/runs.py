"""The files of a run directory: the one module that writes them and the one that reads them.

A run is a directory:
    run.json          corpus, tokenizer, model and training configs (what `--resume` needs)
    tokenizer.json    trained once at the start
    metrics.jsonl     one JSON object per log or eval point, each step once (a resume drops what the
                      checkpoint it resumes from had not yet seen)
    status.json       starting / running / finished / stopped / failed, with the step and any error
    train.log         the CLI's log
    trainer.lock      flock-ed by the live training process; the kernel frees it when that process dies
    checkpoints/      latest/, best/ and step-NNNNNNN/ (the last keep_last of them)
    probes/           step-NNNNNNN.safetensors + .json: probe translations and all their attention maps
    tb/               TensorBoard event files (transformer.training.tensorboard_log): `tensorboard --logdir runs`

Readers never fail on a file a writer was killed in the middle of: a torn last line of metrics.jsonl is
skipped, a torn status.json reads as {} (it is written atomically, so that only happens to foreign files),
and a probe counts once both its files are complete (the tensors are renamed into place before the JSON).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer.files import (
    create_json,
    read_json_object,
    read_small_text,
    write_json_atomic,
    write_text_atomic,
)

if TYPE_CHECKING:
    import torch

PROBE_FAMILIES = ("enc_self", "dec_self", "cross")


@dataclass(frozen=True)
class RunFiles:
    root: Path

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def tokenizer(self) -> Path:
        return self.root / "tokenizer.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def status(self) -> Path:
        return self.root / "status.json"

    @property
    def log(self) -> Path:
        return self.root / "train.log"

    @property
    def lock(self) -> Path:
        return self.root / "trainer.lock"

    @property
    def launch(self) -> Path:
        """What the app's Train page started (pid, time, command): written before the trainer's first file."""
        return self.root / "launch.json"

    @property
    def process_log(self) -> Path:
        """The started process's own stdout and stderr (tracebacks before the trainer's log opens)."""
        return self.root / "process.log"

    @property
    def uploaded_corpus(self) -> Path:
        """A corpus uploaded on the Train page, saved in the run so that a resume finds it."""
        return self.root / "corpus.tsv"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def probes(self) -> Path:
        return self.root / "probes"

    @property
    def tensorboard(self) -> Path:
        return self.root / "tb"

    def checkpoint(self, name: str) -> Path:
        return self.checkpoints / name

    def probe_base(self, step: int) -> Path:
        """probes/step-NNNNNNN, without suffix: .json and .safetensors are beside each other."""
        return self.probes / f"step-{step:07d}"


def _files(run: str | Path | RunFiles) -> RunFiles:
    return run if isinstance(run, RunFiles) else RunFiles(Path(run))


# ----------------------------------------------------------------------------- JSON

def read_run_json(run: str | Path | RunFiles) -> dict[str, Any] | None:
    """run.json as a dict, or None when the directory holds no run."""
    path = _files(run).run_json
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- metrics.jsonl

def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All complete records of a metrics.jsonl file (or of a run directory's); torn lines are skipped."""
    path = Path(path)
    if path.is_dir():
        path = RunFiles(path).metrics
    text = read_small_text(path)  # a FIFO in its place must not block a page
    if text is None:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def append_metrics(path: Path, record: dict[str, Any]) -> None:
    line = json.dumps(record) + "\n"
    with path.open("a+b") as f:
        # a writer killed mid-line left no newline: start on a fresh line so that only the torn one is lost
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                line = "\n" + line
        f.write(line.encode("utf-8"))


def truncate_metrics(path: Path, last_step: int) -> int:
    """Keep the complete records up to last_step (a resume point); returns how many records were dropped.

    After a kill the log runs ahead of the latest checkpoint; the resumed run logs those steps again.
    """
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    records = read_metrics(path)
    kept = [r for r in records if int(r.get("step", 0)) <= last_step]
    if len(kept) < len(lines):
        write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in kept))
    return len(records) - len(kept)


# ----------------------------------------------------------------------------- status.json

def write_status(files: RunFiles, state: str, **fields: Any) -> None:
    """Atomically; in a folder that became read-only (no new file can be made there) the existing status.json is
    overwritten in place, so that a run stopped by the folder still says how it ended rather than "running"."""
    data = {"state": state, "pid": os.getpid(), "updated": time.time(), **fields}
    try:
        write_json_atomic(files.status, data)
    except OSError:
        if not files.status.is_file() or files.status.is_symlink():
            raise
        with open(files.status, "r+", encoding="utf-8") as f:  # not atomic: a reader may see it torn, and skips it
            f.write(json.dumps(data, indent=2, ensure_ascii=False))
            f.truncate()


def read_status(path: str | Path) -> dict[str, Any]:
    """status.json (of a file or a run directory) as a dict; {} when missing, torn, not an object, not a regular
    file (a FIFO would block every page that lists runs) or over 1 MB."""
    path = Path(path)
    if path.is_dir():
        path = RunFiles(path).status
    return read_json_object(path)


# ----------------------------------------------------------------------------- claiming a new run

class RunTakenError(ValueError):
    """The run folder holds a run already, or another starter claimed it first."""


def claim_run(root: str | Path) -> RunFiles:
    """A new run folder claimed for this process, before anything starts in it: launch.json is created holding
    this process's pid, exclusively, so that of two starters at once exactly one gets the folder and the other a
    RunTakenError. The starter then rewrites launch.json with its training process (write_launch), or gives the
    claim back (release_claim) when that process could not start."""
    files = _files(root)
    files.root.mkdir(parents=True, exist_ok=True)
    if files.run_json.exists() or not create_json(files.launch, {"pid": os.getpid(), "started": time.time()}):
        raise RunTakenError(f"a run named {files.root.name!r} already exists or is being started: choose another "
                            "name, or resume it")
    return files


def write_launch(files: RunFiles, pid: int, command: list[str]) -> None:
    """launch.json: what the starter started in a claimed run folder."""
    write_json_atomic(files.launch, {"pid": pid, "started": time.time(), "command": command})


def release_claim(files: RunFiles) -> None:
    files.launch.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- run folder names

# Names Windows reserves for devices, whatever the extension: a runs folder copied there could not hold them.
WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                              *(f"lpt{i}" for i in range(10)), "com¹", "com²", "com³", "lpt¹", "lpt²", "lpt³"})


def run_name_problem(name: str) -> str | None:
    """Why name cannot be a run folder's name on every system (Windows included), or None."""
    if name.split(".")[0].lower().rstrip() in WINDOWS_RESERVED:
        return f"{name[:20]!r} is a device name on Windows (CON, NUL, AUX, PRN, COM1-9, LPT1-9)"
    if name.endswith((".", " ")):
        return f"{name[:20]!r} ends with '.' or a space, which Windows drops"
    return None


# ----------------------------------------------------------------------------- probes

@dataclass(frozen=True)
class ProbeRecord:
    """One probe sentence at one evaluation: its translation and the pieces that label its maps' axes."""

    source: str
    translation: str
    src_pieces: list[str]
    tgt_pieces: list[str]  # rows of cross-attention and of decoder self-attention (what each query emitted)
    tgt_input_pieces: list[str]  # columns of decoder self-attention (<s> + the output shifted right)
    gold_links: str | None = None  # gold word alignment, when the corpus has one (teaching corpus)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class ProbeSnapshot:
    step: int
    probes: list[ProbeRecord]


def write_probes(run: str | Path | RunFiles, step: int, probes: list[ProbeRecord],
                 maps: list[dict[str, torch.Tensor]]) -> None:
    """maps[i][family] is probe i's (L, H, L_q, L_k) stack; tensors first, so that the JSON marks it complete."""
    from safetensors.torch import save_file  # torch: the run folder's other readers (the Train page) need none

    files = _files(run)
    files.probes.mkdir(exist_ok=True)
    base = files.probe_base(step)
    tensors = {f"{i}.{family}": m[family].cpu().contiguous() for i, m in enumerate(maps) for family in PROBE_FAMILIES}
    tmp = base.with_name(f".{base.name}.safetensors.tmp")
    save_file(tensors, str(tmp))
    os.replace(tmp, base.with_suffix(".safetensors"))
    write_json_atomic(base.with_suffix(".json"), {"step": step, "probes": [p.to_dict() for p in probes]})


def probe_steps(run: str | Path | RunFiles) -> list[int]:
    """Steps with a complete snapshot (both files) of the probe sentences, in order."""
    files = _files(run)
    if not files.probes.is_dir():
        return []
    steps = []
    for path in files.probes.glob("step-*.json"):
        try:
            step = int(path.stem.split("-")[1])
        except (IndexError, ValueError):
            continue
        if path.with_suffix(".safetensors").is_file():
            steps.append(step)
    return sorted(steps)


def read_probe_snapshot(run: str | Path | RunFiles, step: int) -> ProbeSnapshot | None:
    """The probe records at step, or None when they are missing or unreadable."""
    try:
        data = json.loads(_files(run).probe_base(step).with_suffix(".json").read_text(encoding="utf-8"))
        return ProbeSnapshot(int(data["step"]), [ProbeRecord(**p) for p in data["probes"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_probes(run: str | Path | RunFiles) -> list[ProbeSnapshot]:
    """Every complete probe snapshot of a run, oldest first."""
    snapshots = [read_probe_snapshot(run, step) for step in probe_steps(run)]
    return [s for s in snapshots if s is not None]


def read_probe_maps(run: str | Path | RunFiles, step: int, index: int = 0) -> dict[str, torch.Tensor]:
    """Probe index's attention maps at step: family -> (L, H, L_q, L_k)."""
    from safetensors.torch import load_file

    tensors = load_file(str(_files(run).probe_base(step).with_suffix(".safetensors")))
    return {family: tensors[f"{index}.{family}"] for family in PROBE_FAMILIES}


def discard_probes_after(run: str | Path | RunFiles, step: int) -> None:
    """Remove the snapshots a killed run took after the checkpoint it resumes from."""
    files = _files(run)
    if not files.probes.is_dir():
        return
    for path in files.probes.glob("step-*"):
        try:
            later = int(path.name.split(".")[0].split("-")[1]) > step
        except (IndexError, ValueError):
            continue
        if later:
            path.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- the lock

class RunInUseError(RuntimeError):
    """Another live process trains in this run directory."""


class RunLock:
    """An exclusive flock on trainer.lock, held while a trainer may write the run.

    The kernel drops the lock when its process dies (kill -9 included), so a stale lock file never blocks.
    """

    def __init__(self, run: str | Path | RunFiles):
        self.path = _files(run).lock
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunInUseError(f"{self.path.parent} is in use by another training process (pid {holder}); "
                                    "stop it first, or train into another directory") from e
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()

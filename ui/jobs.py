"""Training runs as background processes of the training CLI: start, stop, resume, list. No streamlit.

A run is started in its own session (start_new_session) so it outlives page reloads and browser
disconnects; the app finds it again from the run directory alone. Besides the trainer's own files
the app writes `launch.json` (pid, command, time) and `process.log` (the process's stdout and
stderr), which is all there is to show when a process dies before it writes status.json.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ui.models import REPO, read_json

LAUNCH_FILE, PROCESS_LOG = "launch.json", "process.log"
ACTIVE = ("starting", "running")
_PROCESSES: dict[int, subprocess.Popen] = {}  # children of this server, polled so that they are reaped


def pid_alive(pid: int | None) -> bool:
    """True while the process runs; a zombie (exited, not yet reaped) counts as dead."""
    if not pid:
        return False
    proc = _PROCESSES.get(pid)
    if proc is not None:
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass
class RunInfo:
    root: Path
    state: str  # starting | running | finished | stopped | failed | crashed
    step: int
    max_steps: int | None
    pid: int | None
    error: str | None

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def run_info(root: str | Path) -> RunInfo:
    """The state of a run, from its files and whether its process is alive."""
    root = Path(root)
    status, launch = read_json(root / "status.json"), read_json(root / LAUNCH_FILE)
    state = status.get("state")
    pid = launch.get("pid") if launch.get("started", 0) > status.get("updated", 0) else status.get("pid")
    alive = pid_alive(pid)
    error = status.get("error")
    newer_launch = launch.get("started", 0) > status.get("updated", 0)
    if newer_launch or state is None:
        state = "starting" if alive else ("crashed" if launch else "unknown")
        if state == "crashed":
            error = "the training process exited before it started training; see the log below"
    elif state in ACTIVE and not alive:
        state = "crashed"
        error = error or f"the training process (pid {pid}) died without saving its state; see the log below"
    return RunInfo(root, state, int(status.get("step", 0)), status.get("max_steps"), pid, error)


def list_runs(runs_dir: Path) -> list[RunInfo]:
    """Every run directory, newest first."""
    if not runs_dir.is_dir():
        return []
    markers = ("run.json", "status.json", LAUNCH_FILE)
    roots = [p for p in runs_dir.iterdir() if p.is_dir() and any((p / m).exists() for m in markers)]
    return [run_info(p) for p in sorted(roots, key=lambda p: p.stat().st_mtime, reverse=True)]


def valid_run_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name))


def _launch(root: Path, args: list[str]) -> RunInfo:
    command = [sys.executable, "-m", "transformer.train", *args]
    with open(root / PROCESS_LOG, "ab") as log:
        proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    _PROCESSES[proc.pid] = proc
    (root / LAUNCH_FILE).write_text(json.dumps({"pid": proc.pid, "started": time.time(), "command": command}))
    return run_info(root)


def start_run(runs_dir: Path, name: str, args: list[str]) -> RunInfo:
    """Start `python -m transformer.train ARGS --out RUNS/NAME`; refuses an invalid or taken name."""
    if not valid_run_name(name):
        raise ValueError("a run name uses letters, digits, '-', '_' or '.', and at most 64 characters")
    root = runs_dir / name
    if (root / "run.json").exists() or (root / LAUNCH_FILE).exists():
        raise ValueError(f"a run named {name!r} already exists: choose another name or resume it")
    root.mkdir(parents=True, exist_ok=True)
    return _launch(root, [*args, "--out", str(root)])


def resume_run(root: Path, max_steps: int | None = None) -> RunInfo:
    info = run_info(root)
    if info.active:
        raise ValueError(f"run {info.name} is already {info.state}")
    if not (root / "checkpoints" / "latest").is_dir():
        raise ValueError(f"run {info.name} has no saved checkpoint to resume from")
    return _launch(root, ["--resume", str(root), *(["--max-steps", str(max_steps)] if max_steps else [])])


def stop_run(root: Path) -> bool:
    """SIGTERM: the trainer saves a checkpoint and writes state "stopped". False if nothing was running."""
    info = run_info(root)
    if not info.active or not info.pid:
        return False
    try:
        os.kill(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def log_tail(root: Path, lines: int = 40) -> str:
    """The end of the process output (it includes tracebacks), else of train.log."""
    for name in (PROCESS_LOG, "train.log"):
        path = root / name
        if path.is_file():
            with open(path, "rb") as f:
                f.seek(max(0, path.stat().st_size - 20_000))
                text = f.read().decode("utf-8", "replace")
            return "\n".join(text.splitlines()[-lines:])
    return ""


def eta_seconds(records: list[dict[str, Any]], max_steps: int | None) -> float | None:
    """Remaining time from the pace of the logged training steps so far."""
    train = [r for r in records if "train_loss" in r and r.get("elapsed") is not None]
    if not max_steps or len(train) < 2 or train[-1]["step"] <= train[0]["step"]:
        return None
    pace = (train[-1]["elapsed"] - train[0]["elapsed"]) / (train[-1]["step"] - train[0]["step"])
    return max(0.0, pace * (max_steps - train[-1]["step"]))


def probe_steps(root: Path) -> list[int]:
    """Steps with a complete attention snapshot of the probe sentences."""
    probes = root / "probes"
    if not probes.is_dir():
        return []
    return sorted(int(p.stem.split("-")[1]) for p in probes.glob("step-*.json")
                  if p.with_suffix(".safetensors").is_file())


def load_probe(root: Path, step: int, index: int = 0) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Probe `index` at `step`: its record (source, translation, pieces) and its maps (L, H, Lq, Lk)."""
    from safetensors.numpy import load_file

    base = root / "probes" / f"step-{step:07d}"
    record = read_json(base.with_suffix(".json"))["probes"][index]
    tensors = load_file(str(base.with_suffix(".safetensors")))
    return record, {f: tensors[f"{index}.{f}"] for f in ("enc_self", "dec_self", "cross")}

"""Training runs as background processes of the training CLI: start, stop, resume, list. No streamlit.

A run is started in its own session (start_new_session) so it outlives page reloads and browser
disconnects, and at a lower CPU priority (`--nice 10`, its session's scheduling group included: see
`transformer.training.cli.lower_priority`) so that the server's translations get the cores first; the
app finds it again from the run directory alone. The trainer's own files are read through
`transformer.runs`, which writes them. Besides those the app writes `launch.json` (pid, command, time),
`process.log` (the process's stdout and stderr), which is all there is to show when a process dies before it
writes status.json, and `corpus.tsv` (an uploaded corpus, checked by `check_tsv` before anything is written).

What a page can start is bounded here, since anyone who reaches the page can start it: a run name is one
folder name under the runs folder; a corpus is an upload, a file of the data folder (EXPLORER_DATA, default
`data/`) or, only with EXPLORER_ANY_TSV_PATH=1 (a trusted single user), any path; a Hugging Face dataset is a
Hub name, never a local path.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from transformer.data.corpora.base import split_sizes
from transformer.data.spec import CorpusSpec
from transformer.runs import RunFiles, claim_run, read_status, release_claim, run_name_problem, write_launch
from ui.shared.models.catalog import PAGE_SIZE, REPO, read_json, subfolders

ACTIVE = ("starting", "running")
_PROCESSES: dict[int, subprocess.Popen] = {}  # children of this server, polled so that they are reaped
TRAIN_NICE = 10  # a run started here yields the cores to the server, so that translating stays quick meanwhile


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


class SetupChoice(NamedTuple):
    """One of the trainer's decisions on how a run computes (status.json's `setup`), with its reason."""

    name: str  # device, precision, loss, dropout, self_attention, optimizer, compile
    value: str
    reason: str


@dataclass
class RunInfo:
    root: Path
    state: str  # starting | running | finished | stopped | failed | crashed
    step: int
    max_steps: int | None
    pid: int | None
    error: str | None
    setup: tuple[SetupChoice, ...] = ()

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def run_info(root: str | Path) -> RunInfo:
    """The state of a run, from its files and whether its process is alive."""
    root = Path(root)
    status, launch = read_status(root), read_json(RunFiles(root).launch)
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
        error = error or (f"the run folder {root} is read-only, so the training process (pid {pid}) stopped without "
                          "recording how it ended" if not os.access(root, os.W_OK) else
                          f"the training process (pid {pid}) died without saving its state; see the log below")
    return RunInfo(root, state, int(status.get("step", 0)), status.get("max_steps"), pid, error,
                   setup_choices(status.get("setup")))


def setup_choices(setup: object) -> tuple[SetupChoice, ...]:
    """status.json's `setup` as typed choices; anything malformed (an old or torn file) is left out."""
    if not isinstance(setup, dict):
        return ()
    def text(value: object) -> str:
        return ("on" if value else "off") if isinstance(value, bool) else str(value)

    return tuple(SetupChoice(name, text(d["value"]), str(d["reason"])) for name, d in setup.items()
                 if isinstance(d, dict) and "value" in d and "reason" in d)


def is_run(path: Path) -> bool:
    files = RunFiles(path)
    return path.is_dir() and any(m.exists() for m in (files.run_json, files.status, files.launch))


def list_runs(runs_dir: Path, limit: int | None = PAGE_SIZE) -> list[RunInfo]:
    """The newest `limit` run directories (None: all), newest first: only the folders listed are read, so that
    10,000 runs cost what 40 do."""
    runs = []
    for path in subfolders(runs_dir, newest_first=True):
        if limit is not None and len(runs) >= limit:
            break
        if is_run(path):
            runs.append(run_info(path))
    return runs


RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}([-_][A-Za-z0-9]{2,8})?")
HF_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")
HF_CONFIG = re.compile(r"[A-Za-z0-9_.-]{0,64}")
MAX_TSV_BYTES = 20 * 1024 * 1024  # as .streamlit/config.toml's server.maxUploadSize (MB), checked here too
MAX_TSV_LINES = 1_000_000
MAX_SENTENCE_CHARS = 1000  # per sentence, as the app's translation box (ui.shared.models.translation_gate.MAX_CHARS)
MAX_SENTENCE_WORDS = CorpusSpec.max_words  # the trainer drops longer pairs (max_words): they would not count
# the splits of an uploaded corpus, as the trainer makes them (CorpusSpec's default fractions)
SPLIT_FRACTIONS = (CorpusSpec.dev_fraction, CorpusSpec.test_fraction)


def valid_run_name(name: str) -> bool:
    return (bool(RUN_NAME.fullmatch(name)) and name not in (".", "..") and ".." not in name
            and run_name_problem(name) is None)


def check_run_name(name: str) -> None:
    if not valid_run_name(name):
        problem = run_name_problem(name) if RUN_NAME.fullmatch(name) else None
        raise ValueError(f"{problem[0].upper() + problem[1:]}: choose another name." if problem else
                         "A run name uses letters, digits, '-', '_' or '.' (not '..'), starts with a letter or "
                         "digit, and has at most 64 characters.")


def check_language_code(code: str) -> None:
    if not LANGUAGE_CODE.fullmatch(code):
        raise ValueError(f"{code[:20]!r} is not a language code such as en, fr or pt-BR.")


def check_hf_name(name: str, config: str = "") -> None:
    """A Hugging Face Hub name ("opus_books", "Helsinki-NLP/europarl"): never a path the trainer would read."""
    # the pattern first: it bounds the length, so that the look-ups below cannot fail on a huge name
    if not HF_NAME.fullmatch(name) or ".." in name or name.endswith((".json", ".jsonl", ".csv")) \
            or (REPO / name).exists() or Path(name).exists():
        raise ValueError(f"{name[:40]!r} is not a Hugging Face dataset name such as opus_books or owner/name "
                         "(local files and folders are not accepted here).")
    if not HF_CONFIG.fullmatch(config):
        raise ValueError(f"{config[:40]!r} is not a dataset configuration name such as en-fr.")


def check_tsv(data: bytes) -> int:
    """The number of sentence pairs of an uploaded TSV corpus, or ValueError saying what is wrong with it:
    size, encoding, NUL bytes, line count, a line without exactly 2 (or 3) tab-separated non-empty columns, a
    sentence longer than MAX_SENTENCE_CHARS characters or MAX_SENTENCE_WORDS words, or too few pairs to give the
    train, dev and test splits one pair each. All of it before a run is created: training could not use it."""
    if len(data) > MAX_TSV_BYTES:
        raise ValueError(f"The file has {len(data) / 2**20:.1f} MB; at most {MAX_TSV_BYTES // 2**20} MB are accepted.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ValueError(f"The file is not UTF-8 text (line {line}, byte {e.start}); save it as UTF-8.") from None
    if "\x00" in text:
        raise ValueError(f"The file holds a NUL character (line {text[: text.index(chr(0))].count(chr(10)) + 1}): "
                         "it is not a text file.")
    lines = text.splitlines()
    if len(lines) > MAX_TSV_LINES:
        raise ValueError(f"The file has {len(lines):,} lines; at most {MAX_TSV_LINES:,} are accepted.")
    pairs = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3) or not fields[0].strip() or not fields[1].strip():
            raise ValueError(f"Line {number} is not `source<TAB>target` (it has {len(fields)} tab-separated "
                             "column(s), or an empty one).")
        for side, sentence in zip(("source", "target"), fields[:2]):
            if len(sentence) > MAX_SENTENCE_CHARS or len(sentence.split()) > MAX_SENTENCE_WORDS:
                raise ValueError(f"Line {number}: the {side} sentence has {len(sentence):,} characters and "
                                 f"{len(sentence.split()):,} words; at most {MAX_SENTENCE_CHARS:,} characters and "
                                 f"{MAX_SENTENCE_WORDS} words are accepted (one sentence per line).")
        pairs += 1
    sizes = split_sizes(pairs, *SPLIT_FRACTIONS)
    if min(sizes.values()) < 1:
        names = [name for name, n in sizes.items() if n < 1]
        empty = " and ".join(names) + (" splits" if len(names) > 1 else " split")
        needed = next(n for n in range(pairs, 10**6) if min(split_sizes(n, *SPLIT_FRACTIONS).values()) >= 1)
        raise ValueError(f"The file has {pairs} sentence pair(s): too few to hold out dev and test sentences "
                         f"(the {empty} would be empty, at {SPLIT_FRACTIONS[0]:.0%} each); at least "
                         f"{needed} are needed.")
    return pairs


def data_dir() -> Path:
    """Where the Train page may read TSV corpora by name (EXPLORER_DATA, default data/ in the repository)."""
    return Path(os.environ.get("EXPLORER_DATA") or REPO / "data")


def any_tsv_path() -> bool:
    """EXPLORER_ANY_TSV_PATH=1: the Train page reads a TSV from any path (a trusted, single-user machine)."""
    return os.environ.get("EXPLORER_ANY_TSV_PATH") == "1"


def data_files() -> list[str]:
    """The .tsv and .txt files of the data folder, as names relative to it."""
    root = data_dir()
    if not root.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.suffix in (".tsv", ".txt") and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def data_file(name: str) -> Path:
    """A file of the data folder by its name there; ValueError for anything outside it (`..`, links out)."""
    root = data_dir().resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ValueError(f"{name[:60]!r} is not a file of the data folder {root}.")
    return path


def _launch(root: Path, args: list[str]) -> RunInfo:
    command = [sys.executable, "-m", "transformer.training", *args, "--nice", str(TRAIN_NICE)]
    files = RunFiles(root)
    with open(files.process_log, "ab") as log:
        proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    _PROCESSES[proc.pid] = proc
    write_launch(files, proc.pid, command)
    return run_info(root)


def start_run(runs_dir: Path, name: str, args: list[str], corpus_tsv: bytes | None = None) -> RunInfo:
    """Start `python -m transformer.training ARGS --out RUNS/NAME`; refuses an invalid or taken name before anything
    is written. corpus_tsv: an uploaded corpus, checked, then saved as the run's corpus.tsv and passed as --path."""
    from transformer.training.cli import check_command  # torch: the Train page imports it on a start only

    check_run_name(name)
    root = runs_dir / name
    files = RunFiles(root)
    if root.is_symlink() or (root.exists() and not root.is_dir()):  # never follow it out of the runs folder
        raise ValueError(f"a file or link named {name!r} is in the runs folder: choose another name")
    if files.run_json.exists() or files.launch.exists():
        raise ValueError(f"a run named {name!r} already exists: choose another name or resume it")
    if corpus_tsv is not None:
        check_tsv(corpus_tsv)
    upload = ["--path", str(files.uploaded_corpus)] if corpus_tsv is not None else []
    check_command([*args, *upload, "--out", str(root)])  # the flags' ranges, as the command checks them
    claim_run(root)  # of two starts of one name at once, the second stops here (RunTakenError, a ValueError)
    try:
        if corpus_tsv is not None:
            files.uploaded_corpus.write_bytes(corpus_tsv)
            args = [*args, "--path", str(files.uploaded_corpus)]
        return _launch(root, [*args, "--out", str(root)])
    except BaseException:
        release_claim(files)
        raise


def resume_run(root: Path, max_steps: int | None = None) -> RunInfo:
    info = run_info(root)
    if info.active:
        raise ValueError(f"run {info.name} is already {info.state}")
    files = RunFiles(root)  # the trainer resumes from latest, or from the newest intact step-N when latest is lost
    if not files.checkpoint("latest").is_dir() and not any(files.checkpoints.glob("step-*")):
        raise ValueError(f"run {info.name} has no saved checkpoint to resume from")
    return _launch(root, ["--resume", str(root), *(["--max-steps", str(max_steps)] if max_steps else [])])


def resume_target(info: RunInfo) -> int:
    """The step a Resume runs to by default: the run's own end (its max_steps) while it is not there yet; a run that
    reached its end gets as many steps again (at least 100)."""
    if info.max_steps and info.max_steps > info.step:
        return int(info.max_steps)
    return info.step + max(info.step, 100)


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
    for path in (RunFiles(root).process_log, RunFiles(root).log):
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

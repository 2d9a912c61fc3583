"""Two training runs of two source trees side by side: the same flags, in turns, minutes counted per run.

    git worktree add ../before 91fff4f
    python bench/side_by_side.py --before ../before --steps 600 -- --corpus bible --src en --tgt fr --preset small

Each tree trains `runs/side-by-side-NAME` with the flags after `--` (its own `python -m transformer.training`, this
interpreter). The runs take turns of --slice seconds (SIGSTOP and SIGCONT), so that both see the same machine
through the same hours; each starts alone, so that its core plan (threads, OpenMP wait) sees a quiet machine.
Both stop (SIGTERM, which saves a checkpoint) once each has saved step --steps. Then the table: at every
evaluation, the minutes each run has run (its turns summed, not the wall time it waited), its dev loss and BLEU,
and before / after. Measured this way: issue 28, item 4, in BENCHMARKS.md. Unix only (signals).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NAMES = ("after", "before")
EVAL_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) eval at step (\d+): dev_loss (\S+)\s+dev_bleu (\S+)")


def active_seconds(turns: list[tuple[float, float]], at: float) -> float:
    """Seconds a run had run by time `at`, from its turns (start, end) of running."""
    return sum(max(0.0, min(end, at) - start) for start, end in turns)


def evaluations(log: str) -> list[tuple[float, int, float, float]]:
    """(time, step, dev loss, dev BLEU) of every evaluation line of a run's train.log."""
    found = []
    for line in log.splitlines():
        m = EVAL_LINE.match(line)
        if m:
            at = dt.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
            found.append((at + int(m[2]) / 1000, int(m[3]), float(m[4]), float(m[5])))
    return found


def table(runs: dict[str, Path], turns: dict[str, list[tuple[float, float]]]) -> str:
    """Markdown: per evaluated step, each run's minutes run, dev loss and BLEU, and before / after minutes."""
    rows = {name: {step: (active_seconds(turns[name], at) / 60, loss, bleu)
                   for at, step, loss, bleu in evaluations((runs[name] / "train.log").read_text())}
            for name in NAMES}
    lines = ["| step | after: minutes | after: dev loss, BLEU | before: minutes | before: dev loss, BLEU "
             "| before / after |", "|---|---|---|---|---|---|"]
    for step in sorted(set(rows["after"]) & set(rows["before"])):
        (a, a_loss, a_bleu), (b, b_loss, b_bleu) = rows["after"][step], rows["before"][step]
        lines.append(f"| {step} | {a:.1f} | {a_loss:.2f}, {a_bleu:.2f} | {b:.1f} | {b_loss:.2f}, {b_bleu:.2f} | "
                     f"{b / a:.3f} |")
    return "\n".join(lines)


class SideBySide:
    """The two training processes and the turns each has run."""

    def __init__(self, trees: dict[str, Path], flags: list[str], steps: int):
        self.trees, self.flags, self.steps = trees, flags, steps
        self.runs = {name: trees[name] / "runs" / f"side-by-side-{name}" for name in NAMES}
        self.procs: dict[str, subprocess.Popen] = {}
        self.turns: dict[str, list[tuple[float, float]]] = {name: [] for name in NAMES}

    def done(self, name: str) -> bool:
        return (self.runs[name] / "checkpoints" / f"step-{self.steps:07d}").exists()

    def start(self, name: str) -> None:
        """Start one run alone and stop it once it has logged its core plan or first step (on a quiet machine)."""
        for path in (self.runs[name], self.runs[name].with_suffix(".out")):
            if path.exists():
                raise SystemExit(f"{path} exists: remove it or keep it, but a new comparison needs fresh runs")
        self.runs[name].parent.mkdir(parents=True, exist_ok=True)
        began = time.time()
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "transformer.training", *self.flags, "--out", str(self.runs[name])],
            cwd=self.trees[name], stdout=self.runs[name].with_suffix(".out").open("w"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        log = self.runs[name] / "train.log"
        # the core plan's line, or the first step's for a tree older than the plan
        while not (log.exists() and any(mark in log.read_text() for mark in ("threads:", " step "))):
            if self.procs[name].poll() is not None:
                raise SystemExit(f"the {name} run ended at its start: see {self.runs[name].with_suffix('.out')}")
            time.sleep(0.5)
        time.sleep(3)  # past a restart for the wait policy, if the plan asked for one
        self.procs[name].send_signal(signal.SIGSTOP)
        self.turns[name].append((began, time.time()))

    def turn(self, name: str, seconds: float) -> None:
        proc = self.procs[name]
        began = time.time()
        proc.send_signal(signal.SIGCONT)
        while time.time() < began + seconds and not self.done(name) and proc.poll() is None:
            time.sleep(1)
        proc.send_signal(signal.SIGSTOP)
        self.turns[name].append((began, time.time()))
        if proc.poll() is not None and not self.done(name):
            raise SystemExit(f"the {name} run ended before step {self.steps}: see {self.runs[name] / 'train.log'}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.send_signal(signal.SIGCONT)
        for proc in self.procs.values():
            proc.wait(timeout=600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the source tree of the before run (a git worktree)")
    parser.add_argument("--after", default=str(REPO), help="the source tree of the after run (default: this one)")
    parser.add_argument("--steps", type=int, default=600, help="stop both once each has saved this step")
    parser.add_argument("--slice", type=float, default=240.0, help="seconds of each turn")
    parser.add_argument("flags", nargs=argparse.REMAINDER, help="-- then the training flags (without --out)")
    args = parser.parse_args()
    flags = args.flags[1:] if args.flags[:1] == ["--"] else args.flags
    trees = {"after": Path(args.after).resolve(), "before": Path(args.before).resolve()}
    both = SideBySide(trees, flags, args.steps)
    try:
        for name in NAMES:
            both.start(name)
        while not all(both.done(name) for name in NAMES):
            for name in NAMES:
                if not both.done(name):
                    both.turn(name, args.slice)
    finally:
        both.stop()
    print(table(both.runs, both.turns))


if __name__ == "__main__":
    main()

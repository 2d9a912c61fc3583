"""Time to quality: dev loss, BLEU and chrF (and, on the teaching corpus, exact match and the best head's
alignment error rate) against training minutes, from a run's metrics.jsonl.

    python bench/time_to_quality.py runs/en-fr-small                    # table of an existing run
    python bench/time_to_quality.py runs/tiny --preset tiny --minutes 5 # train first, then the table
    python bench/time_to_quality.py runs/tiny --preset tiny --train-args "--threads 1 --precision fp32"
    python bench/time_to_quality.py runs/teach --preset tiny --corpus teaching --minutes 6

With --preset, trains a new run on the Bible en->fr corpus (or --corpus teaching) for about --minutes of
wall time (the run is stopped with SIGTERM, which saves a checkpoint and records a final evaluation point),
then prints the table. The table is what BENCHMARKS.md records for the presets.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from transformer.runs import read_metrics, read_status  # noqa: E402


def train_for(run: Path, preset: str, minutes: float, extra: list[str], corpus: str = "bible") -> None:
    cmd = [sys.executable, "-m", "transformer.training", "--corpus", corpus, "--src", "en", "--tgt", "fr",
           "--preset", preset, "--out", str(run), *extra]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + minutes * 60
    while proc.poll() is None and time.time() < deadline:
        time.sleep(2)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=600)


def table(run: Path) -> str:
    records = read_metrics(run / "metrics.jsonl")
    evals = [r for r in records if "dev_bleu" in r]
    train = {r["step"]: r for r in records if "train_loss" in r}
    aligned = any("dev_aer_best" in r for r in evals)  # a corpus with gold links: exact match and AER too
    extra = " dev exact % | best head AER % |" if aligned else ""
    lines = ["| step | minutes | train loss | dev loss | dev BLEU | dev chrF | tokens/s |" + extra,
             "|---|---|---|---|---|---|---|" + ("---|---|" if aligned else "")]
    for r in evals:
        t = train.get(r["step"], {})
        row = (f"| {r['step']} | {r['elapsed'] / 60:.1f} | {t.get('train_loss', float('nan')):.2f} | "
               f"{r['dev_loss']:.2f} | {r['dev_bleu']:.1f} | {r['dev_chrf']:.1f} | "
               f"{t.get('tokens_per_s', float('nan')):,.0f} |")
        if aligned:
            row += f" {r.get('dev_exact', float('nan')):.1f} | {r.get('dev_aer_best', float('nan')):.1f} |"
        lines.append(row)
    status = read_status(run / "status.json")
    lines.append(f"\nstate: {status.get('state')}, step {status.get('step')}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="run directory (created when --preset is given)")
    parser.add_argument("--preset", help="train a new run with this preset first")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--eval-every", default="100", help="passed to the training CLI with --preset")
    parser.add_argument("--train-args", default="", help='more flags for the training CLI, e.g. "--threads 1"')
    parser.add_argument("--corpus", default="bible", choices=["bible", "teaching"], help="with --preset")
    args = parser.parse_args()
    run = Path(args.run)
    if args.preset:
        train_for(run, args.preset, args.minutes, ["--eval-every", args.eval_every, *args.train_args.split()],
                  args.corpus)
    print(table(run))


if __name__ == "__main__":
    main()

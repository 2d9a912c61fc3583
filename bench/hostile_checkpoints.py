"""What the checkpoint checks of issue 27 cost, and how fast a hostile checkpoint is refused. Prints what
BENCHMARKS.md quotes, as ratios against a plain load of the same shipped model in the same process.

    python bench/hostile_checkpoints.py [--model en-fr-bible] [--repeats 5]

1. load_checkpoint of a shipped model with its checksums.json against the same files without one (the checksum
   cost), and the NaN/Inf pass alone against the whole load.
2. Every hostile checkpoint of tests/fuzz_inputs.py (damaging a copy of the shipped model): the time to refuse it
   against a good load, the slowest named; and the counts of the new fuzz inputs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz_inputs import (  # noqa: E402
    HOSTILE_CHECKPOINTS,
    RUN_NAMES,
    SEARCH_FLAGS,
    STDIN_LINES,
    UPLOADS,
    fuzz_inputs,
)
from transformer.model.checkpoint import CheckpointError, load_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def seconds(*fns, repeats: int) -> list[float]:
    """The fastest of `repeats` runs of each fn, the fns interleaved so that a busy moment of a shared machine
    does not land on one of them only."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, spent in zip(fns, times):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return [min(t) for t in times]


def _refused(path: Path) -> bool:
    try:
        load_checkpoint(path)
    except CheckpointError:
        return True
    return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="en-fr-bible")
    p.add_argument("--repeats", type=int, default=9)
    args = p.parse_args()
    torch.set_num_threads(1)
    shipped = ROOT / "checkpoints" / args.model
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(shutil.copytree(shipped, Path(tmp) / "plain"))
        (plain / "checksums.json").unlink()
        load_checkpoint(shipped)  # warm the page cache and torch
        weights = load_file(shipped / "model.safetensors")
        base, summed, finite = seconds(lambda: load_checkpoint(plain), lambda: load_checkpoint(shipped),
                                       lambda: all(torch.isfinite(t).all() for t in weights.values()),
                                       repeats=args.repeats)
        print(f"load {args.model} without checksums: {base * 1e3:.0f} ms (reference, 1.00)")
        print(f"  with checksums.json verified:   {summed / base:.2f}x")
        print(f"  the NaN/Inf pass alone:         {finite / base:.2f}x of a load")

        refused, slowest, took_by_name = 0, ("", 0.0), {}
        for i, (name, (damage, _)) in enumerate(HOSTILE_CHECKPOINTS.items()):
            path = Path(shutil.copytree(plain, Path(tmp) / f"h{i}"))
            damage(path)
            took = seconds(partial(_refused, path), repeats=3)[0]
            refused += _refused(path)
            slowest = max(slowest, (name, took), key=lambda x: x[1])
            took_by_name[name] = took
            shutil.rmtree(path)
        print(f"hostile checkpoints: {refused} of {len(HOSTILE_CHECKPOINTS)} refused with a CheckpointError; "
              f"slowest: {slowest[0]!r} in {slowest[1] / base:.2f}x a good load")
        for name in ("config n_encoder_layers=1000000000", "config max_len=1e400", "tokenizer of 200 MB",
                     "a NaN weight", "config nested 100,000 deep"):
            print(f"  {name}: refused in {took_by_name[name] / base:.3f}x a good load")
    print(f"fuzz inputs: {len(fuzz_inputs())} texts, {len(STDIN_LINES)} stdin lines, {len(SEARCH_FLAGS)} flag sets, "
          f"{len(RUN_NAMES)} run names, {len(UPLOADS)} uploads, {len(HOSTILE_CHECKPOINTS)} hostile checkpoints")


if __name__ == "__main__":
    main()

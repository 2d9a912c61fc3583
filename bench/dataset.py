"""How long the Dataset page's table takes: the teaching model's test split (500 sentences by default), from
nothing (no cache) and then read back from its cache, with the machine's load average beside it:

    python bench/dataset.py                       # 500 sentences, 1 torch thread (as the app), the raw lens
    python bench/dataset.py --limit 50 --threads 1 --lenses raw alti

The goal (issue 40): 500 sentences in under a minute on two cores. Prints the seconds of each phase (loading the
split, the table, the cache read) and the sentences per second.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

from transformer.decoding.translate import Translator
from transformer.explain.dataset import dataset_table, model_split
from transformer.explain.dataset_slices import projector_points, slice_metrics, slices


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="checkpoints/en-fr-teaching")
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (the app decodes on one per slot; 2 is slower on a busy machine)")
    parser.add_argument("--lenses", nargs="+", default=["raw"])
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{args.threads} torch threads")
    translator = Translator(args.checkpoint, batch_size=32)
    started = time.perf_counter()
    split = model_split(translator.checkpoint.metadata, "test", limit=args.limit)
    loaded = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        result = dataset_table(translator, split, lenses=args.lenses, cache_dir=cache)
        computed = time.perf_counter() - started
        started = time.perf_counter()
        dataset_table(translator, split, lenses=args.lenses, cache_dir=cache)
        cached = time.perf_counter() - started
    started = time.perf_counter()
    groups = slices(result, "construction") if "constructions" in result.table else slices(result, "length")
    slice_metrics(result, groups)
    projector_points(result, "encoder")
    sliced = time.perf_counter() - started
    n = len(result.table)
    print(f"split loaded in {loaded:.1f} s; {n} sentences tabulated in {computed:.1f} s ({n / computed:.1f} per s); "
          f"read back from the cache in {cached:.2f} s; slices and projector in {sliced:.2f} s")
    print(f"corpus BLEU {result.corpus_scores['bleu']:.2f}, chrF {result.corpus_scores['chrf']:.2f}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""python -m transformer.explain.lenses --checkpoint DIR --split test [--json PATH]: every lens scored on a
teaching model's gold links (AER per layer and best head) and for faithfulness to occlusion."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec
from transformer.explain.alignment import AlignedExample
from transformer.explain.lenses.maps import HEADLESS, LENSES
from transformer.explain.lenses.scores import LensScore, score_lenses
from transformer.files import write_json_atomic
from transformer.model.checkpoint import CheckpointError, load_checkpoint

SPLITS = ("train", "dev", "test")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m transformer.explain.lenses", description=" ".join(__doc__.split()))
    parser.add_argument("--checkpoint", required=True, help="a checkpoint trained on the teaching corpus")
    parser.add_argument("--split", choices=SPLITS, default="test")
    parser.add_argument("--json", help="write {lens: {best, layer_mean_aer, faithfulness, ...}} here")
    parser.add_argument("--lenses", nargs="+", choices=list(LENSES), default=list(LENSES))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--limit", type=int, default=0, help="score only the first N sentences (0: all)")
    return parser.parse_args(argv)


def table(scores: dict[str, LensScore]) -> str:
    """A Markdown table: best layer and head, their AER, each layer's mean-of-heads AER, faithfulness."""
    n_layers = len(next(iter(scores.values())).layer_mean)
    lines = ["| lens | best layer | best head | best AER % | " + " | ".join(f"layer {i} AER %" for i in range(n_layers))
             + " | faithfulness (Spearman) |", "|---" * (5 + n_layers) + "|"]
    for lens, score in scores.items():
        layer, head, aer = score.best
        lines.append(f"| {lens} | {layer} | {'-' if lens in HEADLESS else head} | {100 * aer:.1f} | "
                     + " | ".join(f"{100 * a:.1f}" for a in score.layer_mean) + f" | {score.faithfulness:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(max(1, args.threads))
    try:
        checkpoint = load_checkpoint(args.checkpoint)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    corpus_spec = checkpoint.metadata.get("corpus")
    if not isinstance(corpus_spec, dict) or corpus_spec.get("kind") != "teaching":
        print(f"error: {args.checkpoint} was not trained on the teaching corpus: it has no gold links",
              file=sys.stderr)
        return 2
    spec = CorpusSpec.from_dict(corpus_spec)
    corpus = load_corpus(spec if args.split == "train" else spec.for_evaluation())
    pairs = getattr(corpus, args.split)[: args.limit or None]
    examples = [AlignedExample(s, t, corpus.alignments[(s, t)], corpus.possible_alignments.get((s, t), frozenset()))
                for s, t in pairs]
    scores = score_lenses(checkpoint.model, checkpoint.tokenizer, examples, args.lenses)
    first = next(iter(scores.values()))
    print(f"{args.checkpoint}, {args.split} split: {first.sentences} sentences scored, {first.skipped} skipped")
    print(table(scores))
    if args.json:
        write_json_atomic(Path(args.json), {lens: score.to_json() for lens, score in scores.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""python -m transformer.explain.lenses --checkpoint DIR --split test [--json PATH]: every lens scored on a
teaching model's gold links (AER per layer and best head) and for faithfulness to occlusion.

Every flag, the model's corpus and the output path are checked before the first sentence is scored: a bad one
is a message and exit status 2, never a traceback after the run."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from transformer import arguments
from transformer.data.corpora.base import CorpusError, ParallelCorpus
from transformer.data.corpora.teaching import TEACHING_SIZES
from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec
from transformer.explain.alignment import AlignedExample
from transformer.explain.lenses.maps import HEADLESS, LENSES
from transformer.explain.lenses.scores import LensScore, score_lenses
from transformer.files import OutputPathError, check_output_file, write_json_atomic
from transformer.model.checkpoint import CheckpointError, load_checkpoint

SPLITS = ("train", "dev", "test")


def at_least_one(text: str) -> int:
    """argparse type of --limit: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (leave it out to score every sentence), got {value}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m transformer.explain.lenses", description=" ".join(__doc__.split()))
    parser.add_argument("--checkpoint", required=True, help="a checkpoint trained on the teaching corpus")
    parser.add_argument("--split", choices=SPLITS, default="test")
    parser.add_argument("--json", help="write {lens: {best, layer_mean_aer, faithfulness, ...}} here")
    parser.add_argument("--lenses", nargs="+", choices=list(LENSES), default=list(LENSES))
    parser.add_argument("--threads", type=arguments.thread_count, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--limit", type=at_least_one, help="score only the first N sentences (default: all)")
    args = parser.parse_args(argv)
    if args.json is not None:
        try:
            check_output_file(args.json, "--json")
        except OutputPathError as e:
            parser.error(str(e))
    return args


def split_pairs(spec: CorpusSpec, split: str, limit: int | None) -> tuple[ParallelCorpus, list[tuple[str, str]]]:
    """The corpus and the first `limit` pairs of one split, generating no more train pairs than that: a larger
    teaching train split begins with the pairs of a smaller one (CorpusError when the spec cannot be built)."""
    if split != "train":
        corpus = load_corpus(spec.for_evaluation())
    else:
        size = spec.train_pairs or TEACHING_SIZES[spec.grammar]["train"]
        corpus = load_corpus(dataclasses.replace(spec, train_pairs=min(size, limit or size)))
    return corpus, list(getattr(corpus, split)[:limit])


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
    try:
        corpus, pairs = split_pairs(CorpusSpec.from_dict(corpus_spec), args.split, args.limit)
    except CorpusError as e:
        print(f"error: the corpus in {args.checkpoint}'s metadata cannot be built: {e}", file=sys.stderr)
        return 2
    examples = [AlignedExample(s, t, corpus.alignments[(s, t)], corpus.possible_alignments.get((s, t), frozenset()))
                for s, t in pairs]
    scores = score_lenses(checkpoint.model, checkpoint.tokenizer, examples, args.lenses)
    if not scores:
        print(f"error: no sentence of the {args.split} split could be scored ({len(examples)} skipped: longer than "
              "the model's max_len, or cut into pieces that do not map onto the gold words)", file=sys.stderr)
        return 1
    first = next(iter(scores.values()))
    print(f"{args.checkpoint}, {args.split} split: {first.sentences} sentences scored, {first.skipped} skipped")
    print(table(scores))
    if args.json:
        try:
            write_json_atomic(Path(args.json), {lens: score.to_json() for lens, score in scores.items()})
        except (OSError, OutputPathError) as e:
            print(f"error: could not write {args.json} ({getattr(e, 'strerror', None) or e}); the table above has "
                  "the scores",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

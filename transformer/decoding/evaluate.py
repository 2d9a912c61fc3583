"""Translate a corpus split and score it with sacreBLEU (BLEU and chrF).

    python -m transformer.decoding.evaluate --checkpoint checkpoints/en-fr-bible --split test --beam 4
    python -m transformer.decoding.evaluate --checkpoint runs/MIX/checkpoints/best --split test --part bible

A model trained on a mix of corpora is scored on each part's split (its full dev or test) and on all of them
together; --part scores one part alone (by index, or by kind where one part has it): the Bible part's test
is then the single-corpus Bible test.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sacrebleu

from transformer.data.corpora.base import CorpusError, Pair, ParallelCorpus
from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.files import check_output_file, write_json_atomic
from transformer.model.checkpoint import CheckpointError, load_checkpoint
from transformer.progress import Counter

log = logging.getLogger(__name__)


def translate_texts(translator: Translator, sources: list[str], beam_size: int = 1, *,
                    progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Plain translations of many sentences (greedy when beam_size is 1); progress(done, total) after each batch."""
    settings = SearchSettings(beam_size=beam_size)
    return [t.text for t in translator.translate_batch(sources, settings, progress=progress)]


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict[str, Any]:
    """sacreBLEU corpus BLEU and chrF, with their signatures for reporting."""
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": round(bleu_score.score, 2),
        "chrf": round(chrf_score.score, 2),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "sentences": len(hypotheses),
    }


def split_groups(spec: CorpusSpec, split: str, *, part: int | None = None, limit: int | None = None
                 ) -> tuple[ParallelCorpus, list[list[Pair]]]:
    """The corpus a model is scored on and its `split`, as one group per part of a mix (each cut to its first
    `limit` pairs) or one group: what this module scores, and what `transformer.explain.dataset` tabulates."""
    scored = spec if part is None else spec.parts[part].spec
    corpus = load_corpus(scored if split == "train" else scored.for_evaluation())
    return corpus, [p.split(split)[:limit] for p in corpus.parts] or [corpus.split(split)[:limit]]


def evaluate_checkpoint(
    path: str | Path, split: str = "test", *, part: str | None = None, beam_size: int = 1, limit: int | None = None,
    device: str = "cpu", progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Translate `split` of the corpus the checkpoint was trained on and score it; for a mix, also each part
    (limit: the first N of each), or only `part` (an index or a kind, see CorpusSpec.part_index)."""
    translator = Translator(load_checkpoint(path, device), batch_size=64)
    metadata = translator.checkpoint.metadata
    if "corpus" not in metadata:
        imported = (f" (imported from {metadata['source_model']}: translate a file of your own with "
                    "transformer-translate and score it with sacrebleu)") if metadata.get("source_model") else ""
        raise CheckpointError(f"{path}: metadata.json does not say which corpus the model was trained on{imported}")
    spec = CorpusSpec.from_dict(metadata["corpus"])
    index = None if part is None else spec.part_index(part)
    corpus, groups = split_groups(spec, split, part=index, limit=limit)
    pairs = [pair for group in groups for pair in group]
    started = time.perf_counter()
    hypotheses = translate_texts(translator, [s for s, _ in pairs], beam_size, progress=progress)
    seconds = round(time.perf_counter() - started, 1)
    result = {**corpus_scores(hypotheses, [t for _, t in pairs]), "split": split, "beam_size": beam_size,
              "seconds": seconds, "checkpoint": str(path), "description": corpus.description}
    if index is not None:
        result["part"] = index
    if corpus.parts:  # a mix: the parts' splits one after another, each scored on its own too
        bounds = [0, *itertools.accumulate(len(group) for group in groups)]
        result["parts"] = [
            {"part": i, "description": p.description, **corpus_scores(hypotheses[a:b], [t for _, t in pairs[a:b]])}
            for i, (p, a, b) in enumerate(zip(corpus.parts, bounds, bounds[1:]))]
    result["samples"] = [{"source": s, "reference": t, "hypothesis": h}
                         for (s, t), h in list(zip(pairs, hypotheses))[:10]]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="checkpoint directory")
    parser.add_argument("--split", default="test", choices=["train", "dev", "test"])
    parser.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences (of each part of a mix)")
    parser.add_argument("--part", default=None,
                        help="a model trained on a mix: score only this part, by index (0) or kind (bible)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None,
                        help="JSON file for the scores (default: <checkpoint>/eval-<split>-beam<N>.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        # before translating: a path that cannot take the scores would lose them (the default's folder is checked
        # through the name it gets without --part; a missing checkpoint is evaluate_checkpoint's error)
        out = Path(args.checkpoint) / f"eval-{args.split}-beam{args.beam}.json" if args.out is None else args.out
        if args.out is not None or out.parent.is_dir():
            out = check_output_file(out, "--out")
        with Counter(f"translating {args.split}", log) as counter:  # a bar on a terminal, else log lines
            result = evaluate_checkpoint(args.checkpoint, args.split, part=args.part, beam_size=args.beam,
                                         limit=args.limit, device=args.device, progress=counter)
    except (CheckpointError, CorpusError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.out is None and "part" in result:
        out = out.with_name(f"eval-{args.split}-part{result['part']}-beam{args.beam}.json")
    print(f"{result['description']}\n{args.split} ({result['sentences']} sentences, beam {args.beam}): "
          f"BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  [{result['seconds']} s]")
    for part in result.get("parts", []):
        print(f"  part {part['part']} ({part['sentences']} sentences): BLEU {part['bleu']:.2f}  "
              f"chrF {part['chrf']:.2f}  {part['description']}")
    print(f"  {result['bleu_signature']}\n  {result['chrf_signature']}")
    try:
        write_json_atomic(out, result)
    except (OSError, ValueError) as e:  # the part's own name is in the way, or the disk filled up meanwhile
        print(f"error: the scores above were not written: {e}", file=sys.stderr)
        return 1
    print(f"  written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

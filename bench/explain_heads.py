"""What the Explain heads page costs on a checkpoint: the head-importance map and one ablated re-decode.

    python bench/explain_heads.py --checkpoint checkpoints/en-fr-bible [--sentences 64] [--bleu-sentences 16]

Measures, on --threads torch threads (1: the app's decode slots run one thread each):
  1. head importance (transformer.explain.head_importance): every head switched off alone, the dev
     log-likelihood of --sentences pairs and the greedy BLEU of --bleu-sentences of them;
  2. one ablated re-decode as the page does it: a changed copy of the model (intervened) and a greedy
     translation of one verse with every map, the median of --repeats;
  3. the head statistics of --sentences pairs (one teacher-forced pass each).
Pairs come from the dev (then test) split of the checkpoint's corpus.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.data.load import load_corpus  # noqa: E402
from transformer.data.spec import CorpusSpec  # noqa: E402
from transformer.explain import (  # noqa: E402
    Intervention,
    head_importance,
    head_labels,
    head_statistics,
    intervened_translator,
)
from transformer.model.checkpoint import load_checkpoint  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="checkpoints/en-fr-bible")
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--bleu-sentences", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from transformer.decoding.translate import Translator

    checkpoint = load_checkpoint(args.checkpoint)
    translator = Translator(checkpoint)
    corpus = load_corpus(CorpusSpec.from_dict(checkpoint.metadata["corpus"]).for_evaluation())
    pairs = (corpus.dev + corpus.test)[: args.sentences]
    results = {"checkpoint": args.checkpoint, "threads": args.threads, "sentences": len(pairs),
               "bleu_sentences": args.bleu_sentences}

    started = time.perf_counter()
    stats = head_statistics(checkpoint.model, checkpoint.tokenizer, pairs)
    results["statistics_s"] = round(time.perf_counter() - started, 2)

    started = time.perf_counter()
    importance = head_importance(checkpoint.model, checkpoint.tokenizer, pairs,
                                 bleu_pairs=pairs[: args.bleu_sentences])
    results["importance_s"] = round(time.perf_counter() - started, 1)
    results["heads"] = len(importance.ranked())
    results["base_log_likelihood"] = round(importance.base_log_likelihood, 4)
    results["base_bleu"] = round(importance.base_bleu, 2)
    results["top_heads"] = [[*head, round(v, 4)] for head, v in importance.ranked()[:5]]

    verse = pairs[0][0]
    times, copies = [], []
    for i in range(args.repeats):
        off = Intervention(frozenset({("cross", i % checkpoint.config.n_decoder_layers, 0)}))
        started = time.perf_counter()
        changed = intervened_translator(translator, off)
        copied = time.perf_counter()
        changed.translate(verse, attention=True)
        times.append(time.perf_counter() - started)
        copies.append(copied - started)
    results["ablated_redecode_s"] = round(statistics.median(times), 3)
    results["model_copy_s"] = round(statistics.median(copies), 3)
    results["verse"] = verse
    results["roles"] = {f: [[lab.role for lab in row] for row in head_labels(stats, f)] for f in stats.values}
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()

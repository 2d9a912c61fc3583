"""The figures of a model card: dev and test BLEU/chrF (greedy and beam), samples, everyday sentences;
for a corpus with gold word alignments (the teaching corpus) also exact-match accuracy and the AER of every
cross-attention head and layer mean on the test split.

    python bench/model_card_numbers.py checkpoints/en-fr-bible [--beam 4] [--out numbers.json] [--part bible]

Prints Markdown to paste into the card and writes every number to --out. Samples are ten test verses:
the five best and the five worst by sentence chrF, so that the card shows the bad ones too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import sacrebleu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.data.load import load_corpus  # noqa: E402
from transformer.data.spec import CorpusSpec  # noqa: E402
from transformer.decoding.evaluate import corpus_scores  # noqa: E402
from transformer.decoding.search import SearchSettings  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.explain import AlignedExample, cross_attention_aer  # noqa: E402

EVERYDAY = [
    "Where is the train station?",
    "I would like a cup of coffee, please.",
    "The children are playing in the garden.",
    "My brother bought a new car yesterday.",
    "The king sent his servants to the city.",
    "Love your neighbour as yourself.",
    # Ten more, written on 2026-11-30 before the modern-text (Debian) models were trained; none is in any corpus.
    "Click the button to save the document.",
    "The file could not be opened.",
    "Do you want to close this window?",
    "Please enter your password.",
    "The weather is nice today.",
    "We are going to the market this evening.",
    "Select a cell and type a number.",
    "This game has three levels.",
    "My sister reads a book every night.",
    "The printer is not connected.",
]


def print_alignment(numbers: dict, translator: Translator, examples: list[AlignedExample]) -> None:
    """AER (%) of every cross-attention head on the gold links, as a Markdown layers x heads table."""
    aer = cross_attention_aer(translator.model, translator.tokenizer, examples)
    layer, head, best = aer.best
    numbers["test_aer"] = {"heads": aer.heads, "layer_mean": aer.layer_mean, "best": [layer, head, best],
                           "sentences": aer.sentences, "skipped": aer.skipped}
    n_heads = len(aer.heads[0])
    print(f"\ntest AER (%), {aer.sentences} sentences, argmax of each target word's row; "
          f"best: layer {layer} head {head} = {100 * best:.1f}% (layers and heads from 0, as in the app)")
    print("| layer | " + " | ".join(f"head {h}" for h in range(n_heads)) + " | mean of heads |")
    print("|---" * (n_heads + 2) + "|")
    for i, row in enumerate(aer.heads):
        print(f"| {i} | " + " | ".join(f"{100 * v:.1f}" for v in row) + f" | {100 * aer.layer_mean[i]:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="only the first N verses of each split")
    parser.add_argument("--out", default=None)
    parser.add_argument("--part", default=None, help="a model trained on a mix: the figures of this part (index or "
                        "kind, e.g. bible or debian), as `transformer.decoding.evaluate --part`")
    args = parser.parse_args()
    translator = Translator(args.checkpoint, batch_size=64)
    spec = CorpusSpec.from_dict(translator.checkpoint.metadata["corpus"])
    corpus = load_corpus((spec if args.part is None else spec.parts[spec.part_index(args.part)].spec).for_evaluation())
    numbers: dict = {}
    outputs: dict[str, list[str]] = {}
    for split in ("dev", "test"):
        pairs = corpus.split(split)[: args.limit]
        for beam in (1, args.beam):
            started = time.perf_counter()
            texts = [t.text for t in translator.translate_batch([s for s, _ in pairs], SearchSettings(beam_size=beam))]
            seconds = time.perf_counter() - started
            scores = corpus_scores(texts, [t for _, t in pairs])
            exact = 100.0 * sum(h == t for h, (_, t) in zip(texts, pairs)) / len(pairs)
            numbers[f"{split}_beam{beam}"] = {**scores, "exact": round(exact, 2), "seconds": round(seconds, 1)}
            outputs[f"{split}_beam{beam}"] = texts
            print(f"{split} beam {beam}: BLEU {scores['bleu']:.2f} chrF {scores['chrf']:.2f} exact {exact:.1f}% "
                  f"({len(pairs)} sentences, {seconds:.0f} s)", flush=True)
    print(f"signatures: {numbers['test_beam1']['bleu_signature']} | {numbers['test_beam1']['chrf_signature']}")

    if corpus.alignments:
        print_alignment(numbers, translator, [AlignedExample(s, t, corpus.alignments[(s, t)],
                                                             corpus.possible_alignments.get((s, t), frozenset()))
                                              for s, t in corpus.test[: args.limit]])
    test = corpus.test[: args.limit]
    hyps = outputs[f"test_beam{args.beam}"]
    chrf = sacrebleu.metrics.CHRF()
    ranked = sorted(range(len(test)), key=lambda i: chrf.sentence_score(hyps[i], [test[i][1]]).score)
    short = [i for i in ranked if len(test[i][0].split()) <= 30]
    picks = short[-5:][::-1] + short[:5]
    numbers["samples"] = [{"source": test[i][0], "reference": test[i][1], "output": hyps[i],
                           "chrf": round(chrf.sentence_score(hyps[i], [test[i][1]]).score, 1)} for i in picks]
    beam = SearchSettings(beam_size=args.beam)
    numbers["everyday"] = [{"source": s, "output": translator.translate(s, beam).text} for s in EVERYDAY]
    print("\n| source | reference | output (beam) | chrF |\n|---|---|---|---|")
    for s in numbers["samples"]:
        print(f"| {s['source']} | {s['reference']} | {s['output']} | {s['chrf']} |")
    print("\n| everyday sentence | output (beam) |\n|---|---|")
    for s in numbers["everyday"]:
        print(f"| {s['source']} | {s['output']} |")
    if args.out:
        Path(args.out).write_text(json.dumps(numbers, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()

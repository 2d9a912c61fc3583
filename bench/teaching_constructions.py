"""Per-construction scores of a teaching model on a teaching test split: exact match (greedy) and the best
cross-attention head's AER (Och and Ney, 2003; sure and possible links) over the sentences of each construction.

    python bench/teaching_constructions.py checkpoints/en-fr-teaching [--grammar 2] [--limit 500]

By default the split is that of the grammar the model was trained on (its metadata); --grammar 2 scores an
older model on grammar 2's test split, to see which constructions it never learned. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.data.corpora.teaching import build_teaching_corpus  # noqa: E402
from transformer.data.corpora.teaching.constructions import CONSTRUCTIONS, constructions  # noqa: E402
from transformer.data.corpora.teaching.parser import parse  # noqa: E402
from transformer.data.spec import CorpusSpec  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.explain import AlignedExample, cross_attention_aer  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--grammar", type=int, default=None, help="the test split's grammar (default: the model's)")
    parser.add_argument("--limit", type=int, default=500)
    args = parser.parse_args(argv)
    translator = Translator(args.checkpoint, batch_size=64)
    grammar = args.grammar or CorpusSpec.from_dict(translator.checkpoint.metadata["corpus"]).grammar
    test = build_teaching_corpus(0, grammar).test[: args.limit]
    hypotheses = [t.text for t in translator.translate_batch([p.src for p in test])]
    labels = [constructions(parse(p.src)) for p in test]
    print(f"{args.checkpoint} on grammar {grammar}'s test split ({len(test)} sentences, greedy)\n")
    print("| construction | sentences | exact match | best head's AER (layer, head) |")
    print("|---|---|---|---|")
    rows = [("all", list(range(len(test))))] + [(c, [i for i, s in enumerate(labels) if c in s]) for c in
                                                 CONSTRUCTIONS]
    for name, index in rows:
        if not index:
            continue
        exact = sum(hypotheses[i] == test[i].tgt for i in index) / len(index)
        examples = [AlignedExample(test[i].src, test[i].tgt, test[i].links, test[i].possible) for i in index]
        layer, head, aer = cross_attention_aer(translator.model, translator.tokenizer, examples).best
        print(f"| {name} | {len(index)} | {100 * exact:.1f}% | {100 * aer:.1f}% ({layer}, {head}) |")


if __name__ == "__main__":
    main()

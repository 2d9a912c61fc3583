"""What each attribution and lens method of the Explain page costs on one sentence, as a ratio to translating it.

    python bench/explain_methods.py --checkpoint checkpoints/en-fr-bible [--threads 1] [--repeats 5]

The reference is the app's own work for a sentence: one greedy translation with every attention map. Then, on the
same sentence (30 source tokens with </s> by default) and its output, the median of --repeats runs of:
  saliency and input x gradient (one backward pass), integrated gradients (--steps points in one batch, and its
  completeness gap), occlusion (a batch of one row per source and per prefix word), the four together (what the
  Attribution view computes), the foil candidates, the logit lens, DecoderLens (a greedy translation per encoder
  layer, embeddings included), and activation patching (every encoder layer x position and every head, against
  the same sentence with one noun swapped).
Each attributes (or patches) the middle output token, whose prefix is half the output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.decoding.translate import Translator  # noqa: E402
from transformer.explain.attribution import attribute, candidates  # noqa: E402
from transformer.explain.logit_lens import decoder_lens, logit_lens  # noqa: E402
from transformer.explain.patching import activation_patching  # noqa: E402

SENTENCE = ("The young woman gave her father a cup of water, and the king of the city thanked her with a golden ring "
            "before the people.")
COUNTERFACTUAL = SENTENCE.replace("woman", "man", 1)


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="checkpoints/en-fr-bible")
    parser.add_argument("--text", default=SENTENCE)
    parser.add_argument("--counterfactual", default=COUNTERFACTUAL)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    translator = Translator(args.checkpoint)
    model, tokenizer, specials = translator.model, translator.tokenizer, translator.specials
    translation = translator.translate(args.text, attention=True)
    src, out = translation.source_ids, translation.token_ids
    position = len(out) // 2
    other = translator.prepare(args.counterfactual).ids

    def attribution(methods: list[str]):
        return lambda: attribute(model, tokenizer, src, out, position, steps=args.steps, methods=methods)

    work = {
        "saliency + input x gradient": attribution(["saliency", "input_x_gradient"]),
        f"integrated gradients ({args.steps} steps)": attribution(["integrated_gradients"]),
        "occlusion": attribution(["occlusion"]),
        "Attribution view (all four)": attribution(["saliency", "input_x_gradient", "integrated_gradients",
                                                    "occlusion"]),
        "foil candidates": lambda: candidates(model, src, out, position, specials=specials),
        "logit lens": lambda: logit_lens(model, src, out, k=5, specials=specials),
        "DecoderLens (greedy, every layer)": lambda: decoder_lens(translator, args.text),
        "activation patching": lambda: activation_patching(model, src, other, [specials.start, *out[:position]],
                                                           out[position]),
    }
    reference = median_s(lambda: translator.translate(args.text, attention=True), args.repeats)
    gap = attribute(model, tokenizer, src, out, position, steps=args.steps,
                    methods=["integrated_gradients"]).completeness.relative_gap
    results = {"checkpoint": args.checkpoint, "threads": args.threads, "source_tokens": len(src),
               "output_tokens": len(out), "position": position, "ig_relative_gap": round(gap, 5),
               "same_length_pair": len(other) == len(src), "reference_translate_s": round(reference, 4), "methods": {}}
    for name, fn in work.items():
        if name == "activation patching" and len(other) != len(src):
            continue
        fn()  # warm
        seconds = median_s(fn, args.repeats)
        results["methods"][name] = {"s": round(seconds, 4), "x_translate": round(seconds / reference, 2)}
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

"""What each attention lens costs per sentence: a 30-token source and its greedy translation.

    python bench/lenses.py [--checkpoint checkpoints/en-fr-bible] [--tokens 30] [--repeats 7] [--threads 1]

Each lens (transformer.explain.lenses) is timed end to end, its traced teacher-forced pass included, as the app
computes it when the lens is switched on; the median of --repeats, printed in milliseconds and as a ratio to the
raw lens (one traced pass) and to the model's own teacher-forced pass with every map (what the app shows today),
both timed in the same process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.decoding.translate import Translator  # noqa: E402
from transformer.explain.lenses import LENSES, lens_maps  # noqa: E402

SENTENCE = ("And God said unto Noah, The end of all flesh is come before me; for the earth is filled with "
            "violence through them, and I will destroy them with the earth.")


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="checkpoints/en-fr-bible")
    parser.add_argument("--tokens", type=int, default=30, help="source length in pieces, </s> included")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    translator = Translator(args.checkpoint)
    ids = translator.tokenizer.encode_source(SENTENCE)
    if len(ids) < args.tokens:
        sys.exit(f"the bench sentence has only {len(ids)} pieces; ask for fewer --tokens")
    text = translator.tokenizer.decode_source(ids[: args.tokens - 1])  # cut to the length asked (and </s>)
    translation = translator.translate(text)
    source, output = translation.source_ids, translation.token_ids
    print(f"{args.checkpoint}: source {len(source)} pieces, output {len(output)} pieces, {args.threads} thread(s)")
    reference = median_ms(lambda: translator.attention_maps(source, output), args.repeats)
    raw = median_ms(lambda: lens_maps(translator.model, source, output, "raw", specials=translator.specials),
                    args.repeats)
    print(f"{'teacher-forced pass with maps':32s} {reference:8.1f} ms")
    print(f"{'lens':32s} {'ms':>8s} {'x raw':>7s} {'x pass':>7s}")
    for lens in LENSES:
        ms = raw if lens == "raw" else median_ms(
            lambda lens=lens: lens_maps(translator.model, source, output, lens, specials=translator.specials),
            args.repeats)
        print(f"{lens:32s} {ms:8.1f} {ms / raw:7.2f} {ms / reference:7.2f}")


if __name__ == "__main__":
    main()

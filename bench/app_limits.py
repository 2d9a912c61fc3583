"""Time the app's limits with the shipped model, in one process and without a browser (bench/many_users.py adds
the browser and the server). Prints what BENCHMARKS.md quotes.

    python bench/app_limits.py            # the fuzz set, the worst request at the limit, 4 users at once

1. Every input of the fuzz set (tests/fuzz_inputs.py) through the app's gate
   (`ui.shared.models.translation_gate.translate`), greedy and beam 8: the slowest answer, translation or message.
2. The costliest single requests the app accepts: a source at MAX_SOURCE_TOKENS, greedy, beam 4 and beam 8, one
   shot and step by step ("Run to end").
3. Four users pasting a source at the limit at the same moment (threads through the decode slots): each one's wait.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz_inputs import fuzz_inputs  # noqa: E402
from transformer.data.load import load_corpus  # noqa: E402
from transformer.data.spec import CorpusSpec  # noqa: E402
from transformer.decoding.search import SearchSettings  # noqa: E402
from transformer.decoding.session import DecodingSession  # noqa: E402
from transformer.decoding.translate import TranslationError, Translator  # noqa: E402
from ui.shared.models import translation_gate  # noqa: E402
from ui.shared.models.translation_gate import DECODE_THREADS, MAX_SOURCE_TOKENS, OUTPUT_LIMIT, bounded  # noqa: E402


def at_the_limit(translator: Translator) -> str:
    """Test-split verses joined, cut to the longest prefix of words within MAX_SOURCE_TOKENS pieces."""
    spec = CorpusSpec.from_dict(translator.checkpoint.metadata["corpus"]).for_evaluation()
    verses = [s for s, _ in load_corpus(spec).test]
    words = " ".join(verses[:40]).split()
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(translator.prepare(" ".join(words[:mid])).ids) <= MAX_SOURCE_TOKENS:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    try:
        result = fn()
    except TranslationError as e:
        result = e
    return time.perf_counter() - start, result


def fuzz(translator: Translator) -> None:
    for settings in (SearchSettings(), SearchSettings(beam_size=8, nbest=3)):
        times, refused, slowest = [], 0, (0.0, "")
        for _, text in fuzz_inputs():
            seconds, result = timed(partial(translation_gate.translate, translator, text, settings))
            times.append(seconds)
            refused += isinstance(result, TranslationError)
            slowest = max(slowest, (seconds, repr(text[:30])))
        print(f"1. fuzz set, beam {settings.beam_size}: {len(times)} inputs, {refused} refused with a message, "
              f"median {statistics.median(times) * 1000:.0f} ms, slowest {slowest[0]:.2f} s ({slowest[1]})")


def worst(translator: Translator, text: str) -> None:
    ids = translator.prepare(text).ids
    print(f"2. a source at the limit: {len(text.split())} words, {len(ids)} pieces (limit {MAX_SOURCE_TOKENS}); "
          f"output at most {OUTPUT_LIMIT}")
    for beam in (1, 4, 8):
        settings = SearchSettings(beam_size=beam, nbest=min(3, beam))
        seconds, result = timed(partial(translation_gate.translate, translator, text, settings))
        session = DecodingSession(translator.model, ids, bounded(settings), specials=translator.specials)
        step_seconds, _ = timed(session.run_to_end)
        print(f"   beam {beam}: translate {seconds:.2f} s ({len(result.token_ids)} pieces out), "
              f"step by step 'Run to end' {step_seconds:.2f} s")


def crowd(translator: Translator, text: str, users: int = 4) -> None:
    waits: list[float] = [0.0] * users
    told: list[int] = []
    barrier = threading.Barrier(users)

    def user(i: int) -> None:
        barrier.wait()
        start = time.perf_counter()
        translation_gate.translate(translator, text, SearchSettings(beam_size=4, nbest=3),
                              on_wait=lambda running, waiting: told.append(i))
        waits[i] = time.perf_counter() - start

    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"3. {users} users at the limit at once (beam 4, {translation_gate.LIMITER.slots} slots): answered after "
          + ", ".join(f"{w:.1f}" for w in sorted(waits)) + f" s; {len(told)} saw the waiting message")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--skip-fuzz", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(DECODE_THREADS)  # as the app does
    translator = Translator(args.checkpoint)
    print(f"checkpoint {translator.checkpoint.path}, {torch.get_num_threads()} thread per decode, "
          f"{translation_gate.LIMITER.slots} decode slots")
    text = at_the_limit(translator)
    if not args.skip_fuzz:
        fuzz(translator)
    worst(translator, text)
    crowd(translator, text)


if __name__ == "__main__":
    main()

"""Decoding speed on a checkpoint: what the KV cache, beams and batching cost or save.

    python bench/decode.py --checkpoint checkpoints/en-fr-bible [--sentences 200] [--text-file FILE]

    python bench/decode.py --quick --threads 1   # the two headline ratios only

Measures, and prints as ratios:
  1. greedy search with the KV cache vs recomputing the whole prefix at every step, on the sentence
     whose output is closest to --target-tokens tokens (60): `kv-cache: X.XX x recompute (60 tokens)`;
  2. beam search (--beam, 5) latency vs greedy, one sentence at a time (encoder and search, as the app's
     Translate page runs them): `beam5: X.XX x greedy`;
Both alternate the two runs, --rounds times, and give the median of the rounds' ratios and their range, in wall
time and in this process's CPU time (which leaves out the time other processes held the core: on a shared
machine, the steadier of the two; with --threads 1 it is the work done).
Then (without --quick):
  3. translation throughput in sentences/s, batched (length-sorted) vs one at a time;
  4. the time to compute one sentence's full set of attention maps (one teacher-forced pass).
Sentences come from --text-file (one per line) or else the test split of the checkpoint's corpus
(its metadata), or else the Bible's. Works with any checkpoint, trained or not.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.data.load import load_corpus  # noqa: E402
from transformer.data.spec import CorpusSpec  # noqa: E402
from transformer.decoding.search import SearchSettings, greedy_decode, search  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402

log = logging.getLogger("bench.decode")


def seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of fn over repeat runs, after one warm-up run."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def alternate(first: Callable[[], object], second: Callable[[], object], rounds: int
              ) -> dict[str, tuple[list[float], list[float]]]:
    """Times of first and second, run in turn `rounds` times after one warm-up of each: {"wall": (first's,
    second's), "cpu": (...)}. CPU time (this process's) leaves out the time other processes held the core."""
    first(), second()
    times: dict[str, tuple[list[float], list[float]]] = {"wall": ([], []), "cpu": ([], [])}
    for _ in range(rounds):
        for i, fn in enumerate((first, second)):
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            times["cpu"][i].append(time.process_time() - cpu)
            times["wall"][i].append(time.perf_counter() - wall)
    return times


def ratios(times: dict[str, tuple[list[float], list[float]]], clock: str) -> tuple[float, float, float]:
    """The median, lowest and highest of the rounds' second / first."""
    values = [b / a for a, b in zip(*times[clock])]
    return statistics.median(values), min(values), max(values)


def load_sentences(translator: Translator, text_file: str | None, n: int) -> list[str]:
    if text_file:
        lines = [line.strip() for line in Path(text_file).read_text(encoding="utf-8").splitlines()]
        return [line for line in lines if line][:n]
    corpus = translator.checkpoint.metadata.get("corpus")
    spec = CorpusSpec.from_dict(corpus) if corpus else CorpusSpec(kind="bible")
    return [src for src, _ in load_corpus(spec.for_evaluation()).test[:n]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="checkpoint directory (default: the first under checkpoints/)")
    parser.add_argument("--text-file", help="source sentences, one per line (default: the corpus test split)")
    parser.add_argument("--sentences", type=int, default=200, help="sentences for the throughput measure")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--target-tokens", type=int, default=60, help="output length for the cache comparison")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds of the headline ratios")
    parser.add_argument("--beam-sentences", type=int, default=10, help="sentences for the beam vs greedy ratio")
    parser.add_argument("--quick", action="store_true", help="the two headline ratios only")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("transformer").setLevel(logging.ERROR)  # truncation warnings are not the point here

    translator = Translator(args.checkpoint, device=args.device)
    sentences = load_sentences(translator, args.text_file, args.sentences)
    log.info("checkpoint %s, %d sentences, device %s, %d threads", translator.checkpoint.path, len(sentences),
             translator.device, torch.get_num_threads())

    # 1. KV cache vs recomputing the prefix, on the sentence whose greedy output is closest to the target length.
    sources = [translator.prepare(s).ids for s in sentences]
    lengths = [len(t.token_ids) for t in translator.translate_batch(sentences)]
    pick = min(range(len(sources)), key=lambda i: abs(lengths[i] - args.target_tokens))
    src = torch.tensor([sources[pick]], device=translator.device)  # (1, S)
    model, specials = translator.model, translator.specials
    times = alternate(lambda: greedy_decode(model, src, specials=specials),
                      lambda: greedy_decode(model, src, specials=specials, use_cache=False), args.rounds)
    (ratio, low, high), cpu = ratios(times, "wall"), ratios(times, "cpu")
    cached = statistics.median(times["wall"][0])
    log.info("kv-cache: %.2f x recompute (%d tokens)   [wall, rounds %.2f-%.2f; CPU time %.2f x (%.2f-%.2f); "
             "cached %.1f ms, recomputed %.1f ms]", ratio, lengths[pick], low, high, *cpu, 1e3 * cached,
             1e3 * statistics.median(times["wall"][1]))

    # 2. Beam search vs greedy, one sentence at a time (encoder included).
    few = [torch.tensor([ids], device=translator.device) for ids in sources[:args.beam_sentences]]  # (1, S) each
    beam = SearchSettings(beam_size=args.beam)
    times = alternate(lambda: [search(model, s, specials=specials) for s in few],
                      lambda: [search(model, s, beam, specials=specials) for s in few], args.rounds)
    (ratio, low, high), cpu = ratios(times, "wall"), ratios(times, "cpu")
    log.info("beam%d: %.2f x greedy   [wall, rounds %.2f-%.2f; CPU time %.2f x (%.2f-%.2f); per sentence greedy "
             "%.1f ms, beam %.1f ms; %d sentences]", args.beam, ratio, low, high, *cpu,
             1e3 * statistics.median(times["wall"][0]) / len(few), 1e3 * statistics.median(times["wall"][1]) / len(few),
             len(few))
    if args.quick:
        return

    # 3. Throughput: length-sorted batches vs one at a time.
    batched = seconds(lambda: translator.translate_batch(sentences), 1)
    single = seconds(lambda: [translator.translate(s) for s in sentences], 1)
    log.info("3. greedy throughput: batched %.1f sentences/s, one at a time %.1f sentences/s -> batching x%.2f",
             len(sentences) / batched, len(sentences) / single, single / batched)
    batched_beam = seconds(lambda: translator.translate_batch(sentences, beam), 1)
    log.info("   beam %d throughput: batched %.1f sentences/s", args.beam, len(sentences) / batched_beam)

    # 4. One sentence's full set of attention maps: the teacher-forced pass on top of decoding.
    best = translator.translate(sentences[pick])
    maps = seconds(lambda: translator.attention_maps(best.source_ids, best.token_ids), args.repeat)
    log.info("4. all attention maps of one sentence (%d x %d tokens): %.1f ms, x%.2f of its greedy decoding",
             len(best.source_ids), len(best.token_ids), 1e3 * maps, maps / cached)


if __name__ == "__main__":
    main()

"""Decoding speed on a checkpoint: what the KV cache, beams and batching cost or save.

    python bench/decode.py --checkpoint checkpoints/en-fr-bible [--sentences 200] [--text-file FILE]

    python bench/decode.py --quick --threads 1   # the headline ratios only

Prints the CPU (lscpu's model name and the flags that decide which kernels run), then, as ratios:
  1. greedy search with the KV cache vs recomputing the whole prefix at every step, on the sentence
     whose output is closest to --target-tokens tokens (60): `kv-cache: X.XX x recompute (60 tokens)`;
  2. beam search (--beam, 5) latency vs greedy, one sentence at a time (encoder and search, as the app's
     Translate page runs them), on the first --beam-sentences (10) test sentences and on the --long (20) longest:
     `beam5: X.XX x greedy`, `beam5 long: X.XX x greedy`.
Each alternates the two runs sentence by sentence, --rounds times, and gives the median of the rounds' ratios and
their range, in wall time and in this process's CPU time (which leaves out the time other processes held the core:
on a shared machine, the steadier of the two; with --threads 1 it is the work done), and the ratio of the sums of
each sentence's fastest run (the least disturbed by other processes).
Then the ATen operators a decoding step runs, greedy and beam, and their self CPU time by kind (torch.profiler):
where beam search's extra time goes (--no-ops skips it).
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
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.data.load import load_corpus  # noqa: E402
from transformer.data.spec import CorpusSpec  # noqa: E402
from transformer.decoding.search import SearchSettings, greedy_decode, search  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.training.precision import cpu_flags  # noqa: E402

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


def alternate(first: Callable[[object], object], second: Callable[[object], object], items: list, rounds: int
              ) -> dict[str, tuple[list[float], list[float]]]:
    """Times of first(item) and second(item) for every item, in turn item by item, `rounds` times after one warm-up
    of each: {"wall": (first's round totals, second's), "cpu": (...), "fastest": (each item's fastest run of
    first, of second)}. CPU time (this process's) leaves out the time other processes held the core."""
    for item in items:
        first(item), second(item)
    times: dict[str, tuple[list[float], list[float]]] = {"wall": ([], []), "cpu": ([], [])}
    fastest = ([float("inf")] * len(items), [float("inf")] * len(items))
    for _ in range(rounds):
        for clock in times.values():
            clock[0].append(0.0), clock[1].append(0.0)
        for n, item in enumerate(items):
            for i, fn in enumerate((first, second)):
                wall, cpu = time.perf_counter(), time.process_time()
                fn(item)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                times["cpu"][i][-1] += cpu
                times["wall"][i][-1] += wall
                fastest[i][n] = min(fastest[i][n], cpu)
    times["fastest"] = fastest
    return times


def ratios(times: dict[str, tuple[list[float], list[float]]], clock: str) -> tuple[float, float, float]:
    """The median, lowest and highest of the rounds' second / first."""
    values = [b / a for a, b in zip(*times[clock])]
    return statistics.median(values), min(values), max(values)


def summary(times: dict[str, tuple[list[float], list[float]]], what: str) -> str:
    """`X.XX x what   [...]`: the median of the rounds' wall-time ratios, then their range, the CPU-time ratios and
    the ratio of the fastest runs."""
    (ratio, low, high), cpu = ratios(times, "wall"), ratios(times, "cpu")
    fastest = sum(times["fastest"][1]) / sum(times["fastest"][0])
    return (f"{ratio:.2f} x {what}   [wall, rounds {low:.2f}-{high:.2f}; CPU time {cpu[0]:.2f} x ({cpu[1]:.2f}-"
            f"{cpu[2]:.2f}); fastest runs {fastest:.2f} x]")


def cpu_line() -> str:
    """lscpu's model name and the flags that decide which kernels run (AVX-512, its BF16, AMX), never assumed."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        name = next(line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration, subprocess.SubprocessError):
        name = "unknown (no lscpu)"
    flags = cpu_flags() or set()
    have = " ".join(f if f in flags else f"no-{f}" for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16"))
    return f"cpu: {name}; {have}; torch {torch.__version__}, ATen kernels {torch.backends.cpu.get_cpu_capability()}"


OP_KINDS = [  # (kind, ATen operators): a decoding step's self CPU time by what it does
    ("matrix products", {"aten::mm", "aten::addmm", "aten::bmm"}),
    ("attention", {"aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_softmax"}),
    ("log-softmax", {"aten::_log_softmax"}),
    ("top-k, argmax", {"aten::topk", "aten::argmax", "aten::amax"}),
    ("cache copies", {"aten::index_select", "aten::cat", "aten::copy_"}),
]


def op_profile(run: Callable[[object], object], items: list) -> tuple[int, Counter, Counter]:
    """Steps, ATen operators a step, and self CPU time a step by kind, of run over items (one profiled pass)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for item in items:
            run(item)
    events = prof.key_averages()
    steps = next(e.count for e in events if e.key == "aten::_log_softmax")  # one log-softmax a step
    counts, kinds = Counter(), Counter()
    for e in events:
        counts[e.key] += e.count / steps
        kinds[next((k for k, names in OP_KINDS if e.key in names), "other")] += e.self_cpu_time_total / steps
    return steps, counts, kinds


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
    parser.add_argument("--long", type=int, default=20, help="the longest test sentences for the long ratio (0: none)")
    parser.add_argument("--quick", action="store_true", help="the headline ratios only")
    parser.add_argument("--no-ops", action="store_true", help="skip the operators of a greedy and a beam step")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("transformer").setLevel(logging.ERROR)  # truncation warnings are not the point here

    translator = Translator(args.checkpoint, device=args.device)
    sentences = load_sentences(translator, args.text_file, args.sentences)
    log.info(cpu_line())
    log.info("checkpoint %s, %d sentences, device %s, %d threads", translator.checkpoint.path, len(sentences),
             translator.device, torch.get_num_threads())

    # 1. KV cache vs recomputing the prefix, on the sentence whose greedy output is closest to the target length.
    sources = [translator.prepare(s).ids for s in sentences]
    lengths = [len(t.token_ids) for t in translator.translate_batch(sentences)]
    pick = min(range(len(sources)), key=lambda i: abs(lengths[i] - args.target_tokens))
    src = torch.tensor([sources[pick]], device=translator.device)  # (1, S)
    model, specials = translator.model, translator.specials
    times = alternate(lambda s: greedy_decode(model, s, specials=specials),
                      lambda s: greedy_decode(model, s, specials=specials, use_cache=False), [src], args.rounds)
    cached = statistics.median(times["wall"][0])
    log.info("kv-cache: %s; %d tokens, cached %.1f ms, recomputed %.1f ms", summary(times, "recompute"),
             lengths[pick], 1e3 * cached, 1e3 * statistics.median(times["wall"][1]))

    # 2. Beam search vs greedy, one sentence at a time (encoder included): the first sentences, then the longest.
    beam = SearchSettings(beam_size=args.beam)
    sets = [("", sources[:args.beam_sentences])]
    if args.long and not args.text_file:
        test = [translator.prepare(s).ids for s in load_sentences(translator, None, 10**6)]
        sets.append((" long", sorted(test, key=len, reverse=True)[:args.long]))
    for name, ids in sets:
        few = [torch.tensor([i], device=translator.device) for i in ids]  # (1, S) each
        times = alternate(lambda s: search(model, s, specials=specials),
                          lambda s: search(model, s, beam, specials=specials), few, args.rounds)
        log.info("beam%d%s: %s; per sentence greedy %.1f ms, beam %.1f ms; %d sentences of %d-%d tokens", args.beam,
                 name, summary(times, "greedy"), 1e3 * statistics.median(times["wall"][0]) / len(few),
                 1e3 * statistics.median(times["wall"][1]) / len(few), len(few), min(map(len, ids)), max(map(len, ids)))
    if not args.no_ops:
        few = [torch.tensor([i], device=translator.device) for i in sources[:args.beam_sentences]]
        runs = {"greedy": lambda s: search(model, s, specials=specials),
                "beam": lambda s: search(model, s, beam, specials=specials)}
        found = {k: op_profile(run, few) for k, run in runs.items()}
        for k, (steps, counts, kinds) in found.items():
            top = ", ".join(f"{n} {kinds[n] / 1e3:.2f}" for n, _ in OP_KINDS + [("other", None)])
            log.info("ops %s: %d steps, %.0f ATen operators a step; self CPU ms a step: %s (%.2f in all)", k, steps,
                     sum(counts.values()), top, sum(kinds.values()) / 1e3)
        extra = found["beam"][1] - found["greedy"][1]
        log.info("ops beam - greedy a step: %s", ", ".join(f"{k.removeprefix('aten::')} +{v:.1f}"
                                                         for k, v in extra.most_common(12)))
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

"""The training step against what its own matrix products can do, and against the CPU's matmul peak, per precision.

    python bench/train_mfu.py [--preset small] [--rounds 5] [--batches 4] [--threads N] [--precision fp32 bf16]
                              [--fresh 4] [--profile 12]

The trainer's step (TokenLoss, cheap dropout, fused Adam, autocast for bf16; `bench/train_throughput.py`'s "ours",
on the same Bible-like batches) alternates, round by round, with the step's own matrix products replayed alone
(every product it makes, forward and backward, recorded with its shapes, transposed layouts and dtypes, one after
another with nothing else: the ceiling) and with square products (2048 x 2048, the best of several: the peak). The
step's FLOPs are counted once by FlopCounterMode (forward + backward; the optimizer's elementwise work is not
counted, as MFU counts only the model's FLOPs). Everything the lead needs from one run is printed:

    cpu: the model name and the flags that matter (AVX2, AVX-512, AVX-512 BF16, AMX), torch's kernels, threads
    bf16 products: the oneDNN kernel a bf16 product runs on (its verbose log), and whether that is AMX
    mfu P: X.XX of the matmul peak          the step's FLOPs per second over the peak's
    ceiling P: X.XX of the matmul peak      its products alone, at their shapes, over the peak
    step/ceiling P: X.XX (goal 0.85)        the products-alone time over the step's time (median of the rounds')
    rest P: where the step's time goes (torch.profiler, operators' self CPU time by kind, those under dropout's and
            the optimizer's ranges counted there; "Python & dispatch" is the wall time no operator accounts for),
            with the products' own time in the step (beside their time alone, above)
    bf16 shapes: the products alone at their shapes and rounded up to multiples of 16 and 32 (AMX tiles are 16 rows
            of 32 bf16); a step on batches of shapes never seen before against the same batches again: oneDNN
            builds (JIT-compiles) a kernel for each new product shape, and the trainer's batches have new shapes

The step's and its products' times are medians over rounds, the peak the best round's: this kind of machine
changes speed by 20-40% from one second to the next, so a round's own ratio says little, and the best peak is what
the CPU can do. bf16 is measured only where the CPU multiplies bf16 natively (AVX-512 BF16 or AMX); elsewhere
torch emulates it and the line says why it is skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_throughput import make_data, preset_config, train_step  # noqa: E402

from transformer.model.dropout import use_cheap_dropout  # noqa: E402
from transformer.model.layers import Transformer  # noqa: E402
from transformer.model.loss import TokenLoss  # noqa: E402
from transformer.training.precision import autocast, cpu_bf16_support, cpu_flags  # noqa: E402
from transformer.training.recipe import PRESETS, TrainConfig, make_optimizer  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
PEAK_N = 2048  # the square matrix product whose speed is taken as the peak
PEAK_REPEATS = 5
FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")  # what decides which kernels can run


def cpu_line() -> str:
    """The CPU's model name (lscpu), the flags of FLAGS it has and lacks, and what torch makes of it."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        name = next(line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration, subprocess.SubprocessError):
        name = "unknown (no lscpu)"
    flags = cpu_flags() or set()
    have = " ".join(f if f in flags else f"no-{f}" for f in FLAGS)
    return (f"cpu: {name}; {have}; torch {torch.__version__}, ATen kernels {torch.backends.cpu.get_cpu_capability()}, "
            f"oneDNN {'available' if torch.backends.mkldnn.is_available() else 'absent'}, "
            f"{torch.get_num_threads()} threads")


def onednn_log(fn, level: int = 1) -> str:
    """What oneDNN's verbose mode writes (to the process's stdout, fd 1) while fn runs: level 1 each primitive run,
    2 also each primitive built (`create:cache_miss`, with its milliseconds)."""
    sys.stdout.flush()
    with tempfile.TemporaryFile(mode="w+") as log:
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(level):
                fn()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return log.read()


def bf16_kernels(loss_fn, batch) -> str:
    """The oneDNN implementations the bf16 step's products run on, and whether AMX is among them."""
    log = onednn_log(lambda: step_flops(loss_fn, batch, "bf16"))
    kernels = Counter(m.group(1) for m in re.finditer(r"primitive,exec,cpu,matmul,([^,]+),", log))
    if not kernels:
        return "bf16 products: no oneDNN matmul ran (not on oneDNN: not AMX)"
    amx = any("amx" in k for k in kernels)
    listed = ", ".join(f"{k} x{n}" for k, n in kernels.most_common())
    return f"bf16 products: oneDNN {listed} -> AMX {'in use' if amx else 'not in use'}"


def matmul_peak(precision: str) -> float:
    """FLOP/s of the best of PEAK_REPEATS (2048 x 2048) @ (2048 x 2048) products in `precision`."""
    a = torch.randn(PEAK_N, PEAK_N, dtype=DTYPES[precision])
    b = torch.randn(PEAK_N, PEAK_N, dtype=DTYPES[precision])
    a @ b  # warm-up: the first product allocates and packs
    best = float("inf")
    for _ in range(PEAK_REPEATS):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * PEAK_N ** 3 / best


def addmm_inplace_flop(self_shape, a_shape, b_shape, *args, **kwargs) -> int:
    """FLOPs of `c.addmm_(a, b)`, which FlopCounterMode does not count by itself (the loss's weight gradient)."""
    return 2 * a_shape[0] * a_shape[1] * b_shape[1]


def step_flops(loss_fn, batch, precision: str) -> int:
    """Forward + backward FLOPs of one step on `batch`, counted by FlopCounterMode (matrix products, attention)."""
    with FlopCounterMode(display=False, custom_mapping={torch.ops.aten.addmm_: addmm_inplace_flop}) as counter:
        with autocast(torch.device("cpu"), precision):
            loss = loss_fn(batch)
        (loss / batch.n_tokens).backward()
    return counter.get_total_flops()


PRODUCTS = {torch.ops.aten.mm.default: (0, 1), torch.ops.aten.addmm.default: (1, 2),
            torch.ops.aten.addmm_.default: (1, 2), torch.ops.aten.bmm.default: (0, 1)}


class ProductRecorder(TorchDispatchMode):
    """Records every matrix product of a step: its two operands' shapes, whether each is a transposed view (the
    layout the BLAS is handed) and their dtype, so that the products can be timed alone."""

    def __init__(self):
        super().__init__()
        self.products: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in PRODUCTS:
            a, b = (args[i] for i in PRODUCTS[func])
            self.products.append((*(
                (tuple(t.shape), t.dim() > 1 and t.stride(-2) == 1 and t.size(-2) > 1) for t in (a, b)), a.dtype))
        return func(*args, **(kwargs or {}))


def record_products(loss_fn, batch, precision: str) -> list[tuple]:
    recorder = ProductRecorder()
    with recorder, autocast(torch.device("cpu"), precision):
        loss = loss_fn(batch)
    with recorder:
        (loss / batch.n_tokens).backward()
    return recorder.products


def operand(shape: tuple, transposed: bool, dtype: torch.dtype) -> torch.Tensor:
    if not transposed:
        return torch.randn(shape, dtype=dtype)
    return torch.randn(*shape[:-2], shape[-1], shape[-2], dtype=dtype).transpose(-2, -1)


def rounded(shape: tuple, multiple: int) -> tuple:
    """The last two sizes of shape rounded up to a multiple (the batch size of a bmm kept)."""
    return (*shape[:-2], *(-(-n // multiple) * multiple for n in shape[-2:]))


def products_alone(products: list[tuple], multiple: int = 1) -> float:
    """Seconds the recorded products take one after another outside the step (best of 3 each, the first run of a
    shape left out: it builds oneDNN's kernel), each size rounded up to `multiple` when > 1."""
    total = 0.0
    for (a_shape, a_t), (b_shape, b_t), dtype in products:
        if multiple > 1:
            a_shape, b_shape = rounded(a_shape, multiple), rounded(b_shape, multiple)
            b_shape = (*b_shape[:-2], a_shape[-1], b_shape[-1])  # the inner sizes agree
        a, b = operand(a_shape, a_t, dtype), operand(b_shape, b_t, dtype)
        product = torch.bmm if a.dim() == 3 else torch.mm
        product(a, b)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            product(a, b)
            best = min(best, time.perf_counter() - start)
        total += best
    return total


KINDS = [  # (kind, operator names): the step's self CPU time by what it does
    ("matrix products", {"aten::mm", "aten::addmm", "aten::addmm_", "aten::bmm"}),
    ("softmax, log-softmax, exp (+ backward)", {"aten::_softmax", "aten::_softmax_backward_data", "aten::_log_softmax",
                                                "aten::_log_softmax_backward_data", "aten::exp", "aten::exp_"}),
    ("layer norm (+ backward)", {"aten::native_layer_norm", "aten::native_layer_norm_backward"}),
    ("attention masks", {"aten::masked_fill", "aten::masked_fill_", "aten::bitwise_not"}),
    ("copies and casts", {"aten::copy_", "aten::clone", "aten::cat", "aten::index_select", "aten::_to_copy",
                          "aten::index", "aten::gather", "aten::scatter_add_", "aten::embedding_dense_backward",
                          "aten::index_put_", "aten::_index_put_impl_"}),
    ("zeroing and allocation", {"aten::zero_", "aten::fill_", "aten::empty", "aten::empty_strided", "aten::zeros"}),
]
RANGES = {  # every operator under these ranges, products aside, counts for the range's kind
    "DropoutFunction": "dropout (draws, masks, scaling; + backward)",
    "DropoutFunctionBackward": "dropout (draws, masks, scaling; + backward)",
    "Optimizer.step": "optimizer (fused Adam, gradient clipping)",
}


def kind_of(event) -> str:
    if event.name in KINDS[0][1]:
        return KINDS[0][0]
    parent = event
    while parent is not None:
        found = next((kind for name, kind in RANGES.items() if parent.name.startswith(name)), None)
        if found:
            return found
        parent = parent.cpu_parent
    return next((kind for kind, names in KINDS if event.name in names), "other elementwise and views")


def where_time_goes(loss_fn, optimizer, batches, precision: str, top: int) -> None:
    """The profiled steps' self CPU time by kind (and the `top` costliest operators when top > 0)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    train_step(loss_fn, optimizer, batches[0], precision)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for b in batches:
            train_step(loss_fn, optimizer, b, precision)
        wall = time.perf_counter() - start
    by_kind: Counter = Counter()
    for event in prof.events():
        if event.name.startswith("aten::"):
            by_kind[kind_of(event)] += event.self_cpu_time_total / 1e6
    by_kind["Python & dispatch (no operator)"] = max(wall - sum(by_kind.values()), 0.0)
    parts = ", ".join(f"{k} {v / wall:.0%}" for k, v in by_kind.most_common())
    print(f"rest {precision}: of the profiled step ({wall / len(batches):.3f} s, products "
          f"{by_kind['matrix products'] / len(batches):.3f} s of it): {parts}")
    if top:
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))


def fresh_shapes(loss_fn, optimizer, c, n: int, precision: str) -> str:
    """A step on each of n batches of shapes this process has not seen, then on the same batches again; and what
    oneDNN built for the first: the cost of the trainer's batches, whose shapes change from step to step."""
    batches = make_data(c, PRESETS["small"]["train"]["max_tokens"] // 2, n, seed=1000 + n)
    log = onednn_log(lambda: [train_step(loss_fn, optimizer, b, precision) for b in batches[:1]], level=2)
    built = [float(m.group(1)) for m in re.finditer(r"create:cache_miss,[^\n]*,([\d.]+)\n", log)]
    first = [train_step(loss_fn, optimizer, b, precision) for b in batches[1:]]
    again = [train_step(loss_fn, optimizer, b, precision) for b in batches[1:]]
    return (f"new shapes {precision}: a step on a batch of new shapes {statistics.median(first):.3f} s, the same batch "
            f"again {statistics.median(again):.3f} s ({len(batches) - 1} batches); the first batch built "
            f"{len(built)} oneDNN kernels in {sum(built) / 1e3:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="small", choices=["tiny", "small"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=4, help="steps per round")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=list(DTYPES))
    parser.add_argument("--fresh", type=int, default=4, metavar="N",
                        help="batches of new shapes for the bf16 (and fp32) new-shapes line; 0 skips it")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="also print the N costliest operators")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    bf16 = cpu_bf16_support()
    precisions = [p for p in args.precision if p != "bf16" or bf16.value]
    c = preset_config(args.preset)
    batches = make_data(c, PRESETS[args.preset]["train"]["max_tokens"] // 2, args.batches, seed=0)
    torch.manual_seed(0)
    model = Transformer(c).train()
    use_cheap_dropout(model, True)
    token_loss = TokenLoss(model)
    optimizer = make_optimizer(model, TrainConfig(lr=1e-4))
    loss_fn = lambda b: token_loss(b.src, b.tgt_in, b.tgt_out, 0.1)  # noqa: E731
    print(cpu_line())
    print(f"bf16: {bf16.reason}")
    if "bf16" in precisions:
        print(bf16_kernels(loss_fn, batches[0]))
    print(f"preset {args.preset}: {sum(p.numel() for p in model.parameters()):,} parameters, {len(batches)} batches "
          f"of {statistics.mean(b.n_tokens for b in batches):.0f} target tokens on average")
    flops = {p: sum(step_flops(loss_fn, b, p) for b in batches) for p in precisions}
    products = {p: [x for b in batches for x in record_products(loss_fn, b, p)] for p in precisions}
    optimizer.zero_grad(set_to_none=True)
    for p in precisions:  # warm-up: kernels built, memory allocated
        for b in batches:
            train_step(loss_fn, optimizer, b, p)
    steps: dict[str, list[float]] = {p: [] for p in precisions}
    alone: dict[str, list[float]] = {p: [] for p in precisions}
    peaks: dict[str, list[float]] = {p: [] for p in precisions}
    for r in range(args.rounds):  # the step, its products alone and the peak in turn
        for p in precisions:
            steps[p].append(sum(train_step(loss_fn, optimizer, b, p) for b in batches))
            alone[p].append(products_alone(products[p]))
            peaks[p].append(matmul_peak(p))
        print(f"round {r + 1}: " + "  ".join(f"{p} {flops[p] / steps[p][-1] / 1e9:.0f} GFLOP/s in the step, "
                                            f"{flops[p] / alone[p][-1] / 1e9:.0f} in its products alone, peak "
                                            f"{peaks[p][-1] / 1e9:.0f}" for p in precisions))
    for p in precisions:
        seconds, peak = statistics.median(steps[p]), max(peaks[p])
        mfu, ceiling = flops[p] / seconds / peak, flops[p] / statistics.median(alone[p]) / peak
        share = statistics.median(a / t for a, t in zip(alone[p], steps[p]))
        print(f"mfu {p}: {mfu:.2f} of the matmul peak (step {seconds / len(batches):.3f} s, "
              f"{flops[p] / len(batches) / 1e9:.0f} GFLOP a step, {flops[p] / seconds / 1e9:.0f} GFLOP/s achieved, "
              f"{peak / 1e9:.0f} GFLOP/s peak)")
        print(f"ceiling {p}: {ceiling:.2f} of the matmul peak (the step's {len(products[p]) // len(batches)} products "
              f"a step alone, at their shapes: {statistics.median(alone[p]) / len(batches):.3f} s a step)")
        print(f"step/ceiling {p}: {share:.2f} (goal 0.85): the products alone take {share:.0%} of the step's time")
    for p in precisions:
        where_time_goes(loss_fn, optimizer, batches, p, args.profile)
    if "bf16" in precisions:
        exact = statistics.median(alone["bf16"]) / len(batches)
        line = ", ".join(f"multiples of {m}: {products_alone(products['bf16'], m) / len(batches):.3f} s"
                         for m in (16, 32))
        print(f"bf16 shapes: the products alone a step at their shapes {exact:.3f} s, rounded up to {line}")
    for p in precisions if args.fresh else ():
        print(fresh_shapes(loss_fn, optimizer, c, args.fresh + 1, p))
    if "bf16" in args.precision and not bf16.value:
        print(f"mfu bf16: not measured ({bf16.reason})")


if __name__ == "__main__":
    main()

"""The training step's share of the CPU's own matrix-product peak, per precision (model FLOPs utilisation).

    python bench/train_mfu.py [--preset small] [--rounds 5] [--batches 4] [--threads N] [--precision fp32 bf16]
                              [--profile 15]

The trainer's step (TokenLoss, cheap dropout, fused Adam, autocast for bf16; `bench/train_throughput.py`'s
"ours", on the same Bible-like batches) alternates, round by round, with square matrix products of the same
precision (2048 x 2048, the best of several, as the peak). The step's FLOPs are counted once by
`torch.utils.flop_counter.FlopCounterMode` (forward + backward; the optimizer's elementwise work is not
counted, as MFU counts only the model's FLOPs). For each precision it prints

    mfu PRECISION: X.XX of the matmul peak (step S s, A GFLOP/s achieved, P GFLOP/s peak)
    ceiling PRECISION: X.XX of the matmul peak (the step's products alone, at their shapes; ...)

The step's and its products' times are medians over rounds, the peak the best round's: this kind of machine
changes speed by 20-40% from one second to the next (one round's peak has been 84 GFLOP/s and the next's 121),
so a round's own ratio says little, and the best peak is what the CPU can do. The ceiling replays every matrix
product the step makes (recorded with their shapes and transposed layouts) one after another with nothing else:
the share of the peak the step would reach if all its other work took no time.

bf16 is measured only where the CPU has native bf16 matrix products (AVX-512 BF16 or AMX); elsewhere torch
emulates them and a share of an emulated peak says nothing, so the line says why it is skipped. --profile N
prints the N operators that take the most time in the step (`torch.profiler`, self CPU time).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
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
from transformer.training.precision import autocast, cpu_bf16_support  # noqa: E402
from transformer.training.recipe import PRESETS, TrainConfig, make_optimizer  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
PEAK_N = 2048  # the square matrix product whose speed is taken as the peak
PEAK_REPEATS = 5


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
    """Records every matrix product of a step: its two operands' shapes and whether each is a transposed view
    (the layout MKL is handed), so that the products can be timed alone."""

    def __init__(self):
        super().__init__()
        self.products: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in PRODUCTS:
            a, b = (args[i] for i in PRODUCTS[func])
            self.products.append(tuple((tuple(t.shape), t.dim() > 1 and t.stride(-2) == 1 and t.size(-2) > 1)
                                       for t in (a, b)))
        return func(*args, **(kwargs or {}))


def operand(shape: tuple, transposed: bool, dtype: torch.dtype) -> torch.Tensor:
    if not transposed:
        return torch.randn(shape, dtype=dtype)
    return torch.randn(*shape[:-2], shape[-1], shape[-2], dtype=dtype).transpose(-2, -1)


def products_alone(loss_fn, batch, precision: str) -> float:
    """Seconds the step's matrix products take one after another outside the step (best of 3 each): the time
    the step could take if nothing but its products ran, at their own shapes and layouts."""
    recorder = ProductRecorder()
    with recorder, autocast(torch.device("cpu"), precision):
        loss = loss_fn(batch)
    with recorder:
        (loss / batch.n_tokens).backward()
    total = 0.0
    for (a_shape, a_t), (b_shape, b_t) in recorder.products:
        a, b = operand(a_shape, a_t, DTYPES[precision]), operand(b_shape, b_t, DTYPES[precision])
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            torch.bmm(a, b) if a.dim() == 3 else torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
        total += best
    return total


def profile(loss_fn, optimizer, batches, precision: str, top: int) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for b in batches:
            train_step(loss_fn, optimizer, b, precision)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="small", choices=["tiny", "small"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=4, help="steps per round")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=list(DTYPES))
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest operators")
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
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}"
          f"; bf16: {bf16.reason}")
    print(f"preset {args.preset}: {sum(p.numel() for p in model.parameters()):,} parameters, {len(batches)} batches "
          f"of {statistics.mean(b.n_tokens for b in batches):.0f} target tokens on average")
    flops = {p: sum(step_flops(loss_fn, b, p) for b in batches) for p in precisions}
    optimizer.zero_grad(set_to_none=True)
    for p in precisions:  # warm-up
        train_step(loss_fn, optimizer, batches[0], p)
    steps: dict[str, list[float]] = {p: [] for p in precisions}
    alone: dict[str, list[float]] = {p: [] for p in precisions}
    peaks: dict[str, list[float]] = {p: [] for p in precisions}
    for r in range(args.rounds):  # the step, its products alone and the peak in turn
        for p in precisions:
            steps[p].append(sum(train_step(loss_fn, optimizer, b, p) for b in batches))
            alone[p].append(sum(products_alone(loss_fn, b, p) for b in batches))
            optimizer.zero_grad(set_to_none=True)
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
        print(f"ceiling {p}: {ceiling:.2f} of the matmul peak (the step's products alone, at their shapes; "
              f"they are {share:.2f} of the step's time)")
    if "bf16" in args.precision and not bf16.value:
        print(f"mfu bf16: not measured ({bf16.reason})")
    for p in precisions if args.profile else ():
        print(f"the {args.profile} costliest operators of the {p} step (self CPU time):")
        profile(loss_fn, optimizer, batches, p, args.profile)


if __name__ == "__main__":
    main()

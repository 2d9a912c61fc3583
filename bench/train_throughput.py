"""Training throughput: our training step against torch.nn.Transformer at the same configuration.

    python bench/train_throughput.py [--preset small] [--rounds 3] [--batches 6] [--threads 1] [--precision fp32 bf16]

Every model gets the same batches (about --target-tokens target tokens each, Bible-like lengths,
length-bucketed as in training), the same embedding, sinusoidal positions, tied output projection,
label-smoothed loss and Adam step. They alternate batch by batch in one process, so that machine noise
hits all of them; each round times forward + backward + optimizer step over --batches batches. For each
precision (bf16: autocast for all of them) it prints tokens/s and the ratios against the reference of
  ours:       the trainer's step (transformer.model.loss.TokenLoss: output projection and loss on real tokens,
              fused backward; cheap dropout masks; fused self-attention QKV; the fused Adam kernel);
  ours-plain: the same model the plain way: logits of every position, F.cross_entropy, torch's dropout and
              torch's default Adam (a loop over the parameters), as the reference;
  ours+attention (with --attention): ours-plain returning every attention map (the explorer's mode).

    python bench/train_throughput.py --beside-busy [--preset small] [--rounds 3]

times the trainer's step ("ours", fp32) in fresh processes, alone and beside a busy torch process that keeps
every core working (matrix products, OpenMP's default wait), alternating alone and beside round by round,
for three ways to run the step: the trainer's plan beside other work (a thread per core, OMP_WAIT_POLICY=PASSIVE,
transformer.training.cores), torch's default (a thread per core, spinning waits) and one thread. It prints
`beside-busy: X.XX of alone` for the trainer's plan: its speed beside the busy process over its speed alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.model.config import ModelConfig  # noqa: E402
from transformer.model.dropout import use_cheap_dropout  # noqa: E402
from transformer.model.layers import Transformer, sinusoidal_encoding  # noqa: E402
from transformer.model.loss import TokenLoss  # noqa: E402
from transformer.training.batching import collate, make_batches  # noqa: E402
from transformer.training.cores import WAIT_POLICY, plan_cores, usable_cores  # noqa: E402
from transformer.training.precision import autocast, cpu_bf16_support  # noqa: E402
from transformer.training.recipe import PRESETS, TrainConfig, make_optimizer  # noqa: E402


class Reference(nn.Module):
    """torch.nn.Transformer with the same embedding, positions and tied output projection as ours."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, c.d_model), persistent=False)
        self.transformer = nn.Transformer(
            c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, c.dropout,
            batch_first=True, norm_first=c.norm_first)
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        self.generator.weight = self.embed.weight

    def forward(self, src, tgt):
        def embed(ids):
            return F.dropout(self.embed(ids) * math.sqrt(self.c.d_model) + self.pe[: ids.size(1)],
                             self.c.dropout, self.training)

        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        out = self.transformer(
            embed(src), embed(tgt), tgt_mask=causal, tgt_is_causal=True,
            src_key_padding_mask=src == self.c.pad_id, tgt_key_padding_mask=tgt == self.c.pad_id,
            memory_key_padding_mask=src == self.c.pad_id)
        return self.generator(out)


def bible_like_lengths(n: int, rng: random.Random) -> list[tuple[int, int]]:
    """Source lengths log-normal around 30 tokens (3..120), targets ~1.15x with noise, like KJV -> Segond."""
    lengths = []
    for _ in range(n):
        s = min(120, max(3, round(rng.lognormvariate(math.log(30), 0.45))))
        lengths.append((s, min(128, max(3, round(s * rng.uniform(0.95, 1.35))))))
    return lengths


def preset_config(preset_name: str, **overrides) -> ModelConfig:
    """A preset's model with its tokenizer's vocabulary on both sides, shared and tied embeddings, as the trainer
    builds it for the Bible-like batches of make_data."""
    preset = PRESETS[preset_name]
    vocab = preset["tokenizer"]["vocab_size"]
    return ModelConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, **preset["model"], max_len=160,
                       share_embeddings=True, tie_output=True, **overrides)


def make_data(c: ModelConfig, target_tokens: int, n_batches: int, seed: int):
    rng = random.Random(seed)
    lengths = bible_like_lengths(6000, rng)
    examples = [([rng.randrange(4, c.src_vocab_size) for _ in range(s - 1)] + [2],
                 [1] + [rng.randrange(4, c.tgt_vocab_size) for _ in range(t - 1)] + [2]) for s, t in lengths]
    budget = int(target_tokens * 1.25)  # the budget counts padded positions of the longer side
    batches = make_batches([(s, t - 1) for s, t in lengths], budget, shuffle=True, seed=seed)
    return [collate([examples[i] for i in b], c.pad_id) for b in batches[:n_batches]]


def plain_loss(forward):
    def loss(b):
        logits = forward(b.src, b.tgt_in)
        return F.cross_entropy(logits.flatten(0, 1).float(), b.tgt_out.flatten(), ignore_index=0, label_smoothing=0.1,
                               reduction="sum")
    return loss


def train_step(loss_fn, optimizer, b, precision: str, before=None) -> float:
    """Seconds of one forward + backward + optimizer step on batch b."""
    start = time.perf_counter()
    if before:
        before()
    with autocast(torch.device("cpu"), precision):
        loss = loss_fn(b)
    optimizer.zero_grad(set_to_none=True)
    (loss / b.n_tokens).backward()
    optimizer.step()
    return time.perf_counter() - start


BUSY = """import torch, sys
torch.set_num_threads(int(sys.argv[1]))
a = torch.randn(768, 768)
print("busy", flush=True)
while True:
    a = torch.tanh(a @ a)
"""


def worker(preset_name: str, n_batches: int) -> None:
    """One process's seconds per trainer step (after a warm-up), printed as JSON: what --beside-busy times."""
    c = preset_config(preset_name)
    batches = make_data(c, PRESETS[preset_name]["train"]["max_tokens"] // 2, n_batches + 1, seed=0)
    torch.manual_seed(0)
    model = Transformer(c).train()
    use_cheap_dropout(model, True)
    token_loss, optimizer = TokenLoss(model), make_optimizer(model, TrainConfig(lr=1e-3))
    step = lambda b: token_loss(b.src, b.tgt_in, b.tgt_out, 0.1)  # noqa: E731
    train_step(step, optimizer, batches[0], "fp32")
    seconds = sum(train_step(step, optimizer, b, "fp32") for b in batches[1:])
    print(json.dumps({"s_per_step": seconds / n_batches, "threads": torch.get_num_threads()}))


def time_worker(args, threads: int, policy: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if k != WAIT_POLICY}
    if policy:
        env[WAIT_POLICY] = policy
    out = subprocess.run([sys.executable, __file__, "--worker", "--preset", args.preset, "--batches", str(args.batches),
                          "--threads", str(threads)], env=env, capture_output=True, text=True, timeout=1800, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["s_per_step"]


def beside_busy(args) -> None:
    cores, busy_threads = usable_cores(), args.busy_threads or usable_cores()
    beside_plan = plan_cores(None, cores, float(busy_threads), shared=False)  # what the trainer picks beside it
    alone_plan = plan_cores(None, cores, 0.0, shared=False)  # and alone
    ways = {(beside_plan.threads, beside_plan.policy): "the trainer's plan beside busy work",
            (alone_plan.threads, alone_plan.policy): "the trainer's plan alone (torch's default)"}
    for way in ((cores, "PASSIVE"), (cores, None), (1, None)):
        ways.setdefault(way, "")
    name = lambda way: f"{way[0]} thread{'s' * (way[0] > 1)}, {way[1] or 'spinning'}"  # noqa: E731
    print(f"torch {torch.__version__}, {cores} usable cores, {platform.processor() or platform.machine()}; preset "
          f"{args.preset}, {args.batches} steps per measurement, the busy process on {busy_threads} threads")
    alone: dict[tuple, list[float]] = {w: [] for w in ways}
    beside: dict[tuple, list[float]] = {w: [] for w in ways}
    for r in range(args.rounds):
        for way in ways:
            alone[way].append(time_worker(args, *way))
            busy = subprocess.Popen([sys.executable, "-c", BUSY, str(busy_threads)], stdout=subprocess.PIPE, text=True)
            try:
                busy.stdout.readline()  # it has started its products
                beside[way].append(time_worker(args, *way))
            finally:
                busy.kill()
                busy.wait(timeout=30)
            print(f"round {r + 1} {name(way)}: alone {alone[way][-1]:.3f} s/step, beside busy {beside[way][-1]:.3f} "
                  "s/step")
    best_alone = min(statistics.median(v) for v in alone.values())
    for way, note in ways.items():
        a, b = statistics.median(alone[way]), statistics.median(beside[way])
        print(f"{name(way):>20}: alone {a:.3f} s/step ({best_alone / a:.2f} of the fastest alone), beside busy "
              f"{b:.3f} s/step ({a / b:.2f} of its speed alone){'  <- ' + note if note else ''}")
    a, b = statistics.median(alone[alone_plan.threads, alone_plan.policy]), \
        statistics.median(beside[beside_plan.threads, beside_plan.policy])
    print(f"beside-busy: {a / b:.2f} of alone (the trainer's plan beside the busy process over its plan alone)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--beside-busy", action="store_true", help="time the step alone and beside a busy process")
    parser.add_argument("--busy-threads", type=int, default=None,
                        help="threads of the busy process (default: every usable core)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=6, help="batches per round")
    parser.add_argument("--preset", default="small", choices=["tiny", "small"], help="the training preset's model")
    parser.add_argument("--target-tokens", type=int, default=None,
                        help="target tokens per batch (default: half the preset's max_tokens, as in training)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    parser.add_argument("--attention", action="store_true", help="also time ours returning every attention map")
    parser.add_argument("--post-ln", action="store_true", help="the paper's post-LN for both (default pre-LN)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.worker or args.beside_busy:
        return worker(args.preset, args.batches) if args.worker else beside_busy(args)
    c = preset_config(args.preset, norm_first=not args.post_ln)
    batches = make_data(c, args.target_tokens or PRESETS[args.preset]["train"]["max_tokens"] // 2, args.batches,
                        seed=0)
    torch.manual_seed(0)
    ours, reference = Transformer(c).train(), Reference(c).train()
    token_loss = TokenLoss(ours)

    def adam(model):
        return torch.optim.Adam(model.parameters(), betas=(0.9, 0.98))

    def ours_adam(model):  # the trainer's: one fused kernel for every parameter
        return make_optimizer(model, TrainConfig(lr=1e-3))

    # name -> (loss of a batch, optimizer, what to switch before each batch: ours is one model run two ways)
    runs = {
        "ours": (lambda b: token_loss(b.src, b.tgt_in, b.tgt_out, 0.1), ours_adam(ours),
                 lambda: use_cheap_dropout(ours, True)),
        "ours-plain": (plain_loss(lambda s, t: ours(s, t).logits), adam(ours), lambda: use_cheap_dropout(ours, False)),
        "reference": (plain_loss(reference), adam(reference), None),
    }
    if args.attention:
        runs["ours+attention"] = (plain_loss(lambda s, t: ours(s, t, return_attention=True).logits), adam(ours),
                                  lambda: use_cheap_dropout(ours, False))
    cpu = platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {cpu}; bf16: {cpu_bf16_support().reason}")
    print(f"preset {args.preset}: d_model {c.d_model}, {c.n_heads} heads, {c.n_encoder_layers}+{c.n_decoder_layers} "
          f"layers, d_ff {c.d_ff}, "
          f"vocab {c.tgt_vocab_size} shared, {'pre' if c.norm_first else 'post'}-LN; {len(batches)} batches of "
          f"{statistics.mean(b.n_tokens for b in batches):.0f} target tokens on average")
    for precision in args.precision:
        for loss_fn, optimizer, before in runs.values():  # warm-up
            train_step(loss_fn, optimizer, batches[0], precision, before)
    rates: dict[tuple[str, str], list[float]] = {}
    tokens = sum(b.n_tokens for b in batches)
    for r in range(args.rounds):
        seconds = {key: 0.0 for key in ((p, n) for p in args.precision for n in runs)}
        for b in batches:  # every run steps on a batch before the next batch: a load change hits them all
            for precision in args.precision:
                for name, (loss_fn, optimizer, before) in runs.items():
                    seconds[precision, name] += train_step(loss_fn, optimizer, b, precision, before)
        for key, value in seconds.items():
            rates.setdefault(key, []).append(tokens / value)
        for precision in args.precision:
            print(f"round {r + 1} {precision}: " + "  ".join(f"{n} {rates[precision, n][-1]:,.0f} tok/s" for n in runs))
    median = {key: statistics.median(v) for key, v in rates.items()}
    for precision in args.precision:
        print(f"{precision}:")
        for name in runs:
            print(f"  {name:>15}: {median[precision, name]:>8,.0f} target tokens/s (median of {args.rounds} rounds)")
        for name in runs:
            if name != "reference":
                ratio = median[precision, name] / median[precision, "reference"]
                print(f"  ratio {name} / nn.Transformer: {ratio:.2f}")
        print(f"  ratio ours / ours-plain: {median[precision, 'ours'] / median[precision, 'ours-plain']:.2f}")
    if len(args.precision) == 2:
        print("ratio ours bf16 / nn.Transformer fp32: "
              f"{median['bf16', 'ours'] / median['fp32', 'reference']:.2f}")


if __name__ == "__main__":
    main()

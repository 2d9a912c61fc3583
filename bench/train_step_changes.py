"""The training step with issue 28's changes undone and done, in one process, round by round.

    python bench/train_step_changes.py [--rounds 24] [--batches 2] [--threads N] [--changes before,after,...]

Three changes to the small preset's fp32 step, each undone here by putting the code it replaced back in place:
- dropout: `x.masked_fill(mask, 0).mul_(scale)` under autograd (five passes), against a scaling and a fill in
  place each way (`transformer.model.dropout.DropoutFunction`);
- attention: SDPA with its own dropout (its math path with Bernoulli draws on a CPU), against the written-out
  attention with cheap masks;
- loss: the whole (N, V) logits, then the log-softmax and its hand-written gradient, against the chunked
  projection + loss with both gradients taken in forward (`transformer.model.loss`).

Every round times each configuration's steps (the same batches, one model and optimizer) back to back, and
prints the median of the rounds' own ratios, "before" over each configuration: this kind of machine changes
speed by 20-30% from one minute to the next, and only ratios measured side by side stay put.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_throughput import make_data, preset_config, train_step  # noqa: E402

import transformer.model.attention as attention  # noqa: E402
import transformer.model.dropout as dropout  # noqa: E402
import transformer.model.loss as loss  # noqa: E402
from transformer.model.layers import Transformer  # noqa: E402
from transformer.model.loss import TokenLoss  # noqa: E402
from transformer.training.recipe import PRESETS, TrainConfig, make_optimizer  # noqa: E402


def masked_fill_dropout(x, p):
    """The dropout before: five passes over x, forward and backward."""
    drop, scale = dropout.drop_mask(x.shape, p, x.device)
    return x.masked_fill(drop, 0.0).mul_(scale)


def sdpa_attention(q, k, v, mask, *, dropout_p=0.0, need_weights=False):
    """The training attention before: SDPA's own dropout (the step never asks for weights)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None


class WholeLogitsCrossEntropy(torch.autograd.Function):
    """The loss before: log-softmax of the whole (N, V) logits, its gradient in backward."""

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        log_probs = torch.log_softmax(logits, dim=-1, dtype=torch.float32)  # (N, V)
        ctx.save_for_backward(log_probs, target)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        return loss.smoothed_nll(log_probs, target, smoothing)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        log_probs, target = ctx.saved_tensors
        return loss.logits_grad_(log_probs, target, ctx.smoothing).mul_(grad).to(ctx.dtype), None, None


def whole_logits_loss(states, weight, target, smoothing=0.0, chunk_rows=0):
    return WholeLogitsCrossEntropy.apply(F.linear(states, weight), target, smoothing)


NOW = {"dropout": dropout.cheap_dropout, "attention": attention.attention, "loss": loss.projected_cross_entropy_sum}
BEFORE = {"dropout": masked_fill_dropout, "attention": sdpa_attention, "loss": whole_logits_loss}
CONFIGS = {"before": BEFORE, "after": NOW, "only dropout": {**BEFORE, "dropout": NOW["dropout"]},
           "only attention": {**BEFORE, "attention": NOW["attention"]}, "only loss": {**BEFORE, "loss": NOW["loss"]}}


def use(functions: dict) -> None:
    """Put these implementations where the model looks them up."""
    dropout.cheap_dropout = attention.cheap_dropout = functions["dropout"]
    attention.attention = functions["attention"]
    loss.projected_cross_entropy_sum = functions["loss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--batches", type=int, default=2, help="steps per configuration and round")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--changes", default="before,after", help=f"comma-separated, of: {', '.join(CONFIGS)}")
    args = parser.parse_args()
    names = ["before"] + [n for n in args.changes.split(",") if n != "before"]
    if unknown := [n for n in names if n not in CONFIGS]:
        parser.error(f"unknown configuration {unknown[0]!r}; choose from {', '.join(CONFIGS)}")
    if args.threads:
        torch.set_num_threads(args.threads)
    c = preset_config("small")
    batches = make_data(c, PRESETS["small"]["train"]["max_tokens"] // 2, args.batches, seed=0)
    torch.manual_seed(0)
    model = Transformer(c).train()
    token_loss, optimizer = TokenLoss(model), make_optimizer(model, TrainConfig(lr=1e-4))
    loss_fn = lambda b: token_loss(b.src, b.tgt_in, b.tgt_out, 0.1)  # noqa: E731
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; small preset, fp32, {len(batches)} batches "
          f"of {statistics.mean(b.n_tokens for b in batches):.0f} target tokens")
    for name in names:  # warm-up
        use(CONFIGS[name])
        train_step(loss_fn, optimizer, batches[0], "fp32")
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            use(CONFIGS[name])
            seconds[name].append(sum(train_step(loss_fn, optimizer, b, "fp32") for b in batches) / len(batches))
    use(NOW)
    print(f"{'before':>15}: {statistics.median(seconds['before']):.3f} s a step")
    for name in names[1:]:
        ratios = [b / t for b, t in zip(seconds["before"], seconds[name])]
        print(f"{name:>15}: {statistics.median(seconds[name]):.3f} s a step, {statistics.median(ratios):.3f}x "
              f"before's speed (faster in {sum(r > 1 for r in ratios)} of {len(ratios)} rounds)")


if __name__ == "__main__":
    main()

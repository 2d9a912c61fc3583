"""Token-budget batching: group examples of similar length so batches carry little padding.

A batch's cost is what the padded tensors hold, `n_examples * max(longest src, longest tgt)`,
so a fixed `max_tokens` gives roughly constant memory per step whatever the sentence lengths.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Batch:
    src: torch.Tensor  # (B, S) long, right-padded
    tgt_in: torch.Tensor  # (B, T) long: start w1 .. wn, what the decoder reads
    tgt_out: torch.Tensor  # (B, T) long: w1 .. wn </s>, what it must predict
    n_tokens: int  # non-pad tokens in tgt_out, the loss normaliser


def make_batches(lengths: list[tuple[int, int]], max_tokens: int, *, shuffle: bool,
                 seed: int) -> list[list[int]]:
    """Indices of `lengths` ((src_len, tgt_len) per example) grouped into batches within budget.

    Examples are sorted by (src, tgt) length, so that neighbours pad little, and packed greedily;
    one longer than `max_tokens` gets a batch of its own. With `shuffle`, ties are broken at random
    and the batch order is shuffled, both from `seed`, so each epoch can differ but reruns agree.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    rng = random.Random(seed)
    tie = [rng.random() if shuffle else 0.0 for _ in lengths]
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i][0], lengths[i][1], tie[i], i))
    batches: list[list[int]] = []
    batch: list[int] = []
    width = 0  # the longest side so far in `batch`
    for i in order:
        longest = max(lengths[i])
        if batch and (len(batch) + 1) * max(width, longest) > max_tokens:
            batches.append(batch)
            batch, width = [], 0
        batch.append(i)
        width = max(width, longest)
    if batch:
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


def collate(examples: list[tuple[list[int], list[int]]], pad_id: int) -> Batch:
    """Pad (source ids, `start .. </s>` target ids) pairs with pad_id (the tokenizer's) into a teacher-forcing
    batch."""
    if not examples:
        raise ValueError("cannot collate an empty batch")
    if any(len(tgt) < 2 for _, tgt in examples):
        raise ValueError("target ids need at least the start token and </s>")
    S = max(len(src) for src, _ in examples)
    T = max(len(tgt) for _, tgt in examples) - 1  # the shift drops one position
    src = torch.full((len(examples), S), pad_id, dtype=torch.long)
    tgt_in = torch.full((len(examples), T), pad_id, dtype=torch.long)
    tgt_out = torch.full((len(examples), T), pad_id, dtype=torch.long)
    for row, (s, t) in enumerate(examples):
        src[row, :len(s)] = torch.tensor(s, dtype=torch.long)
        tgt_in[row, :len(t) - 1] = torch.tensor(t[:-1], dtype=torch.long)
        tgt_out[row, :len(t) - 1] = torch.tensor(t[1:], dtype=torch.long)
    return Batch(src, tgt_in, tgt_out, n_tokens=int((tgt_out != pad_id).sum()))

import random

import pytest
import torch

from transformer.training.batching import collate, make_batches


def realistic_lengths(n: int, seed: int = 0) -> list[tuple[int, int]]:
    """Source 3..80 tokens, target correlated with it as in a real translation corpus."""
    rng = random.Random(seed)
    lengths = []
    for _ in range(n):
        src = rng.randint(3, 80)
        lengths.append((src, max(3, round(src * 1.15 + rng.gauss(0, 3)))))
    return lengths


def cost(batch: list[int], lengths: list[tuple[int, int]]) -> int:
    return len(batch) * max(max(lengths[i]) for i in batch)


@pytest.mark.parametrize("shuffle", [True, False])
def test_budget_respected_and_every_index_once(shuffle):
    lengths = realistic_lengths(2000) + [(500, 20), (10, 700)]  # two longer than the budget
    batches = make_batches(lengths, max_tokens=400, shuffle=shuffle, seed=1)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lengths)))
    for batch in batches:
        assert cost(batch, lengths) <= 400 or len(batch) == 1


def test_deterministic_for_a_seed_and_varies_across_seeds():
    lengths = realistic_lengths(500)
    first = make_batches(lengths, 600, shuffle=True, seed=3)
    assert first == make_batches(lengths, 600, shuffle=True, seed=3)
    assert first != make_batches(lengths, 600, shuffle=True, seed=4)


def test_padding_fraction_small():
    lengths = realistic_lengths(5000)
    padded = real = 0
    for batch in make_batches(lengths, 2000, shuffle=True, seed=0):
        S = max(lengths[i][0] for i in batch)
        T = max(lengths[i][1] for i in batch)
        padded += len(batch) * (S + T)
        real += sum(sum(lengths[i]) for i in batch)
    assert 1 - real / padded < 0.15


def test_collate_shapes_shift_and_padding():
    examples = [([5, 6, 7, 2], [1, 8, 9, 2]), ([5, 2], [1, 8, 9, 10, 11, 2])]
    batch = collate(examples, 0)
    assert batch.src.shape == (2, 4) and batch.src.dtype == torch.long
    assert batch.tgt_in.shape == batch.tgt_out.shape == (2, 5)
    assert batch.src[1].tolist() == [5, 2, 0, 0]
    assert batch.tgt_in[0].tolist() == [1, 8, 9, 0, 0]
    assert batch.tgt_out[0].tolist() == [8, 9, 2, 0, 0]
    assert batch.tgt_in[1].tolist() == [1, 8, 9, 10, 11]
    assert batch.tgt_out[1].tolist() == [8, 9, 10, 11, 2]
    assert batch.n_tokens == 3 + 5


def test_collate_pads_with_the_tokenizers_pad_id_even_when_it_is_also_the_start():
    """Marian-like: pad = start = 99 (the last id), </s> = 0; the start token is no padding to the loss."""
    batch = collate([([5, 6, 0], [99, 8, 9, 0]), ([5, 0], [99, 8, 0])], 99)
    assert batch.src[1].tolist() == [5, 0, 99]
    assert batch.tgt_in.tolist() == [[99, 8, 9], [99, 8, 99]]
    assert batch.tgt_out.tolist() == [[8, 9, 0], [8, 0, 99]]
    assert batch.n_tokens == 3 + 2


def test_collate_rejects_targets_without_bos_eos():
    with pytest.raises(ValueError):
        collate([([5, 2], [1])], 0)

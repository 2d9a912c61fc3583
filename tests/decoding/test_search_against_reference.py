"""The fast decoding paths against the plain ones: the same hypotheses, scores and recorded steps; and the pieces
they are made of (the blocked top-k, the output projection's row-major product, the KV cache's room)."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from tests.beam_reference import ReferenceBeamSearch
from tests.conftest import SPECIALS, random_batch, tiny_config
from transformer import Transformer
from transformer.decoding.beam import BLOCK, best_of_rows
from transformer.decoding.search import BeamSearch, SearchSettings, greedy_decode
from transformer.model.attention import extend
from transformer.model.linear import ROW_MAJOR_ROWS, Linear


def run(search, record):
    steps = [[] for _ in search.src_lengths]
    while not search.done:
        for b, step in search.step(record).items():
            steps[b].append(step)
    return search.results(), steps


@pytest.fixture(scope="module", params=[1, 2])
def model(request) -> Transformer:
    torch.manual_seed(request.param)
    return Transformer(tiny_config(tgt_vocab_size=23)).eval()


@pytest.mark.parametrize("settings", [
    SearchSettings(beam_size=2, nbest=2),
    SearchSettings(beam_size=3, nbest=3, alpha=0.0, record_steps=True),
    SearchSettings(beam_size=5, nbest=5, length_penalty="length", alpha=1.0),
    SearchSettings(beam_size=4, nbest=2, max_len_a=0.5, max_len_b=2, record_steps=True),  # stopped at the limit
    SearchSettings(beam_size=8, nbest=8, record_steps=True),  # 2K = 16 of a 23-token vocabulary
])
def test_fast_beam_search_equals_the_reference(model, settings):
    src = random_batch(model.config, B=4, S=8, seed=3)[0]  # right-padded: sentences leave the batch at different steps
    fast, fast_steps = run(BeamSearch(model, src, settings, specials=SPECIALS), settings.record_steps)
    ref, ref_steps = run(ReferenceBeamSearch(model, src, settings, specials=SPECIALS), settings.record_steps)
    for f, r in zip(fast, ref, strict=True):
        assert [h.tokens for h in f.hypotheses] == [h.tokens for h in r.hypotheses]
        assert [h.finished for h in f.hypotheses] == [h.finished for h in r.hypotheses]
        for fh, rh in zip(f.hypotheses, r.hypotheses):
            assert fh.log_probs == pytest.approx(rh.log_probs, abs=1e-6)
            assert fh.normalized_score == pytest.approx(rh.normalized_score, abs=1e-6)
    for fs, rs in zip(fast_steps, ref_steps, strict=True):
        assert len(fs) == len(rs)
        for f_step, r_step in zip(fs, rs):
            assert [(n.parent, n.token, n.status, n.slot) for n in f_step.nodes] == \
                [(n.parent, n.token, n.status, n.slot) for n in r_step.nodes]
            assert [n.score for n in f_step.nodes] == pytest.approx([n.score for n in r_step.nodes], abs=1e-6)
            for fl, rl in zip(f_step.live, r_step.live, strict=True):
                assert fl.prefix == rl.prefix and fl.candidates == rl.candidates
                torch.testing.assert_close(fl.cross_attention, rl.cross_attention)
                torch.testing.assert_close(fl.self_attention, rl.self_attention)


def test_cached_greedy_equals_recomputing_the_prefix_on_long_outputs(model):
    src = random_batch(model.config, B=3, S=20, seed=5)[0]
    settings = SearchSettings(max_len_a=0.0, max_len_b=60)  # long outputs: the cache holds up to 60 positions
    cached = greedy_decode(model, src, settings, specials=SPECIALS)
    uncached = greedy_decode(model, src, settings, specials=SPECIALS, use_cache=False)
    for c, u in zip(cached, uncached, strict=True):
        assert c.best.tokens == u.best.tokens
        assert c.best.log_probs == pytest.approx(u.best.log_probs, abs=1e-5)
    assert max(len(c.best.tokens) for c in cached) >= 20


@pytest.mark.parametrize("rows", [1, 2, 5, 8, 9, 32, 129])
def test_a_cached_step_of_any_batch_size_gives_the_teacher_forced_logits(model, rows):
    """A step's projection takes another product for 4 to 128 rows (a beam); it must give the same logits."""
    src, tgt = random_batch(model.config, B=rows, S=6, T=4, seed=rows)
    tgt[:, 1:] = torch.randint(4, model.config.tgt_vocab_size, (rows, 3), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        memory = model.encode(src).memory
        cache = model.start_cache(memory, src)
        for t in range(tgt.size(1)):
            out = model.decode_step(tgt[:, t], cache)
            cache = out.cache
        expected = model.decode(tgt, memory, src).logits[:, -1]  # (rows, V)
    torch.testing.assert_close(out.logits, expected, rtol=1e-5, atol=1e-5)


@torch.inference_mode()
def test_a_beam_step_of_few_rows_equals_the_teacher_forced_pass(model):
    """A beam's cached step projects its few rows to the vocabulary with a row-major copy of the weight: its logits
    are the full pass's."""
    src, _ = random_batch(model.config, B=1, S=7)
    cache = model.start_cache(model.encode(src).memory, src).reorder(torch.zeros(5, dtype=torch.long))
    tokens = torch.tensor([[1, 5, 9], [1, 6, 4], [1, 7, 7], [1, 8, 3], [1, 5, 10]])  # (5, 3)
    for t in range(tokens.size(1)):
        out = model.decode_step(tokens[:, t], cache)
        cache = out.cache
    assert model.generator._row_major is not None  # the row-major product ran
    full = model.decode(tokens, model.encode(src).memory.expand(5, -1, -1), src.expand(5, -1)).logits[:, -1]
    torch.testing.assert_close(out.logits, full, rtol=1e-5, atol=1e-5)


def test_a_beam_over_a_large_vocabulary_equals_the_reference():
    """K x V = 4 x 1,100 continuations take the blocked top-k (with a last, shorter block): the same search."""
    torch.manual_seed(3)
    model = Transformer(tiny_config(tgt_vocab_size=1100)).eval()
    assert model.config.tgt_vocab_size * 4 >= 8 * 8 * BLOCK and model.config.tgt_vocab_size % BLOCK
    src = random_batch(model.config, B=3, S=8, seed=4)[0]
    settings = SearchSettings(beam_size=4, nbest=4, record_steps=True)
    fast, fast_steps = run(BeamSearch(model, src, settings, specials=SPECIALS), True)
    ref, ref_steps = run(ReferenceBeamSearch(model, src, settings, specials=SPECIALS), True)
    for f, r in zip(fast, ref, strict=True):
        assert [h.tokens for h in f.hypotheses] == [h.tokens for h in r.hypotheses]
        assert [h.score for h in f.hypotheses] == pytest.approx([h.score for h in r.hypotheses], abs=1e-6)
    assert [[[(n.parent, n.token, n.status) for n in step.nodes] for step in steps] for steps in fast_steps] == \
        [[[(n.parent, n.token, n.status) for n in step.nodes] for step in steps] for steps in ref_steps]


@pytest.mark.parametrize("n", [64 * BLOCK, 100 * BLOCK + 7, 40_000])
def test_best_of_rows_is_topk(n):
    """The blocked top-k gives topk's values and columns, whole rows of -inf included (a beam's empty slots)."""
    g = torch.Generator().manual_seed(n)
    x = torch.randn(4, n, generator=g)
    x[1] = -math.inf
    x[2, ::3] = -math.inf  # tokens never emitted
    x[3, 5 * BLOCK: 6 * BLOCK] += 10  # the best ten in one block
    values, columns = best_of_rows(x, 10)
    expected = x.topk(10, dim=-1)
    torch.testing.assert_close(values, expected.values, rtol=0, atol=0)
    assert torch.equal(columns[[0, 2, 3]], expected.indices[[0, 2, 3]])  # row 1: ten -inf, any columns
    assert torch.equal(x.gather(1, columns), values)


def test_the_row_major_product_equals_linear_and_follows_the_weight():
    torch.manual_seed(0)
    layer = Linear(32, 300)
    plain = torch.nn.Linear(32, 300)
    plain.load_state_dict(layer.state_dict())
    for rows in (1, 3, ROW_MAJOR_ROWS[0], 5, ROW_MAJOR_ROWS[1], ROW_MAJOR_ROWS[1] + 1):
        x = torch.randn(rows, 1, 32)
        with torch.inference_mode():
            torch.testing.assert_close(layer(x), plain(x), rtol=1e-5, atol=1e-5)
        assert (layer._row_major is not None) == (rows >= ROW_MAJOR_ROWS[0]), rows
    x = torch.randn(6, 32)
    with torch.no_grad():  # an in-place change of the weight (training, an intervention): a new copy
        layer.weight.mul_(2)
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), rtol=1e-5, atol=1e-5)
    assert copy.deepcopy(layer)._row_major is None  # a copy's weight is a new tensor
    layer(x).sum().backward()  # under autograd: F.linear, and its gradient
    assert layer.weight.grad is not None and layer.weight.grad.shape == (300, 32)


@torch.inference_mode()
def test_a_second_step_from_one_cache_copies_and_leaves_the_first_intact(model):
    """A step writes its position into the cache's buffer; a second step from the same cache must not write over
    the first step's position, and a cache's keys and values never change."""
    src, _ = random_batch(model.config, B=2, S=6)
    cache = model.start_cache(model.encode(src).memory, src, capacity=3)
    for token in (1, 5):
        cache = model.decode_step(torch.tensor([token, token]), cache).cache
    first = model.decode_step(torch.tensor([6, 7]), cache)
    keys = first.cache.self_kv[0][0].clone()
    assert first.cache.room is cache.room  # written in place
    second = model.decode_step(torch.tensor([9, 10]), cache)  # the same prefix, another token
    assert second.cache.room is not cache.room  # copied
    assert torch.equal(first.cache.self_kv[0][0], keys)
    again = model.decode_step(torch.tensor([6, 7]), cache)
    torch.testing.assert_close(again.logits, first.logits, rtol=0, atol=0)
    longer = model.decode_step(torch.tensor([8, 8]), first.cache)  # position 3: past the capacity, grows
    assert longer.cache.room.capacity > 3
    expected = model.decode(torch.tensor([[1, 5, 6, 8], [1, 5, 7, 8]]), model.encode(src).memory, src).logits[:, -1]
    torch.testing.assert_close(longer.logits, expected, rtol=1e-5, atol=1e-5)


def test_extend_refuses_a_past_without_room():
    past = torch.zeros(2, 4, 3, 8)  # (B, H, T, Dh) with no room after it
    with pytest.raises(ValueError, match="no room after the 3 cached positions"):
        extend(past, torch.zeros(2, 4, 1, 8))
    buffer = torch.zeros(2, 4, 5, 8)
    longer = extend(buffer[:, :, :3], torch.ones(2, 4, 1, 8))
    assert longer.shape == (2, 4, 4, 8) and longer.data_ptr() == buffer.data_ptr() and buffer[:, :, 3].eq(1).all()

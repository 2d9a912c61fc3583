"""The fast decoding paths against the plain ones: the same hypotheses, scores and recorded steps."""

import pytest
import torch

from tests.beam_reference import ReferenceBeamSearch
from tests.conftest import SPECIALS, random_batch, tiny_config
from transformer import Transformer
from transformer.decoding.search import BeamSearch, SearchSettings, greedy_decode


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


@pytest.mark.parametrize("rows", [1, 2, 5, 8, 9, 32])
def test_a_cached_step_of_any_batch_size_gives_the_teacher_forced_logits(model, rows):
    """A step's projection takes another product for 2 to 8 rows (a beam); it must give the same logits."""
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


def test_a_beam_step_of_few_rows_equals_the_teacher_forced_pass(model):
    """A beam's cached step projects its few rows to the vocabulary as (W h^T)^T: its logits are the full pass's."""
    src, _ = random_batch(model.config, B=1, S=7)
    cache = model.start_cache(model.encode(src).memory, src).reorder(torch.zeros(5, dtype=torch.long))
    tokens = torch.tensor([[1, 5, 9], [1, 6, 4], [1, 7, 7], [1, 8, 3], [1, 5, 10]])  # (5, 3)
    for t in range(tokens.size(1)):
        out = model.decode_step(tokens[:, t], cache)
        cache = out.cache
    full = model.decode(tokens, model.encode(src).memory.expand(5, -1, -1), src.expand(5, -1)).logits[:, -1]
    torch.testing.assert_close(out.logits, full, rtol=1e-5, atol=1e-5)

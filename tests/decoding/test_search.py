import math

import pytest
import torch

from tests.conftest import SPECIALS, random_batch, tiny_config
from transformer import Transformer
from transformer.decoding.search import SearchSettings, beam_search, greedy_decode, length_penalty, search
from transformer.decoding.session import DecodingSession
from transformer.model.layers import DecoderCache, EncoderOutput, StepOutput, padding_mask

A = 4  # the one real token of ScriptedModel


@pytest.fixture(scope="module")
def model() -> Transformer:
    torch.manual_seed(1)  # a seed whose outputs mix </s>-ended and length-limited hypotheses
    return Transformer(tiny_config()).eval()


@pytest.fixture(scope="module")
def src(model) -> torch.Tensor:
    return random_batch(model.config, B=3, S=7)[0]  # right-padded: lengths 7, 6, 5


def teacher_forced(model, src_row: torch.Tensor, tokens: list[int]):
    """Log-probabilities of tokens and the attention maps of one sentence, by one full forward pass."""
    src = src_row[src_row != 0][None]  # (1, S) without padding
    tgt = torch.tensor([[SPECIALS.start] + tokens[:-1]])  # (1, T)
    with torch.no_grad():
        out = model(src, tgt, return_attention=True)
    logp = out.logits[0].log_softmax(-1)  # (T, V)
    return logp[torch.arange(len(tokens)), tokens].tolist(), out.attention


def test_beam_size_one_equals_greedy(model, src):
    greedy = greedy_decode(model, src, specials=SPECIALS)
    beam = beam_search(model, src, SearchSettings(beam_size=1), specials=SPECIALS)
    for g, b in zip(greedy, beam, strict=True):
        assert b.best.tokens == g.best.tokens and b.best.finished == g.best.finished
        assert b.best.log_probs == pytest.approx(g.best.log_probs, abs=1e-5)
    assert {g.best.finished for g in greedy} == {True, False}  # both ways of ending are covered


def test_cached_equals_recomputing_the_prefix(model, src):
    settings = SearchSettings(record_steps=True)
    cached = greedy_decode(model, src, settings, specials=SPECIALS)
    uncached = greedy_decode(model, src, settings, specials=SPECIALS, use_cache=False)
    for c, u in zip(cached, uncached, strict=True):
        assert c.best.tokens == u.best.tokens
        assert c.best.log_probs == pytest.approx(u.best.log_probs, abs=1e-5)
        for cs, us in zip(c.steps, u.steps, strict=True):
            torch.testing.assert_close(cs.live[0].self_attention, us.live[0].self_attention)
            torch.testing.assert_close(cs.live[0].cross_attention, us.live[0].cross_attention)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_batch_decodes_like_each_sentence_alone(model, src, beam_size):
    settings = SearchSettings(beam_size=beam_size, nbest=beam_size)
    batched = search(model, src, settings, specials=SPECIALS)
    for b in range(src.size(0)):
        alone = search(model, src[b : b + 1, : int((src[b] != 0).sum())], settings, specials=SPECIALS)[0]
        assert [h.tokens for h in alone.hypotheses] == [h.tokens for h in batched[b].hypotheses]


def test_nbest_is_sorted_distinct_and_scored_like_a_teacher_forced_pass(model, src):
    results = beam_search(model, src, SearchSettings(beam_size=5, nbest=5), specials=SPECIALS)
    for b, result in enumerate(results):
        scores = [h.normalized_score for h in result.hypotheses]
        assert len(result.hypotheses) == 5 and scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in result.hypotheses}) == 5
        for h in result.hypotheses:
            assert h.finished == (h.tokens[-1] == SPECIALS.eos) and SPECIALS.eos not in h.tokens[:-1]
            log_probs, _ = teacher_forced(model, src[b], h.tokens)
            assert h.log_probs == pytest.approx(log_probs, abs=1e-4)
            assert h.score == pytest.approx(sum(log_probs), abs=1e-4)


def test_beam_search_is_at_least_as_good_as_greedy_without_length_penalty(model, src):
    greedy = greedy_decode(model, src, SearchSettings(alpha=0.0), specials=SPECIALS)
    beam = beam_search(model, src, SearchSettings(beam_size=4, alpha=0.0), specials=SPECIALS)
    for g, b in zip(greedy, beam):
        if g.best.finished:
            assert b.best.score >= g.best.score - 1e-5


def test_max_length_is_respected(model, src):
    settings = SearchSettings(beam_size=3, nbest=3, max_len_a=0.5, max_len_b=1)  # floor(0.5 * S + 1)
    results = beam_search(model, src, settings, specials=SPECIALS)
    for b, result in enumerate(results + greedy_decode(model, src, settings, specials=SPECIALS)):
        limit = math.floor(0.5 * int((src[b % 3] != 0).sum()) + 1)
        assert all(len(h.tokens) <= limit for h in result.hypotheses)
        assert any(len(h.tokens) == limit and not h.finished for h in result.hypotheses)
    short = Transformer(tiny_config(max_len=3)).eval()  # the positions the model knows cap the output too
    results = greedy_decode(short, src[:, :3], SearchSettings(max_len_b=50), specials=SPECIALS)
    assert all(len(r.best.tokens) <= 3 for r in results)


class ScriptedModel:
    """A decoder whose next-token distribution depends on the last token only: <s> -> {</s>: .4, A: .6},
    A -> {</s>: .6, A: .4}. So "</s>" scores log .4, "A </s>" log .36 and "A A </s>" log .144."""

    training = False
    table = {SPECIALS.start: {SPECIALS.eos: 0.4, A: 0.6}, A: {SPECIALS.eos: 0.6, A: 0.4}}

    def __init__(self):
        self.config = tiny_config(src_vocab_size=5, tgt_vocab_size=5)

    def encode(self, src, return_attention=False):
        return EncoderOutput(torch.zeros(*src.shape, 4), None)

    def start_cache(self, memory, src):
        return DecoderCache(src.new_zeros(src.size(0), 0), (), (), padding_mask(src, 0))

    def decode_step(self, token, cache, return_attention=False, project=True):
        logits = torch.full((token.size(0), 5), -math.inf)
        for row, last in enumerate(token.tolist()):
            for next_token, p in self.table.get(last, {SPECIALS.eos: 1.0}).items():  # empty beam slots feed </s>
                logits[row, next_token] = math.log(p)
        tokens = torch.cat([cache.tokens, token[:, None]], dim=1)
        return StepOutput(logits, DecoderCache(tokens, (), (), cache.src_mask), None, None)


def test_only_an_end_among_the_beam_size_best_finishes_a_hypothesis():
    """With one beam, "</s>" (.4) ranks second after <s>: greedy, not a finished beam, so "A </s>" wins."""
    src = torch.tensor([[5, 6, SPECIALS.eos]])
    (beam,) = beam_search(ScriptedModel(), src, SearchSettings(beam_size=1, record_steps=True), specials=SPECIALS)
    greedy = greedy_decode(ScriptedModel(), src, specials=SPECIALS)[0]
    assert beam.best.tokens == greedy.best.tokens == [A, SPECIALS.eos]
    assert [(n.token, n.status) for n in beam.steps[0].nodes] == [(A, "live"), (SPECIALS.eos, "pruned")]


def test_length_penalty_formulas():
    gnmt, plain = SearchSettings(alpha=0.5), SearchSettings(alpha=0.5, length_penalty="length")
    assert length_penalty(7, gnmt) == pytest.approx(2**0.5) and length_penalty(9, plain) == pytest.approx(3)
    assert length_penalty(7, SearchSettings(alpha=0.0)) == 1


@pytest.mark.parametrize(("penalty", "alpha", "best"), [
    ("gnmt", 0.0, [SPECIALS.eos]),  # -0.92 beats -1.02
    ("gnmt", 1.0, [A, SPECIALS.eos]),  # -1.02 / (7/6) = -0.88 beats -0.92 / 1
    ("length", 1.0, [A, SPECIALS.eos]),  # -1.02 / 2 = -0.51 beats -0.92
])
def test_the_length_penalty_reranks_a_constructed_case(penalty, alpha, best):
    settings = SearchSettings(beam_size=3, nbest=3, alpha=alpha, length_penalty=penalty)
    result = beam_search(ScriptedModel(), torch.tensor([[5, 6, SPECIALS.eos]]), settings, specials=SPECIALS)[0]
    assert result.best.tokens == best
    eos = SPECIALS.eos
    by_formula = {(eos,): math.log(0.4), (A, eos): math.log(0.36), (A, A, eos): math.log(0.144)}
    expected = sorted(by_formula, key=lambda t: by_formula[t] / length_penalty(len(t), settings), reverse=True)
    assert [tuple(h.tokens) for h in result.hypotheses] == expected


def test_greedy_step_rows_equal_a_teacher_forced_pass(model, src):
    results = greedy_decode(model, src, SearchSettings(record_steps=True, candidates=3), specials=SPECIALS)
    for b, result in enumerate(results):
        _, maps = teacher_forced(model, src[b], result.best.tokens)
        assert len(result.steps) == len(result.best.tokens)
        for t, step in enumerate(result.steps):
            (live,) = step.live
            assert live.prefix == [SPECIALS.start] + result.best.tokens[:t]
            assert live.candidates.tokens[0] == result.best.tokens[t] and len(live.candidates.tokens) == 3
            assert live.candidates.probs == sorted(live.candidates.probs, reverse=True)
            torch.testing.assert_close(live.self_attention, torch.stack([w[0, :, t, : t + 1] for w in maps.dec_self]))
            torch.testing.assert_close(live.cross_attention, torch.stack([w[0, :, t] for w in maps.cross]))


def test_beam_tree_parent_pointers_lead_to_each_hypothesis_and_its_attention_rows(model, src):
    results = beam_search(model, src, SearchSettings(beam_size=3, nbest=3, record_steps=True), specials=SPECIALS)
    for b, result in enumerate(results):
        paths = {0: []}  # live slot -> [(step, index in step.live)] so far
        ended = {}  # output tokens -> path of every hypothesis that ended
        for t, step in enumerate(result.steps):
            assert len(step.live) == len(paths)
            next_paths = {}
            for node in step.nodes:
                path = paths[node.parent] + [(t, node.parent)]
                assert step.live[node.parent].score + node.log_prob == pytest.approx(node.score, abs=1e-5)
                if node.status == "live":
                    next_paths[node.slot] = path
                elif node.status in ("finished", "stopped"):
                    ended[tuple(step.live[node.parent].prefix[1:] + [node.token])] = path
            assert sorted(next_paths) == list(range(len(next_paths)))
            paths = next_paths
        assert len(result.steps[0].live) == 1 and {n.parent for n in result.steps[0].nodes} == {0}  # just <s>
        assert all(sum(n.status == "live" for n in step.nodes) <= 3 for step in result.steps)
        assert not paths and all(n.status != "live" for n in result.steps[-1].nodes)  # the search ended
        for h in result.hypotheses:
            _, maps = teacher_forced(model, src[b], h.tokens)
            for t, index in ended[tuple(h.tokens)]:
                live = result.steps[t].live[index]
                assert live.prefix == [SPECIALS.start] + h.tokens[:t]
                torch.testing.assert_close(live.cross_attention, torch.stack([w[0, :, t] for w in maps.cross]))
                torch.testing.assert_close(live.self_attention,
                                           torch.stack([w[0, :, t, : t + 1] for w in maps.dec_self]))


@pytest.mark.parametrize("beam_size", [1, 3])
def test_session_reaches_the_one_shot_result_and_back_then_forward_is_consistent(model, src, beam_size):
    settings = SearchSettings(beam_size=beam_size, nbest=beam_size)
    one_shot = search(model, src[:1], SearchSettings(beam_size=beam_size, nbest=beam_size, record_steps=True),
                      specials=SPECIALS)[0]
    session = DecodingSession(model, src[0].tolist(), settings, specials=SPECIALS)
    session.back()  # nothing to undo
    first, second = session.step(), session.step()
    assert session.n_steps == 2 and [n.token for n in first.nodes] == [n.token for n in one_shot.steps[0].nodes]
    live_before = [h.tokens for h in session.live]
    assert all(len(tokens) == 2 for tokens in live_before)
    session.back()
    assert session.n_steps == 1 and [n.token for n in session.current.nodes] == [n.token for n in first.nodes]
    torch.testing.assert_close(session.current.live[0].cross_attention, first.live[0].cross_attention)
    again = session.step()
    assert again.nodes == second.nodes and [h.tokens for h in session.live] == live_before
    torch.testing.assert_close(again.live[-1].self_attention, second.live[-1].self_attention)
    result = session.run_to_end()
    assert session.done and session.step() is None
    assert [h.tokens for h in result.hypotheses] == [h.tokens for h in one_shot.hypotheses]
    assert [s.nodes for s in result.steps] == [s.nodes for s in one_shot.steps]
    assert all(h.self_attention is None for s in session.history for h in s.live)  # light history
    session.reset()
    assert session.n_steps == 0 and not session.done and session.current is None


def test_bad_settings_and_a_training_model_are_refused(model, src):
    with pytest.raises(ValueError, match="nbest"):
        SearchSettings(beam_size=2, nbest=3)
    with pytest.raises(ValueError, match="length_penalty"):
        SearchSettings(length_penalty="linear")
    model.train()
    try:
        with pytest.raises(ValueError, match="eval"):
            greedy_decode(model, src, specials=SPECIALS)
    finally:
        model.eval()
    with pytest.raises(ValueError, match="source token"):
        DecodingSession(model, [], SearchSettings(), specials=SPECIALS)

"""Sampling with temperature, top-k and top-p: the distributions, the draws, the engine, sessions and the CLI."""

import dataclasses
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import torch

from tests.conftest import SPECIALS, random_batch, tiny_config
from tests.decoding.test_translate import PAIRS, run_cli
from transformer import Transformer
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding import settings as settings_module
from transformer.decoding import translate
from transformer.decoding.sampling import draw, sampling_distribution, tempered
from transformer.decoding.search import SearchSettings, greedy_decode, next_token_log_probs, sample
from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import Translator
from transformer.model.checkpoint import save_checkpoint


@pytest.fixture(scope="module")
def model() -> Transformer:
    torch.manual_seed(1)
    return Transformer(tiny_config()).eval()


@pytest.fixture(scope="module")
def src(model) -> torch.Tensor:
    return random_batch(model.config, B=3, S=7)[0]  # right-padded: lengths 7, 6, 5


def sampling(**fields) -> SearchSettings:
    return SearchSettings(do_sample=True, **fields)


def first_step_log_probs(model, src_row: torch.Tensor) -> torch.Tensor:
    """The model's (V,) next-token log-probabilities after <s>, as the search sees them (<pad>, <s> ruled out)."""
    src = src_row[src_row != SPECIALS.pad][None]  # (1, S)
    with torch.no_grad():
        return next_token_log_probs(model(src, torch.tensor([[SPECIALS.start]])).logits[:, -1], SPECIALS)[0]


# ----------------------------------------------------------------------------- the distributions, on known cases


def test_temperature_top_k_and_top_p_on_a_known_distribution():
    p = torch.tensor([[0.5, 0.3, 0.15, 0.05, 0.0]], dtype=torch.float64)
    logp = p.log()  # the last token is ruled out (-inf), as <pad> and <s> are
    torch.testing.assert_close(sampling_distribution(logp), p)
    squared = p**2 / (p**2).sum()
    torch.testing.assert_close(sampling_distribution(logp, temperature=0.5), squared)  # p ** (1 / T)
    torch.testing.assert_close(tempered(logp, 0.5), squared)
    torch.testing.assert_close(sampling_distribution(logp, top_k=1), torch.tensor([[1.0, 0, 0, 0, 0]]).double())
    torch.testing.assert_close(sampling_distribution(logp, top_k=2), torch.tensor([[0.625, 0.375, 0, 0, 0]]).double())
    # nucleus: 0.5 < 0.7, 0.5 + 0.3 >= 0.7: two tokens; 0.8 < 0.85 <= 0.95: three
    torch.testing.assert_close(sampling_distribution(logp, top_p=0.7), torch.tensor([[0.625, 0.375, 0, 0, 0]]).double())
    torch.testing.assert_close(sampling_distribution(logp, top_p=0.85),
                               torch.tensor([[0.5, 0.3, 0.15, 0, 0]]).double() / 0.95)
    torch.testing.assert_close(sampling_distribution(logp, top_p=0.01), torch.tensor([[1.0, 0, 0, 0, 0]]).double())
    # top-p applies to the distribution after top-k, renormalised: top-3 gives 0.526, 0.316, 0.158
    torch.testing.assert_close(sampling_distribution(logp, top_k=3, top_p=0.8),
                               torch.tensor([[0.625, 0.375, 0, 0, 0]]).double())


def test_inverse_cdf_draws_the_tokens_whose_interval_holds_the_uniform():
    probs = torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0]]).double().expand(5, 5)
    tokens = draw(probs, torch.tensor([0.0, 0.2499, 0.25, 0.9999, 1 - 1e-17]))
    assert tokens.tolist() == [1, 1, 3, 3, 3]  # never a token of probability 0, not even at the top end


def test_empirical_frequencies_match_the_renormalised_distribution():
    """N draws from p: every frequency within 5 standard errors sqrt(p (1 - p) / N) of p (a false alarm has
    probability < 1e-5 per token), tokens outside the top-k / top-p set never drawn, and Pearson's chi-square
    below its 0.999 quantile (Wilson-Hilferty approximation, df = support - 1)."""
    logits = torch.randn(1, 40, generator=torch.Generator().manual_seed(3)) * 2
    logp = logits.log_softmax(-1)
    p = sampling_distribution(logp, temperature=0.7, top_k=12, top_p=0.9)[0]  # (V,)
    support = p > 0
    assert 1 < support.sum() <= 12
    N = 200_000
    u = torch.rand(N, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    counts = torch.bincount(draw(p.expand(N, -1), u), minlength=p.numel()).double()
    freq = counts / N
    assert counts[~support].sum() == 0
    bound = 5 * (p * (1 - p) / N).sqrt()
    assert ((freq - p).abs() <= bound + 1e-12).all(), ((freq - p).abs() / bound).max()
    chi2 = (((counts - N * p) ** 2) / (N * p))[support].sum().item()
    df = int(support.sum()) - 1
    z = 3.09  # the standard normal's 0.999 quantile
    assert chi2 < df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


# ----------------------------------------------------------------------------- the engine


def test_temperature_near_zero_and_top_k_one_equal_greedy(model, src):
    greedy = greedy_decode(model, src, specials=SPECIALS)
    for settings in (sampling(temperature=1e-6, seed=4), sampling(top_k=1, seed=9, num_samples=2)):
        for g, s in zip(greedy, sample(model, src, settings, specials=SPECIALS), strict=True):
            for h in s.hypotheses:
                assert h.tokens == g.best.tokens and h.log_probs == pytest.approx(g.best.log_probs, abs=1e-6)


def test_a_seed_reproduces_a_draw_whatever_else_is_in_the_batch(model, src):
    settings = sampling(temperature=1.5, seed=7, num_samples=3)
    first = [[h.tokens for h in r.hypotheses] for r in sample(model, src, settings, specials=SPECIALS)]
    assert first == [[h.tokens for h in r.hypotheses] for r in sample(model, src, settings, specials=SPECIALS)]
    alone = sample(model, src[2:, :5], settings, specials=SPECIALS)[0]  # the third sentence (5 tokens), alone
    assert [h.tokens for h in alone.hypotheses] == first[2]
    other = [[h.tokens for h in r.hypotheses] for r in sample(model, src, sampling(temperature=1.5, seed=8,
                                                                                    num_samples=3), specials=SPECIALS)]
    assert other != first
    assert len({tuple(t) for r in first for t in r}) > 3  # the samples differ from each other
    uncached = sample(model, src, settings, use_cache=False, specials=SPECIALS)
    assert [[h.tokens for h in r.hypotheses] for r in uncached] == first


def teacher_forced_log_probs(model, src_row: torch.Tensor, tokens: list[int]) -> torch.Tensor:
    """(len(tokens), V) next-token log-probabilities along tokens, as the search saw them."""
    src = src_row[src_row != SPECIALS.pad][None]  # (1, S)
    with torch.no_grad():
        return next_token_log_probs(model(src, torch.tensor([[SPECIALS.start] + tokens[:-1]])).logits[0], SPECIALS)


@pytest.mark.parametrize("top_k, top_p", [(3, 1.0), (0, 0.6), (4, 0.7)])
def test_drawn_tokens_stay_inside_the_top_k_and_top_p_set(model, src, top_k, top_p):
    """Every token of every sample, against the top-k / nucleus set recomputed from a teacher-forced pass."""
    settings = sampling(temperature=1.3, top_k=top_k, top_p=top_p, seed=2, num_samples=4, record_steps=True)
    n_tokens = 0
    for b, result in enumerate(sample(model, src, settings, specials=SPECIALS)):
        for h in result.hypotheses:
            logp = teacher_forced_log_probs(model, src[b], h.tokens)  # (T, V)
            allowed = sampling_distribution(logp, 1.3, top_k, top_p) > 0  # (T, V)
            rank = (logp > logp.gather(1, torch.tensor(h.tokens)[:, None])).sum(1)  # tokens more probable
            assert allowed[torch.arange(len(h.tokens)), h.tokens].all()
            assert (rank < (top_k or logp.size(1))).all()
            assert h.log_probs == pytest.approx(logp[torch.arange(len(h.tokens)), h.tokens].tolist(), abs=1e-5)
            n_tokens += len(h.tokens)
        for step in result.steps:  # what the steps recorded for the bars agrees
            for node, live in zip(step.nodes, step.live, strict=True):
                c = live.candidates
                assert node.token in c.tokens and dict(zip(c.tokens, c.sampled))[node.token] > 0
                assert c.kept <= (top_k or c.kept) and sum(c.sampled) <= 1 + 1e-9
    assert n_tokens > 20


def test_first_tokens_drawn_by_the_engine_follow_the_distribution(model, src):
    """400 one-token samples of one sentence (400 rows of one cached batch): each token's frequency within 5
    standard errors of its probability under temperature 1.2 and top-k 6."""
    n = 400
    settings = sampling(temperature=1.2, top_k=6, seed=0, num_samples=n, max_len_a=0.0, max_len_b=1)
    (result,) = sample(model, src[:1], settings, specials=SPECIALS)
    firsts = torch.tensor([h.tokens[0] for h in result.hypotheses])
    p = sampling_distribution(first_step_log_probs(model, src[0])[None], 1.2, 6)[0]
    freq = torch.bincount(firsts, minlength=p.numel()).double() / n
    assert ((freq - p).abs() <= 5 * (p * (1 - p) / n).sqrt() + 1e-12).all()
    assert (freq[p == 0] == 0).all()


def test_a_sampling_session_draws_what_the_one_shot_function_draws_and_back_replays_it(model, src):
    settings = sampling(temperature=1.4, seed=3, num_samples=2)
    one_shot = sample(model, src[:1], settings, specials=SPECIALS)[0]
    session = DecodingSession(model, src[0].tolist(), settings, specials=SPECIALS)
    session.step()
    session.step()
    before = [n.token for n in session.current.nodes]
    session.step()
    session.back()
    assert [n.token for n in session.current.nodes] == before
    result = session.run_to_end()
    assert sorted(h.tokens for h in result.hypotheses) == sorted(h.tokens for h in one_shot.hypotheses)
    assert all(len(step.live) <= 2 and len(step.nodes) == len(step.live) for step in result.steps)


@pytest.mark.parametrize("fields, message", [
    (dict(do_sample=True, temperature=0.0), "temperature must be a number above 0, at most 100 .near 0: greedy."),
    (dict(do_sample=True, temperature=math.nan), "temperature must be a number above 0"),
    (dict(do_sample=True, top_p=0.0), r"top_p must be a number above 0, at most 1 \(1 keeps every token\)"),
    (dict(do_sample=True, top_p=1.5), "top_p must be a number above 0, at most 1"),
    (dict(do_sample=True, top_k=-1), "top_k must be a whole number from 0 to 1,000"),
    (dict(do_sample=True, num_samples=0), "num_samples must be a whole number from 1 to 512"),
    (dict(do_sample=True, seed=-1), "seed must be a whole number from 0 to"),
    (dict(do_sample=True, beam_size=3), "beam_size must be 1 with do_sample"),
    (dict(temperature=0.8, top_k=50), "temperature, top_k only apply when sampling"),
])
def test_bad_sampling_settings_are_clear_errors(fields, message):
    with pytest.raises(ValueError, match=message):
        SearchSettings(**fields)


# ----------------------------------------------------------------------------- Translator and command line


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    tokenizer = train_tokenizer(PAIRS, kind="wordlevel", vocab_size=50, min_frequency=1)
    torch.manual_seed(1)
    config = tiny_config(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size, max_len=12)
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", Transformer(config).eval(), tokenizer=tokenizer)


def test_translator_and_cli_sample_the_same_seeded_draws(checkpoint, translate_cli):
    translator = Translator(checkpoint)
    settings = sampling(temperature=0.8, top_k=5, top_p=0.9, seed=1, num_samples=3)
    t = translator.translate("the house is big", settings)
    assert len(t.alternatives) == 2 and t.to_dict() == translator.translate("the house is big", settings).to_dict()
    done = run_cli("--checkpoint", str(checkpoint), "--sample", "--temperature", "0.8", "--top-k", "5", "--top-p",
                   "0.9", "--seed", "1", "--num-samples", "3", "the house is big")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split("\t")[2] for line in lines] == [t.text] + [a.text for a in t.alternatives]
    # the draws in a process of their own above (the seed, not this process's state, makes them); the refusal here
    done = translate_cli("--checkpoint", str(checkpoint), "--temperature", "0.8", "a cat")
    assert done.returncode == 2 and "only apply when sampling" in done.stderr


# ----------------------------------------------------------------------------- vanishing, negative or infinite numbers


@pytest.mark.parametrize("temperature", [1e-320, 1e-310, 5e-324, 1e-6])
def test_a_vanishing_temperature_is_greedy_not_an_overflow(model, src, temperature):
    """logits / T overflowed to -inf everywhere below about 1e-308, and the last piece was drawn every time."""
    logp = first_step_log_probs(model, src[0])[None]  # (1, V)
    one_hot = torch.zeros_like(logp, dtype=torch.float64).scatter(-1, logp.argmax(-1, keepdim=True), 1.0)
    for probs in (sampling_distribution(logp, temperature), tempered(logp, temperature),
                  sampling_distribution(logp, temperature, top_k=3, top_p=0.5)):
        assert torch.equal(probs, one_hot)
    greedy = greedy_decode(model, src, specials=SPECIALS)
    drawn = sample(model, src, sampling(temperature=temperature, num_samples=2), specials=SPECIALS)
    for g, s in zip(greedy, drawn, strict=True):
        assert all(h.tokens == g.best.tokens for h in s.hypotheses)


def test_the_cli_samples_greedily_at_a_vanishing_temperature(checkpoint, capsys):
    greedy = Translator(checkpoint).translate("the house is big").text
    assert translate.main(["--checkpoint", str(checkpoint), "--sample", "--temperature", "1e-320",
                           "the house is big"]) == 0
    assert capsys.readouterr().out.strip() == greedy


def test_every_settings_field_has_its_check():
    assert list(settings_module.FIELDS) == [f.name for f in dataclasses.fields(SearchSettings)]


FIELDS = ("beam_size", "nbest", "alpha", "max_len_a", "max_len_b", "candidates", "temperature", "top_k", "top_p",
          "seed", "num_samples")
BAD_VALUES = ["1", None, 1j, Decimal("1"), Fraction(1, 2), True, False, math.inf, -math.inf, math.nan, 10**400,
              [1], 2.5]


@pytest.mark.parametrize("field", FIELDS)
def test_every_settings_field_refuses_other_types_and_values_with_one_error_naming_it(field):
    for value in BAD_VALUES:
        if value == 2.5 and field in ("alpha", "max_len_a", "temperature"):
            continue  # a fine number there
        with pytest.raises(ValueError, match=f"^{field} must be ") as caught:
            SearchSettings(do_sample=field not in ("beam_size", "nbest", "alpha"), **{field: value})
        assert type(caught.value) is ValueError and len(str(caught.value)) < 200


@pytest.mark.parametrize("fields, message", [
    (dict(do_sample="yes"), "do_sample must be True or False"), (dict(record_steps=1), "record_steps must be True"),
    (dict(length_penalty=None), "length_penalty must be one of"), (dict(length_penalty=["gnmt"]), "length_penalty"),
    (dict(do_sample=True, temperature=10**400), "temperature must be a number above 0, at most 100"),
    (dict(do_sample=True, temperature=101.0), "temperature must be a number above 0, at most 100"),
    (dict(do_sample=True, seed=1.5), "seed must be a whole number from 0 to 4,294,967,295"),
    (dict(do_sample=True, seed=2**32), "seed must be a whole number"),
])
def test_settings_messages_name_the_field_and_its_range(fields, message):
    with pytest.raises(ValueError, match=message):
        SearchSettings(**fields)


def test_one_seed_value_draws_one_sample_whatever_its_type(model, src):
    """seed=1, 1.0 and True once drew three different samples; True is refused now, the rest are the integer 1."""
    seeds = [1, 1.0, torch.tensor(1).item(), np.int64(1), np.float32(1.0)]
    settings = [sampling(temperature=1.5, seed=seed, num_samples=2) for seed in seeds]
    assert all(type(s.seed) is int and s.seed == 1 for s in settings) and len(set(settings)) == 1
    draws = [[[h.tokens for h in r.hypotheses] for r in sample(model, src, s, specials=SPECIALS)] for s in settings]
    assert all(d == draws[0] for d in draws)
    other = sample(model, src, sampling(temperature=1.5, seed=2, num_samples=2), specials=SPECIALS)
    assert draws[0] != [[h.tokens for h in r.hypotheses] for r in other]
    assert type(sampling(temperature=1).temperature) is float and type(SearchSettings(beam_size=4.0).beam_size) is int


@pytest.mark.parametrize("flag, value", [("--temperature", "-inf"), ("--temperature", "-1e-3"), ("--top-p", "-inf"),
                                         ("--temperature", "inf"), ("--temperature", "nan"), ("--seed", "-1")])
def test_negative_and_infinite_numbers_reach_the_range_check(checkpoint, capsys, flag, value):
    """argparse read "-inf" as an option ("expected one argument")."""
    assert translate.main(["--checkpoint", str(checkpoint), "--sample", flag, value, "a cat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag[2:].replace('-', '_')} must be ") and "expected one argument" not in err

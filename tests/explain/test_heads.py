"""Explanations of heads (transformer/explain/): ablation, cell arithmetic, statistics, importance, what-if switches,
probe history. Tiny models and hand-made maps; each test checks a formula or an equality, not just that it runs."""

import math

import pytest
import torch

from tests.app_fixtures import PAIRS
from tests.conftest import SPECIALS, tiny_config
from transformer import Transformer
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding.search import SearchSettings, beam_search, greedy_decode
from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import Translator
from transformer.explain import (
    FAMILIES,
    Intervention,
    StatisticsAccumulator,
    cell_arithmetic,
    changed_tokens,
    dev_log_likelihood,
    head_importance,
    head_labels,
    head_statistics,
    intervened,
    intervened_translator,
    map_statistics,
    probe_history,
    teacher_forced,
)
from transformer.explain.interventions import attention_module, every_head, head_columns, shared_prefix
from transformer.model.checkpoint import Checkpoint
from transformer.runs import ProbeRecord, RunFiles, append_metrics, write_probes

SRC = [[5, 9, 12, 7, 2]]
OUT = [6, 11, 8, 2]  # ends with </s>


def _src_tgt():
    return torch.tensor(SRC), torch.tensor([[SPECIALS.start, *OUT[:-1]]])


@pytest.fixture
def model():
    torch.manual_seed(0)
    return Transformer(tiny_config()).eval()


def _zero_head_hook(head: int, d_head: int):
    """A forward pre-hook on W^O that zeroes one head's slice of its input: the manual recomputation."""
    def hook(_module, args):
        x = args[0].clone()
        x[..., head * d_head : (head + 1) * d_head] = 0.0
        return (x,)
    return hook


@pytest.mark.parametrize("family,layer,head", [("enc_self", 0, 1), ("enc_self", 1, 3), ("dec_self", 0, 2),
                                               ("dec_self", 1, 0), ("cross", 0, 0), ("cross", 1, 3)])
def test_ablating_a_head_removes_exactly_its_contribution(model, family, layer, head):
    changed = intervened(model, Intervention(frozenset({(family, layer, head)})))
    src, tgt = _src_tgt()
    handle = attention_module(model, family, layer).w_o.register_forward_pre_hook(
        _zero_head_hook(head, model.config.d_head))
    try:
        manual = model(src, tgt, return_attention=True)
    finally:
        handle.remove()
    got = changed(src, tgt, return_attention=True)
    assert torch.allclose(got.logits, manual.logits, atol=1e-5)
    plain = model(src, tgt).logits
    assert not torch.allclose(got.logits, plain, atol=1e-4)  # it did change something
    # the same layer's weights are untouched: only that head's output is gone, not its attention
    ablated_maps, plain_maps = got.attention, model(src, tgt, return_attention=True).attention
    assert torch.equal(getattr(ablated_maps, family)[layer], getattr(plain_maps, family)[layer])
    # the shared model is never edited
    assert attention_module(model, family, layer).w_o.weight[:, head_columns(model, head)].abs().sum() > 0


def test_ablation_equals_the_models_own_head_mask(model):
    attn = attention_module(model, "cross", 1)
    changed = attention_module(intervened(model, Intervention(frozenset({("cross", 1, 2)}))), "cross", 1)
    x, memory = torch.randn(1, 4, 32), torch.randn(1, 5, 32)
    mask = torch.ones(1, 1, 1, 5, dtype=torch.bool)
    expected, _ = attn(x, attn.project_kv(memory), mask, head_mask=torch.tensor([1.0, 1.0, 0.0, 1.0]))
    got, _ = changed(x, changed.project_kv(memory), mask)
    assert torch.allclose(got, expected, atol=1e-6)


def test_ablated_decoding_runs_through_greedy_beam_and_step_through(model):
    iv = Intervention(frozenset({("cross", 0, 1), ("dec_self", 1, 0)}))
    changed, src = intervened(model, iv), torch.tensor(SRC)
    greedy = greedy_decode(changed, src, SearchSettings(max_len_b=6), specials=SPECIALS)[0].best
    uncached = greedy_decode(changed, src, SearchSettings(max_len_b=6), specials=SPECIALS, use_cache=False)[0]
    assert greedy.tokens == uncached.best.tokens
    beam = beam_search(changed, src, SearchSettings(beam_size=1, max_len_b=6), specials=SPECIALS)[0].best
    assert beam.tokens == greedy.tokens
    session = DecodingSession(changed, SRC[0], SearchSettings(max_len_b=6), specials=SPECIALS)
    assert session.run_to_end().best.tokens == greedy.tokens
    # the decode's own score is what a teacher-forced pass of the changed model gives
    forced = teacher_forced(changed, SRC[0], greedy.tokens, specials=SPECIALS)
    assert forced.score == pytest.approx(greedy.score, abs=1e-4)


def test_switches_off_reproduce_the_unmodified_model_exactly(model):
    assert intervened(model, Intervention()) is model
    src, tgt = _src_tgt()
    plain = model(src, tgt, return_attention=True)
    forced = teacher_forced(model, SRC[0], OUT, specials=SPECIALS)
    assert torch.equal(forced.log_probs, plain.logits[0].log_softmax(-1).gather(1, torch.tensor(OUT)[:, None])[:, 0])
    for family in FAMILIES:
        for got, expected in zip(getattr(forced, family), getattr(plain.attention, family)):
            assert torch.equal(got, expected[0])


def test_temperature_divides_every_logit(model):
    tau = 2.5
    changed = intervened(model, Intervention(temperature=tau))
    src, tgt = _src_tgt()
    plain = model(src, tgt, return_attention=True).attention.enc_self[0]
    hot = changed(src, tgt, return_attention=True).attention.enc_self[0]
    assert torch.allclose(hot, (plain.log() / tau).softmax(-1), atol=1e-6)  # softmax(s / tau) from softmax(s)
    assert hot.max() < plain.max()


def test_no_positions_zeroes_the_sinusoids_of_the_copy_only(model):
    changed = intervened(model, Intervention(positions=False))
    assert changed.src_embed.pe.abs().sum() == 0 and model.src_embed.pe.abs().sum() > 0
    ids = torch.tensor([[5, 5, 5, 2]])  # one token three times: without positions the rows are equal
    maps = changed.encode(ids, return_attention=True).attention[0][0]  # (H, S, S)
    assert torch.allclose(maps[:, 0], maps[:, 1]) and torch.allclose(maps[:, 1], maps[:, 2])


def test_lifting_the_causal_mask_lets_the_decoder_read_the_future(model):
    forced = teacher_forced(model, SRC[0], OUT, causal=False, specials=SPECIALS)
    causal = teacher_forced(model, SRC[0], OUT, specials=SPECIALS)
    assert all(torch.equal(a, b) for a, b in zip(forced.enc_self, causal.enc_self))
    upper = torch.ones(len(OUT), len(OUT), dtype=torch.bool).triu(1)
    assert all(w[:, upper].sum() > 0 for w in forced.dec_self) and all(w[:, upper].sum() == 0 for w in causal.dec_self)
    # the last query could read everything anyway: its row is the same with or without the mask
    assert torch.allclose(forced.dec_self[0][:, -1], causal.dec_self[0][:, -1], atol=1e-6)


def test_a_head_the_model_lacks_is_refused(model):
    with pytest.raises(ValueError, match="no cross layer 2 head 0"):
        intervened(model, Intervention(frozenset({("cross", 2, 0)})))
    with pytest.raises(ValueError, match="temperature"):
        Intervention(temperature=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_cell_arithmetic_reproduces_the_models_weights(model, family):
    src = SRC[0] + [0, 0]  # padded, as in a batch: the <pad> keys are masked
    tgt_in = [SPECIALS.start, *OUT[:-1]]
    maps = getattr(model(torch.tensor([src]), torch.tensor([tgt_in]), return_attention=True).attention, family)
    n_queries = len(src) if family == "enc_self" else len(tgt_in)
    for layer in range(2):
        for head in range(4):
            for query in range(n_queries):
                cell = cell_arithmetic(model, src, tgt_in, family, layer, head, query)
                assert torch.allclose(cell.weights, maps[layer][0, head, query], atol=1e-6)
                assert torch.allclose(cell.weights, cell.model_weights, atol=1e-6)
                assert torch.allclose(cell.output, cell.weights @ cell.v)
                assert torch.allclose(cell.scores, cell.k @ cell.q / math.sqrt(8))
    cell = cell_arithmetic(model, src, tgt_in, family, 1, 2, 1)
    if family != "dec_self":
        assert cell.mask.tolist() == [True] * 5 + [False] * 2 and cell.weights[5:].sum() == 0
    else:
        assert cell.mask.tolist() == [True, True, False, False] and cell.masked[2:].isinf().all()


def test_statistics_of_hand_made_maps_equal_their_formulas():
    eye = torch.eye(4)
    shifted = torch.zeros(4, 4)
    shifted[0, 0] = 1.0
    shifted[1:, :-1] = torch.eye(3)  # every query but the first on the previous token
    uniform = torch.full((4, 4), 0.25)
    maps = torch.stack([eye, shifted, uniform])  # (H=3, 4, 4)
    pieces = ["▁the", "▁cat", ".", "</s>"]
    stats = map_statistics(maps, pieces, family="enc_self")
    assert stats["same"][0].tolist() == [1.0] * 4 and stats["previous"][1].tolist() == [0.0, 1.0, 1.0, 1.0]
    assert stats["entropy"][2] == pytest.approx(torch.full((4,), math.log(4)).double())
    assert stats["spread"][2].tolist() == pytest.approx([1.0] * 4) and stats["spread"][0].tolist() == [0.0] * 4
    assert stats["distance"][2].tolist() == pytest.approx([1.5, 1.0, 1.0, 1.5])  # mean |k - q| of a uniform row
    assert stats["punctuation"][2].tolist() == [0.25] * 4 and stats["eos"][0].tolist() == [0, 0, 0, 1]
    assert stats["diagonal"].isnan().all()
    cross = torch.zeros(1, 3, 5)
    cross[0, 0, 0], cross[0, 1, 2], cross[0, 2, 0] = 1.0, 1.0, 1.0  # the diagonal runs 0, 2, 4
    diagonal = map_statistics(cross, ["a"] * 5, family="cross")
    assert diagonal["diagonal"][0].tolist() == [1.0, 1.0, 0.0] and diagonal["same"].isnan().all()
    causal = torch.tril(torch.ones(3, 3))
    causal = (causal / causal.sum(-1, keepdim=True))[None]  # uniform over the keys each query may read
    assert map_statistics(causal, ["<s>", "a", "b"], family="dec_self")["spread"][0].tolist()[1:] == \
        pytest.approx([1.0, 1.0])
    # the weight on the start token is key 0 of decoder self-attention, whatever its piece (Marian starts with
    # <pad>); a source has no start token
    for start in ("<s>", "<pad>"):
        on_start = map_statistics(causal, [start, "a", "b"], family="dec_self")["bos"][0].tolist()
        assert on_start == pytest.approx([1.0, 0.5, 1 / 3])
    assert map_statistics(maps, ["<s>", "a", "b", "c"], family="enc_self")["bos"].eq(0).all()


def test_accumulated_statistics_are_means_over_rows_and_label_clear_roles():
    shifted = torch.zeros(1, 4, 4)
    shifted[0, 0, 0] = 1.0
    shifted[0, 1:, :-1] = torch.eye(3)
    eos = torch.zeros(1, 3, 3)
    eos[0, :, 2] = 1.0
    acc = StatisticsAccumulator()
    acc.add({"enc_self": [torch.cat([shifted, torch.full((1, 4, 4), 0.25)])]}, {"enc_self": ["a", "b", "c", "</s>"]})
    acc.add({"enc_self": [torch.cat([eos, torch.full((1, 3, 3), 1 / 3)])]}, {"enc_self": ["a", "b", "</s>"]})
    stats = acc.result()
    assert stats.sentences == 2
    assert stats.get("enc_self", "previous")[0, 0] == pytest.approx(3 / 7)  # 3 of the 7 rows on the previous token
    assert stats.get("enc_self", "eos")[0, 0] == pytest.approx(3 / 7)
    assert head_labels(stats, "enc_self")[0][0].describe() == "no clear-cut role"  # neither passes 0.5
    acc.add({"enc_self": [torch.cat([eos, torch.full((1, 3, 3), 1 / 3)])]}, {"enc_self": ["a", "b", "</s>"]})
    labels = head_labels(acc.result(), "enc_self")
    assert labels[0][0].role == "attends to </s>" and labels[0][1].role.startswith("broad head")
    assert labels[0][0].describe() == "attends to </s> (weight on </s>: 0.60)"
    assert labels[0][0].numbers["previous"] == pytest.approx(0.3)


def _tokenizer_and_model():
    tokenizer = train_tokenizer(PAIRS, kind="wordlevel", vocab_size=200, min_frequency=1)
    torch.manual_seed(0)
    config = tiny_config(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size)
    return tokenizer, Transformer(config).eval()


def test_head_statistics_of_a_sample_cover_every_head():
    tokenizer, model = _tokenizer_and_model()
    stats = head_statistics(model, tokenizer, PAIRS[:6], batch_size=4)
    assert stats.sentences == 6
    for family in FAMILIES:
        assert stats.get(family, "entropy").shape == (2, 4)
    assert stats.get("cross", "previous").isnan().all() and not stats.get("cross", "diagonal").isnan().any()
    # batching must not change the numbers
    single = head_statistics(model, tokenizer, PAIRS[:6], batch_size=1)
    assert torch.allclose(single.get("dec_self", "entropy"), stats.get("dec_self", "entropy"), atol=1e-6)


def test_importance_is_the_drop_without_the_head_and_zero_for_a_head_already_off():
    tokenizer, model = _tokenizer_and_model()
    pairs = PAIRS[:6]
    base = Intervention(frozenset({("cross", 1, 2)}))
    calls = []
    result = head_importance(model, tokenizer, pairs, bleu_pairs=pairs[:2], base=base, batch_size=4,
                             progress=lambda done, total, head: calls.append((done, total)))
    assert result.log_likelihood["cross"][1, 2] == 0.0 and result.bleu["cross"][1, 2] == 0.0
    assert calls[0] == (0, 24) and calls[-1] == (24, 24)
    head = ("enc_self", 1, 3)
    expected = dev_log_likelihood(intervened(model, base), tokenizer, pairs) - dev_log_likelihood(
        intervened(model, Intervention(base.heads_off | {head})), tokenizer, pairs)
    assert result.log_likelihood["enc_self"][1, 3] == pytest.approx(expected, abs=1e-5)
    ranked = result.ranked()
    assert len(ranked) == 24 and ranked[0][1] >= ranked[-1][1]
    kept = result.keep_top(3)
    assert len(kept.heads_off) == 21 and base.heads_off <= kept.heads_off
    assert all(head not in kept.heads_off for head, _ in ranked[:3])
    assert len(every_head(model)) == 24


def test_intervened_translator_decodes_with_the_change():
    tokenizer, model = _tokenizer_and_model()
    translator = Translator(Checkpoint(None, model.config, model, tokenizer))
    iv = Intervention(frozenset((f, layer, h) for f, layer, h in every_head(model) if f == "cross"))
    changed = intervened_translator(translator, iv)
    assert changed.model is not model and intervened_translator(translator, Intervention()) is translator
    ablated = changed.translate("the cat sleeps .")
    # without any cross-attention the decoder cannot see the source: every source gives the same output
    assert changed.translate("the dog eats .").token_ids == ablated.token_ids
    session = changed.session("the cat sleeps .", SearchSettings(beam_size=2))
    assert session.run_to_end().best.tokens == changed.translate("the cat sleeps .", SearchSettings(beam_size=2)
                                                                 ).token_ids


def test_changed_tokens_and_shared_prefix():
    before, after = ["▁le", "▁chat", "▁dort", "."], ["▁le", "▁chien", "▁dort", "▁bien", "."]
    assert changed_tokens(before, after) == ([False, True, False, False], [False, True, False, True, False])
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and shared_prefix([], [1]) == 0


def test_probe_history_reads_a_runs_snapshots_with_their_metrics(tmp_path):
    files = RunFiles(tmp_path)
    record = ProbeRecord("the cat", "le chat", ["▁the", "▁cat", "</s>"], ["▁le", "▁chat", "</s>"],
                         ["<s>", "▁le", "▁chat"])
    for step in (10, 20):
        maps = {f: torch.full((2, 4, 3, 3), step / 100) for f in FAMILIES}
        maps["cross"][1, 2] = torch.eye(3)
        write_probes(files, step, [record], [maps])
        append_metrics(files.metrics, {"step": step, "dev_loss": 1.0 / step, "dev_bleu": step / 2})
    (files.probes / "step-0000030.json").write_text("{}")  # being written: no tensors yet
    frames = probe_history(tmp_path, family="cross", layer=-1, head=2)
    assert [f.step for f in frames] == [10, 20] and torch.equal(frames[0].weights, torch.eye(3))
    assert frames[1].metrics["dev_bleu"] == 10
    mean = probe_history(tmp_path, family="enc_self", layer=0)
    assert mean[1].weights[0, 0].item() == pytest.approx(0.2)

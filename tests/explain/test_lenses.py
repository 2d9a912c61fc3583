"""Attention lenses (transformer.explain.lenses) on constructed cases with known answers, and their scores."""

import json
import math

import pytest
import torch

from tests.app_fixtures import SHIPPED
from tests.conftest import SPECIALS
from transformer.data.corpora.base import ParallelCorpus
from transformer.data.corpora.teaching import align
from transformer.decoding.translate import Translator
from transformer.explain import AlignedExample, cross_attention_aer
from transformer.explain.lenses import LENSES, as_attention, lens_maps, renormalise, rollout
from transformer.explain.lenses import __main__ as cli
from transformer.explain.lenses.scores import occlusion_drops, ranks, score_lenses, spearman
from transformer.explain.lenses.trace import head_outputs, trace
from transformer.model.checkpoint import load_checkpoint
from transformer.model.config import ModelConfig
from transformer.model.layers import Transformer

TEACHING = "checkpoints/en-fr-teaching"
SENTENCES = ["The young man buys a green bicycle.", "My sister reads a book in the garden.",
             "The old dogs sleep."]
SRC, OUT = [5, 9, 7, 11, 6, SPECIALS.eos], [8, 12, 6, 10, SPECIALS.eos]


def tiny(seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(**{"src_vocab_size": 20, "tgt_vocab_size": 20, "d_model": 16, "n_heads": 4,
                            "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32, "dropout": 0.0,
                            "max_len": 32, **overrides})
    model = Transformer(config).eval()
    with torch.no_grad():  # non-zero biases, so that the lenses' bias terms are exercised
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    return model


@pytest.fixture(scope="module")
def teaching():
    return Translator(TEACHING)


# ----------------------------------------------------------------------------- raw, norm-weighted, Shift-Att


def test_raw_lens_is_the_attention_decoding_records():
    model = tiny()
    maps = lens_maps(model, SRC, OUT, "raw", specials=SPECIALS)
    forced = model(torch.tensor([SRC]), torch.tensor([[SPECIALS.start, *OUT[:-1]]]), return_attention=True).attention
    for family in ("enc_self", "dec_self", "cross"):
        for mine, theirs in zip(getattr(maps, family), getattr(forced, family)):
            assert mine.shape == theirs[0].shape
            torch.testing.assert_close(mine, theirs[0], atol=1e-6, rtol=1e-5)


def test_norm_weighted_with_equal_value_norms_equals_raw():
    model = tiny()
    D = model.config.d_model
    with torch.no_grad():  # every key's value is the bias alone: the same vector, so the same norm, for all keys
        for layer in [*model.encoder_layers, *model.decoder_layers]:
            for attn in [layer.self_attn, getattr(layer, "cross_attn", None)]:
                if attn is not None:
                    attn.w_kv.weight[D:] = 0.0
    raw = lens_maps(model, SRC, OUT, "raw", specials=SPECIALS)
    norm = lens_maps(model, SRC, OUT, "norm", specials=SPECIALS)
    for family in ("enc_self", "dec_self", "cross"):
        for a, b in zip(getattr(raw, family), getattr(norm, family)):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_norm_weighted_is_alpha_times_the_norm_of_what_each_head_moves():
    """f^h(x_j) computed independently: W^O applied to the concatenation with every other head's slot zero."""
    model = tiny()
    traced = trace(model, SRC, OUT, specials=SPECIALS)
    attn, sub = model.encoder_layers[1].self_attn, traced.enc_self[1]
    H, Dh = model.config.n_heads, model.config.d_head
    _, v = attn.project_kv(sub.keys_input[None])  # (1, H, S, Dh)
    expected = torch.zeros(H, len(SRC))
    for h in range(H):
        concat = torch.zeros(len(SRC), H * Dh)
        concat[:, h * Dh : (h + 1) * Dh] = v[0, h]
        expected[h] = (attn.w_o(concat) - attn.w_o.bias).norm(dim=-1)
    torch.testing.assert_close(head_outputs(attn, sub.keys_input).norm(dim=-1), expected)
    norm = lens_maps(model, SRC, OUT, "norm", specials=SPECIALS).enc_self[1]
    torch.testing.assert_close(norm, renormalise(sub.weights * expected[:, None, :]), atol=1e-6, rtol=1e-5)
    assert not torch.allclose(norm, sub.weights, atol=1e-3)  # unequal norms do reweight


def test_shift_att_reads_the_row_of_the_step_that_reads_each_token():
    model = tiny()
    shift = lens_maps(model, SRC, OUT, "shift", specials=SPECIALS)
    full = model(torch.tensor([SRC]), torch.tensor([[SPECIALS.start, *OUT]]), return_attention=True).attention.cross
    for mine, theirs in zip(shift.cross, full):  # rows 1..T of a pass that also reads the last token (</s>)
        assert mine.shape == (model.config.n_heads, len(OUT), len(SRC))
        torch.testing.assert_close(mine, theirs[0, :, 1:], atol=1e-6, rtol=1e-5)
    raw = lens_maps(model, SRC, OUT, "raw", specials=SPECIALS)
    torch.testing.assert_close(shift.enc_self[0], raw.enc_self[0])  # only cross-attention is shifted


# ----------------------------------------------------------------------------- rollout


def test_rollout_of_identity_attention_is_the_identity():
    eye = torch.eye(5).expand(4, 5, 5)  # (H, L, L): every head attends to itself only
    for rolled in rollout([eye, eye, eye]):
        torch.testing.assert_close(rolled, torch.eye(5))


def test_rollout_adds_the_residual_and_multiplies_layers():
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]])[None]  # (1, 2, 2): each token reads the other
    first, second = rollout([swap, swap])
    torch.testing.assert_close(first, torch.full((2, 2), 0.5))  # 0.5 A + 0.5 I
    torch.testing.assert_close(second, torch.full((2, 2), 0.5))
    causal = torch.tensor([[1.0, 0.0], [0.5, 0.5]])[None]
    (one,) = rollout([causal])
    torch.testing.assert_close(one, torch.tensor([[1.0, 0.0], [0.25, 0.75]]))


def test_rollout_lens_carries_cross_attention_to_the_source():
    model = tiny()
    maps = lens_maps(model, SRC, OUT, "rollout", specials=SPECIALS)
    raw = lens_maps(model, SRC, OUT, "raw", specials=SPECIALS)
    enc = rollout(raw.enc_self)
    for mine, cross in zip(maps.cross, raw.cross):
        torch.testing.assert_close(mine[0], cross.mean(0) @ enc[-1], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(mine[0].sum(-1), torch.ones(len(OUT)))


# ----------------------------------------------------------------------------- ALTI+


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-LN", "post-LN"])
def test_alti_contributions_are_non_negative_and_sum_to_one_per_token(norm_first):
    model = tiny(norm_first=norm_first)
    maps = lens_maps(model, SRC, OUT, "alti", specials=SPECIALS)
    for enc in maps.enc_self:
        assert (enc >= 0).all()
        torch.testing.assert_close(enc[0].sum(-1), torch.ones(len(SRC)))
    for cross, prefix, share in zip(maps.cross, maps.dec_self, maps.source_share):
        assert (cross >= 0).all() and (prefix >= 0).all()
        torch.testing.assert_close(cross[0].sum(-1) + prefix[0].sum(-1), torch.ones(len(OUT)))
        torch.testing.assert_close(share, cross[0].sum(-1))
        assert (prefix[0].triu(1) == 0).all()  # nothing from a later target token
        assert 0 < share.min() and share.max() < 1


def test_alti_without_attention_outputs_keeps_every_token_to_itself():
    """W^O and its bias zero: every attention sublayer adds nothing, so a token owes everything to its own input:
    the encoder's contributions are the identity and no output token takes anything from the source."""
    model = tiny()
    with torch.no_grad():
        for layer in [*model.encoder_layers, *model.decoder_layers]:
            for attn in [layer.self_attn, getattr(layer, "cross_attn", None)]:
                if attn is not None:
                    attn.w_o.weight.zero_()
                    attn.w_o.bias.zero_()
    maps = lens_maps(model, SRC, OUT, "alti", specials=SPECIALS)
    torch.testing.assert_close(maps.enc_self[-1][0], torch.eye(len(SRC)))
    torch.testing.assert_close(maps.source_share[-1], torch.zeros(len(OUT)))
    torch.testing.assert_close(maps.dec_self[-1][0], torch.eye(len(OUT)))  # each query's own input: <s>, y_0, ...


# ----------------------------------------------------------------------------- value zeroing


def test_value_zeroing_on_a_layer_whose_output_is_known():
    """One head with uniform attention (W_Q = 0), W_V = W^O = I, no biases, no feed-forward: layer output
    y_i = x_i + mean_k h_k with h = LN(x); zeroing key j's value gives y_i - h_j / S."""
    model = tiny(n_heads=1, n_encoder_layers=1)
    D = model.config.d_model
    layer = model.encoder_layers[0]
    with torch.no_grad():
        layer.self_attn.w_q.weight.zero_()
        layer.self_attn.w_q.bias.zero_()
        layer.self_attn.w_kv.weight[D:] = torch.eye(D)
        layer.self_attn.w_kv.bias.zero_()
        layer.self_attn.w_o.weight.copy_(torch.eye(D))
        layer.self_attn.w_o.bias.zero_()
        layer.feed_forward.w_2.weight.zero_()
        layer.feed_forward.w_2.bias.zero_()
    x = model.src_embed(torch.tensor([SRC]))[0]  # (S, D)
    h = layer.sublayers[0].norm(x)
    y = x + h.mean(0)
    S = len(SRC)
    expected = torch.zeros(S, S)
    for i in range(S):
        for j in range(S):
            expected[i, j] = 1 - torch.nn.functional.cosine_similarity(y[i] - h[j] / S, y[i], dim=0)
    got = lens_maps(model, SRC, OUT, "value_zeroing", specials=SPECIALS).enc_self[0][0]
    torch.testing.assert_close(got, expected / expected.sum(-1, keepdim=True), atol=1e-5, rtol=1e-4)


def test_value_zeroing_never_scores_a_later_target_token():
    maps = lens_maps(tiny(), SRC, OUT, "value_zeroing", specials=SPECIALS)
    for prefix, cross in zip(maps.dec_self, maps.cross):
        assert (prefix[0].triu(1) == 0).all()
        torch.testing.assert_close(prefix[0].sum(-1), torch.ones(len(OUT)))
        torch.testing.assert_close(cross[0].sum(-1), torch.ones(len(OUT)))


def test_every_lens_keeps_the_translation_shapes_and_labels(teaching):
    translation = teaching.translate(SENTENCES[0], attention=True)
    att = translation.attention
    for lens in LENSES:
        maps = lens_maps(teaching.model, translation.source_ids, translation.token_ids, lens, specials=SPECIALS)
        lensed = as_attention(att, maps)
        assert lensed.target_pieces == att.target_pieces
        for family in ("enc_self", "dec_self", "cross"):
            for mine, theirs in zip(getattr(lensed, family), getattr(att, family)):
                assert mine.shape[1:] == theirs.shape[1:] and mine.shape[0] in (1, theirs.shape[0])
                assert torch.isfinite(mine).all() and (mine >= 0).all()


def test_an_unknown_lens_and_a_training_model_are_refused():
    with pytest.raises(ValueError, match="unknown lens 'grad'"):
        lens_maps(tiny(), SRC, OUT, "grad", specials=SPECIALS)
    with pytest.raises(ValueError, match="eval mode"):
        lens_maps(tiny().train(), SRC, OUT, "raw", specials=SPECIALS)


# ----------------------------------------------------------------------------- scores


def test_spearman_and_ranks_on_known_cases():
    assert ranks(torch.tensor([10.0, 30.0, 20.0, 20.0])).tolist() == [1.0, 4.0, 2.5, 2.5]
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]])
    b = torch.tensor([[2.0, 4.0, 6.0, 9.0], [4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    rho = spearman(a, b)
    assert rho[0].item() == pytest.approx(1.0) and rho[1].item() == pytest.approx(-1.0) and math.isnan(rho[2])
    # with a tie: x = (1, 2, 2, 3) against (1, 2, 3, 4): Pearson of ranks (1, 2.5, 2.5, 4) and (1, 2, 3, 4)
    assert spearman(torch.tensor([1.0, 2.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0, 4.0])).item() == \
        pytest.approx(4.5 / math.sqrt(4.5 * 5.0))


def test_occlusion_drops_match_a_pass_with_the_word_replaced():
    model = tiny()
    words = [0, 0, 1, 2, 3, None]  # the first two pieces are one word
    traced = trace(model, SRC, OUT, specials=SPECIALS)
    drops = occlusion_drops(model, SRC, OUT, words, traced.log_probs, SPECIALS)
    assert drops.shape == (len(OUT), 4)
    occluded = [SPECIALS.unk, SPECIALS.unk, *SRC[2:]]
    logp = model(torch.tensor([occluded]), torch.tensor([[SPECIALS.start, *OUT[:-1]]])).logits[0].log_softmax(-1)
    expected = traced.log_probs - logp.gather(1, torch.tensor(OUT)[:, None])[:, 0]
    torch.testing.assert_close(drops[:, 0], expected, atol=1e-5, rtol=1e-4)


def _examples():
    pairs = [align(s) for s in SENTENCES]
    return [AlignedExample(s, p.tgt, p.links) for s, p in zip(SENTENCES, pairs)]


def test_raw_lens_aer_equals_the_cross_attention_aer_of_explain_alignment(teaching):
    examples = _examples()
    scores = score_lenses(teaching.model, teaching.tokenizer, examples, ["raw", "alti"])
    reference = cross_attention_aer(teaching.model, teaching.tokenizer, examples)
    for mine, theirs in zip(scores["raw"].heads, reference.heads):
        assert mine == pytest.approx(theirs)
    assert scores["raw"].layer_mean == pytest.approx(reference.layer_mean)
    assert scores["raw"].sentences == 3 and len(scores["alti"].heads[0]) == 1
    assert -1 <= scores["alti"].faithfulness <= 1


def test_the_command_writes_the_json_the_issue_asks_for(teaching, tmp_path, monkeypatch, capsys):
    examples = _examples()
    corpus = ParallelCorpus("en", "fr", [], [], [(e.src, e.tgt) for e in examples], "three teaching sentences",
                            alignments={(e.src, e.tgt): e.links for e in examples})
    monkeypatch.setattr(cli, "load_corpus", lambda spec: corpus)  # the full corpus takes ~20 s to generate
    out = tmp_path / "lenses.json"
    assert cli.main(["--checkpoint", TEACHING, "--split", "test", "--json", str(out),
                     "--lenses", "raw", "shift", "rollout"]) == 0
    data = json.loads(out.read_text())
    assert list(data) == ["raw", "shift", "rollout"]
    for row in data.values():
        assert set(row["best"]) == {"layer", "head", "aer"} and 0 <= row["best"]["aer"] <= 1
        assert len(row["layer_mean_aer"]) == 2 and -1 <= row["faithfulness"] <= 1
    assert data["rollout"]["best"]["head"] is None and isinstance(data["raw"]["best"]["head"], int)
    assert "| raw |" in capsys.readouterr().out


def test_the_command_refuses_a_model_without_gold_links(capsys):
    assert cli.main(["--checkpoint", "checkpoints/en-fr-bible", "--lenses", "raw"]) == 2
    assert "not trained on the teaching corpus" in capsys.readouterr().err


def test_occluded_rows_hide_each_words_pieces_and_nothing_else():
    from transformer.explain.occlusion import n_words, occluded_rows

    index = [0, 0, 1, None]  # two pieces of word 0, word 1, then </s> (no word)
    assert n_words(index) == 2 and n_words([None]) == 0
    rows = occluded_rows(torch.tensor([[5, 6, 7, 2]]), index, SPECIALS.unk)
    assert rows.tolist() == [[SPECIALS.unk, SPECIALS.unk, 7, 2], [5, 6, SPECIALS.unk, 2]]
    assert occluded_rows([5, 6, 7, 2], [None] * 4, SPECIALS.unk).shape == (0, 4)


def test_the_norm_lens_layer_map_is_the_norm_of_the_head_summed_vector():
    from tests.explain.test_lenses import OUT, SRC, tiny
    from transformer.explain.lenses import lens_maps, renormalise
    from transformer.explain.lenses.trace import trace

    model = tiny()
    traced = trace(model, SRC, OUT, specials=SPECIALS)
    maps = lens_maps(model, SRC, OUT, "norm", specials=SPECIALS)
    attn, sub = model.decoder_layers[1].cross_attn, traced.cross[1]
    H, Dh = model.config.n_heads, model.config.d_head
    _, v = attn.project_kv(sub.keys_input[None])  # (1, H, S, Dh)
    moved = torch.zeros(sub.weights.shape[1], len(SRC), model.config.d_model)  # Σ_h alpha^h_ij f^h(x_j): (Lq, S, D)
    for h in range(H):
        concat = torch.zeros(len(SRC), H * Dh)
        concat[:, h * Dh : (h + 1) * Dh] = v[0, h]
        moved += sub.weights[h][:, :, None] * (attn.w_o(concat) - attn.w_o.bias)[None]
    expected = renormalise(moved.norm(dim=-1))[: len(OUT)]
    (layer,) = maps.layer_maps.cross[1]  # one map: the layer's
    torch.testing.assert_close(layer, expected, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(layer, maps.cross[1].mean(dim=0), atol=1e-3)  # not the mean of the per-head maps
    assert len(maps.cross[1]) == H  # the per-head maps stay as they are
    assert lens_maps(model, SRC, OUT, "raw", specials=SPECIALS).layer_maps is None  # the others: the heads' mean


def test_the_lenses_command_scores_the_norm_lens_layer_by_its_own_map():
    from tests.explain.test_lenses import _examples
    from transformer.explain.alignment import AlignmentCounts, argmax_links, count_links, word_attention
    from transformer.explain.lenses import lens_maps
    from transformer.explain.lenses.scores import _usable, score_lenses

    if not (SHIPPED / "en-fr-teaching").is_dir():
        pytest.skip("needs the shipped models")
    teaching = Translator(load_checkpoint(SHIPPED / "en-fr-teaching"))
    examples = _examples()
    expected = [AlignmentCounts() for _ in range(teaching.model.config.n_decoder_layers)]
    for ex in examples:
        src_ids, output, src_words, tgt_words = _usable(teaching.tokenizer, ex, teaching.model.config.max_len - 1)
        layers = lens_maps(teaching.model, src_ids, output, "norm", specials=teaching.specials).layer_maps.cross
        for i, layer in enumerate(layers):
            expected[i] += count_links(argmax_links(word_attention(layer, tgt_words, src_words)[0]), ex.links,
                                       ex.possible)
    scores = score_lenses(teaching.model, teaching.tokenizer, examples, ["norm"])["norm"]
    assert sum(c.sure for c in expected) > 0
    assert scores.layer_mean == pytest.approx([c.aer for c in expected])

"""Attributions of one output token (transformer/explain/attribution.py) on constructed cases with known answers."""


import pytest
import torch
from torch import Tensor

from tests.app_fixtures import (
    PAIRS,
    tiny_and_other,  # noqa: F401  (a fixture)
)
from tests.conftest import SPECIALS
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding.translate import Translator
from transformer.explain import Intervention, intervened, teacher_forced
from transformer.explain.attribution import MAX_IG_STEPS, METHODS, attribute, candidates, word_labels
from transformer.explain.stream import Inputs, log_probs_from_embeddings, token_embeddings
from transformer.model.checkpoint import Checkpoint, load_checkpoint
from transformer.model.config import ModelConfig
from transformer.model.layers import Transformer

SENTENCE = "the woman reads a book near the garden ."


def tiny_translator(seed: int = 0, **overrides) -> Translator:
    """A random model over a BPE vocabulary small enough that some words are cut into several pieces."""
    tokenizer = train_tokenizer(PAIRS, kind="bpe", vocab_size=120, shared=False, min_frequency=1)
    torch.manual_seed(seed)
    config = ModelConfig(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size,
                         d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64, dropout=0.0,
                         max_len=64, **overrides)
    model = Transformer(config).eval()
    return Translator(Checkpoint(None, config, model, tokenizer))


@pytest.fixture(scope="module")
def translator():
    return tiny_translator()


@pytest.fixture(scope="module")
def translation(translator):
    return translator.translate(SENTENCE)


def test_word_labels_merge_pieces_as_alignment_does():
    index, labels = word_labels(["▁The", "▁begin", "ning", "▁l'", "homme", ".", "</s>"])
    assert index == [0, 1, 1, 2, 3, 4, None]
    assert labels == ("The", "beginning", "l'", "homme", ".")


@pytest.mark.parametrize("baseline", ["zeros", "pad"])
def test_integrated_gradients_sum_to_the_difference_from_the_baseline(translation, baseline):
    # float64, so that what is left is the Riemann sum's own error (float32 noise is ~1e-3 of a small difference);
    # ReLU and layer norm make the path's integrand rough: 50 steps missed by 3% on one token here, so 256
    translator = tiny_translator()
    model = translator.model.double()
    for position in range(min(3, len(translation.token_ids))):
        result = attribute(model, translator.tokenizer, translation.source_ids, translation.token_ids,
                           position, baseline=baseline, steps=256, methods=["integrated_gradients"])
        check = result.completeness
        assert abs(check.f_input - check.f_baseline) > 0.05  # a real difference to account for
        assert check.relative_gap < 0.01, check
        scores = result.methods["integrated_gradients"]
        assert scores.total == pytest.approx(check.attributed, abs=1e-4)  # words + prefix + special is everything
        assert len(scores.source) == len(result.source_words) and len(scores.prefix) == len(result.prefix_words)


def test_f_is_the_teacher_forced_log_probability(translator, translation):
    forced = teacher_forced(translator.model, translation.source_ids, translation.token_ids, specials=SPECIALS)
    for position in range(len(translation.token_ids)):
        result = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids,
                           position, methods=["saliency"])
        assert result.f == pytest.approx(float(forced.log_probs[position]), abs=1e-5)
        assert len(result.prefix_words) == len(word_labels(
            translator.tokenizer.target_pieces([SPECIALS.start, *translation.token_ids[:position]]))[1])


def test_occlusion_is_the_drop_when_every_piece_of_the_word_is_unknown(translator, translation):
    position = 1
    result = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids,
                       position, methods=["occlusion"])
    index, _ = word_labels(translator.tokenizer.source_pieces(translation.source_ids))
    assert any(index.count(w) > 1 for w in set(index) - {None})  # some word has several pieces
    forced = teacher_forced(translator.model, translation.source_ids, translation.token_ids, specials=SPECIALS)
    base = float(forced.log_probs[position])
    for word, score in enumerate(result.methods["occlusion"].source):
        occluded = [SPECIALS.unk if w == word else i for i, w in zip(translation.source_ids, index)]
        forced = teacher_forced(translator.model, occluded, translation.token_ids, specials=SPECIALS)
        assert score == pytest.approx(base - float(forced.log_probs[position]), abs=1e-5)
    assert any(abs(s) > 1e-4 for s in result.methods["occlusion"].source)


def test_a_source_the_output_cannot_depend_on_gets_zero_from_every_method(translator, translation):
    # every cross-attention head off: the decoder never reads the encoder, so no source word can matter
    heads = frozenset(("cross", layer, head) for layer in range(2) for head in range(4))
    deaf = intervened(translator.model, Intervention(heads))
    result = attribute(deaf, translator.tokenizer, translation.source_ids, translation.token_ids, 2, steps=256)
    for method in METHODS:
        assert result.methods[method].source == pytest.approx([0.0] * len(result.source_words), abs=1e-6), method
    assert any(abs(s) > 1e-4 for s in result.methods["occlusion"].prefix)  # the prefix still matters
    assert result.completeness.relative_gap < 0.01


def test_contrastive_with_the_target_as_its_own_foil_is_zero_everywhere(translator, translation):
    target = translation.token_ids[1]
    result = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 1,
                       foil=target)
    assert result.f == 0.0
    for scores in result.methods.values():
        assert all(s == 0.0 for s in (*scores.source, *scores.prefix, scores.special))


def test_contrastive_f_is_the_log_probability_difference(translator, translation):
    found = candidates(translator.model, translation.source_ids, translation.token_ids, 1, k=5, specials=SPECIALS)
    assert [c.log_prob for c in found] == sorted((c.log_prob for c in found), reverse=True)
    assert not {SPECIALS.pad, SPECIALS.start} & {c.token for c in found}
    foil = next(c for c in found if c.token != translation.token_ids[1])
    plain = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 1,
                      methods=["occlusion"])
    contrast = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 1,
                         foil=foil.token, steps=256, methods=["occlusion", "integrated_gradients"])
    assert contrast.f == pytest.approx(plain.log_prob - foil.log_prob, abs=1e-5)
    assert contrast.foil_log_prob == pytest.approx(foil.log_prob, abs=1e-5)
    assert contrast.completeness.relative_gap < 0.01


def test_bad_requests_are_refused(translator, translation):
    with pytest.raises(ValueError, match="position must be an integer from 0 to"):
        attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 99)
    with pytest.raises(ValueError, match="methods must be a list of"):
        attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 0,
                  methods=["lime"])


def test_the_model_keeps_its_mode_and_gets_no_gradients(translator, translation):
    model = translator.model.train()
    try:
        attribute(model, translator.tokenizer, translation.source_ids, translation.token_ids, 0)
        assert model.training and all(p.grad is None for p in model.parameters())
    finally:
        model.eval()


def test_input_x_gradient_is_the_derivative_of_scaling_each_embedding():
    """sum_d e_d df/de_d = d/da f(a e_j) at a = 1: checked by a central difference in float64, without autograd."""
    translator = tiny_translator(seed=2)
    model = translator.model.double()
    translation = translator.translate(SENTENCE)
    position = 2
    result = attribute(model, translator.tokenizer, translation.source_ids, translation.token_ids, position,
                       methods=["input_x_gradient", "saliency"])
    inputs = Inputs.of(model, translation.source_ids, [SPECIALS.start, *translation.token_ids[:position]])
    target = translation.token_ids[position]
    index, _ = word_labels(translator.tokenizer.source_pieces(translation.source_ids))
    with torch.no_grad():
        e_src, e_tgt = token_embeddings(model, inputs.src, "src"), token_embeddings(model, inputs.tgt, "tgt")

        def f(scale: Tensor) -> float:  # scale (S,): each source token's embedding multiplied by it
            return float(log_probs_from_embeddings(model, inputs, e_src * scale[None, :, None], e_tgt)[0, target])

        h = 1e-4
        for word, expected in enumerate(result.methods["input_x_gradient"].source):
            scale = torch.tensor([1.0 if w != word else 1.0 + h for w in index], dtype=torch.float64)
            down = torch.tensor([1.0 if w != word else 1.0 - h for w in index], dtype=torch.float64)
            assert (f(scale) - f(down)) / (2 * h) == pytest.approx(expected, abs=1e-6, rel=1e-5)
    assert all(s >= 0 for s in result.methods["saliency"].source)


WOMAN = "the woman reads a book ."


def test_integrated_gradients_raises_its_steps_until_the_gap_is_under_5_percent(tiny_and_other):  # noqa: F811
    translator = Translator(load_checkpoint(tiny_and_other / "tiny"))
    translation = translator.translate(WOMAN)
    args = (translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 1)
    coarse = attribute(*args, steps=1, methods=["integrated_gradients"]).completeness
    assert coarse.steps == 1 and coarse.relative_gap >= 0.05  # one point misses: the case to raise
    raised = attribute(*args, steps=1, methods=["integrated_gradients"], target_gap=0.05).completeness
    assert raised.relative_gap < 0.05 and 1 < raised.steps <= MAX_IG_STEPS
    bounded = attribute(*args, steps=1, methods=["integrated_gradients"], target_gap=1e-9, max_steps=8).completeness
    assert bounded.steps == 8  # never past the bound, even when the gap stays over the target

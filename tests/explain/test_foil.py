"""Any typed word as the foil: its first piece, said when it has several; attribution and activation
patching measure log p(token) - log p(foil) for it (constructed cases with known answers)."""

import pytest
import torch

from tests.conftest import SPECIALS
from tests.explain.test_attribution import tiny_translator
from transformer.explain import teacher_forced
from transformer.explain.attribution import attribute
from transformer.explain.foil import foil_word
from transformer.explain.patching import activation_patching

CLEAN = "the woman reads a book ."


@pytest.fixture(scope="module")
def translator():
    return tiny_translator(seed=1)


@pytest.fixture(scope="module")
def pair(translator):
    clean = translator.prepare(CLEAN).ids
    other = [*clean[:1], clean[1] + 1, *clean[2:]]  # one piece swapped
    output = translator.translate(CLEAN).token_ids
    return clean, other, [SPECIALS.start, *output[:1]], output[1]


def test_a_typed_word_is_its_first_target_piece_and_says_when_it_has_several(translator):
    tokenizer = translator.tokenizer
    one = foil_word(tokenizer, " la ")
    assert (one.word, one.id, one.pieces, one.several, one.note) == ("la", tokenizer.encode_target("la")[1], ("▁la",),
                                                                     False, "")
    several = foil_word(tokenizer, "femme")
    ids = tokenizer.encode_target("femme")[1:-1]
    assert len(ids) > 1 and several.id == ids[0] and several.pieces == tuple(tokenizer.target_pieces(ids))
    assert several.several and several.piece == several.pieces[0] and f"{len(ids)} pieces" in several.note


@pytest.mark.parametrize("word, message", [("", "type a target word"), ("  ", "type a target word"),
                                           (3, "type a target word"), ("la femme", "one word, got 2"),
                                           ("日本", "pieces the target vocabulary lacks (<unk>)")])
def test_a_foil_the_tokenizer_cannot_make_is_refused(translator, word, message):
    with pytest.raises(ValueError, match="^foil: ") as error:
        foil_word(translator.tokenizer, word)
    assert message in str(error.value)


def test_attribution_against_a_typed_foil_explains_the_difference_of_log_probabilities(translator, pair):
    clean, _, decoder_input, target = pair
    foil = foil_word(translator.tokenizer, "femme")
    output = [*decoder_input[1:], target]
    result = attribute(translator.model, translator.tokenizer, clean, output, len(output) - 1, foil=foil.id,
                       methods=("saliency",))
    logp = teacher_forced(translator.model, clean, [*output[:-1], foil.id], specials=SPECIALS).log_probs[-1]
    assert result.foil == foil.id and result.foil_log_prob == pytest.approx(float(logp), abs=1e-5)
    assert result.f == pytest.approx(result.log_prob - result.foil_log_prob, abs=1e-6)


def test_patching_against_a_foil_is_the_difference_of_the_two_maps_and_has_the_known_answers(translator, pair):
    clean, other, decoder_input, target = pair
    model, foil = translator.model, foil_word(translator.tokenizer, "femme").id
    contrast = activation_patching(model, clean, other, decoder_input, target, foil=foil)
    alone, of_foil = (activation_patching(model, clean, other, decoder_input, token) for token in (target, foil))
    assert contrast.foil == foil and alone.foil is None
    # known answer 1: the measure in each run is log p(target) - log p(foil), teacher-forced
    for run, ids in (("clean_log_prob", clean), ("counterfactual_log_prob", other)):
        lp = [float(teacher_forced(model, ids, [*decoder_input[1:], t], specials=SPECIALS).log_probs[-1])
              for t in (target, foil)]
        assert getattr(contrast, run) == pytest.approx(lp[0] - lp[1], abs=1e-5)
    # known answer 2: patching the one embedding that differs makes the clean run, so its effect is the difference
    differs = next(s for s, (a, b) in enumerate(zip(clean, other)) if a != b)
    assert contrast.residual[0][differs] == pytest.approx(contrast.difference, abs=1e-4)
    assert all(abs(v) < 1e-6 for s, v in enumerate(contrast.residual[0]) if s != differs)
    # every effect is the target's minus the foil's: the contrast is linear in the two log-probabilities
    for a, b, c in zip(alone.residual, of_foil.residual, contrast.residual):
        assert c == pytest.approx([x - y for x, y in zip(a, b)], abs=1e-4)
    for family, rows in contrast.heads.items():
        for a, b, c in zip(alone.heads[family], of_foil.heads[family], rows):
            assert c == pytest.approx([x - y for x, y in zip(a, b)], abs=1e-4)
    assert abs(contrast.difference - (alone.difference - of_foil.difference)) < 1e-4 and abs(contrast.difference) > 1e-3


def test_the_target_as_its_own_foil_measures_zero_everywhere(translator, pair):
    clean, other, decoder_input, target = pair
    same = activation_patching(translator.model, clean, other, decoder_input, target, foil=target)
    assert same.clean_log_prob == same.counterfactual_log_prob == 0.0
    assert all(v == 0.0 for row in same.residual for v in row)
    assert all(v == 0.0 for rows in same.heads.values() for row in rows for v in row)
    with pytest.raises(ValueError, match="foil"):
        activation_patching(translator.model, clean, other, decoder_input, target, foil=10**6)


def test_contrastive_attribution_is_the_targets_minus_the_foils_and_f_the_logit_difference(translator, pair):
    """Yin & Neubig (2022) explain q(y_t) - q(y_foil) with q the logits: the softmax's normaliser cancels, so it is
    our log p(y_t) - log p(foil); and every method linear in f (input x gradient, integrated gradients on the same
    path, occlusion) gives the target's attribution minus the foil's, each explained alone."""
    clean, _, decoder_input, target = pair
    model, tokenizer = translator.model, translator.tokenizer
    foil = foil_word(tokenizer, "femme").id
    output = [*decoder_input[1:], target]
    methods = ("input_x_gradient", "integrated_gradients", "occlusion")
    contrast, alone, of_foil = (attribute(model, tokenizer, clean, [*output[:-1], token], len(output) - 1, foil=f,
                                          steps=16, methods=methods)
                                for token, f in ((target, foil), (target, None), (foil, None)))
    with torch.no_grad():
        logits = model(torch.tensor([clean]), torch.tensor([decoder_input])).logits[0, -1]  # (V,)
    assert contrast.f == pytest.approx(float(logits[target] - logits[foil]), abs=1e-5)
    for method in methods:
        for side in ("source", "prefix"):
            a, b = (getattr(result.methods[method], side) for result in (alone, of_foil))
            expected = [x - y for x, y in zip(a, b)]
            assert getattr(contrast.methods[method], side) == pytest.approx(expected, abs=1e-4), (method, side)
    assert any(abs(v) > 1e-3 for v in contrast.methods["integrated_gradients"].source)

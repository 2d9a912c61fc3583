"""The model's own translation beside a forced one: totals that are teacher-forced sums, maps that
are the teacher-forced pass's, the difference own - forced over the rows both have, and the typed foil's
contrast in one call."""

import math

import pytest
import torch

from tests.conftest import tiny_config
from tests.decoding.test_forced_prefix import PAIRS, teacher_forced
from tests.explain.test_attribution import tiny_translator
from transformer import Transformer
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain.contrast import contrast
from transformer.explain.foil import foil_word
from transformer.explain.forced_comparison import compare_forced, head_map, shared_prefix
from transformer.model.checkpoint import Checkpoint


@pytest.fixture(scope="module")
def translator():
    """A random wordlevel model whose outputs often run to the length limit (12) and sometimes end early."""
    tokenizer = train_tokenizer(PAIRS, kind="wordlevel", vocab_size=50, min_frequency=1)
    torch.manual_seed(4)
    config = tiny_config(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size, max_len=12)
    return Translator(Checkpoint(None, config, Transformer(config).eval(), tokenizer))


@pytest.fixture(scope="module")
def one_word(translator):
    """Every source of PAIRS forced to start with every word other than the model's own first one (a random model's
    choices shift with the number of threads, so the tests find their cases rather than name them)."""
    out = []
    for source, _ in PAIRS:
        own = translator.translate(source).token_ids
        out += [compare_forced(translator, source, [t]) for t in range(4, translator.tokenizer.tgt_vocab_size)
                if t != own[0]]
    return out


@pytest.fixture(scope="module")
def no_difference(translator):
    """The model's own finished output with another piece in place of its </s>: the forced output is longer, and the
    rows both have read the same pieces in both (found, not named: see one_word)."""
    for source, _ in PAIRS:
        own = translator.translate(source).token_ids
        if own[-1] == translator.specials.eos and len(own) > 1:
            other = next(t for t in range(4, translator.tokenizer.tgt_vocab_size) if t != own[-2])
            return compare_forced(translator, source, list(own[:-1]) + [other])
    pytest.fail("no source of PAIRS gets a finished output from the random model")


def _cross(translator, source_ids, tokens):
    return torch.stack(translator.attention_maps(source_ids, tokens).cross)  # (L, H, T, S)


@pytest.mark.parametrize("settings", [SearchSettings(), SearchSettings(beam_size=3)], ids=lambda s: s.method)
def test_each_side_is_the_search_output_with_teacher_forced_totals_and_maps(translator, settings):
    both = compare_forced(translator, "the house is big", "la maison", settings)
    source_ids = translator.prepare("the house is big").ids
    assert both.prefix == tuple(translator.prefix_ids("la maison")) and len(both.prefix) == 2
    assert both.source_pieces == tuple(translator.prepare("the house is big").pieces)
    assert both.source_ids == tuple(source_ids)
    for side, expected in ((both.own, translator.translate("the house is big", settings)),
                           (both.forced, translator.translate("the house is big", settings, prefix="la maison"))):
        assert side.token_ids == tuple(expected.token_ids) and side.text == expected.text
        assert side.pieces == tuple(expected.target_pieces)
        scored = teacher_forced(translator, source_ids, list(side.token_ids))  # one pass, computed apart
        assert side.log_probs == pytest.approx(scored, abs=1e-5)
        assert side.score == pytest.approx(sum(scored), abs=1e-4) == pytest.approx(expected.score, abs=1e-4)
        assert side.cross.shape == (2, 4, len(side.token_ids), len(source_ids))
        assert torch.allclose(side.cross, _cross(translator, source_ids, list(side.token_ids)))
        assert torch.allclose(side.cross.sum(-1), torch.ones(side.cross.shape[:3]), atol=1e-5)  # rows sum to 1
    assert both.own.forced == (False,) * len(both.own.token_ids)
    assert both.forced.forced == (True, True) + (False,) * (len(both.forced.token_ids) - 2)
    assert both.forced.token_ids[:2] == both.prefix and not both.same


def test_the_difference_is_own_minus_forced_and_zero_on_the_rows_that_read_the_same_pieces(one_word):
    both = next(c for c in one_word if len(c.own.token_ids) == len(c.forced.token_ids) > 2)
    n = len(both.own.token_ids)
    assert both.shared == 0 and both.rows == n and both.difference.shape == both.own.cross.shape
    assert torch.equal(both.difference, both.own.cross - both.forced.cross)
    assert both.difference[:, :, 0].abs().max() < 1e-6  # query 0 read the start token in both
    assert both.difference[:, :, 1:].abs().max() > 1e-3  # then they part
    assert "The first row is equal" in both.note and "every row" in both.note
    layer, head = 1, 2
    assert torch.equal(both.difference_map(layer, head), both.difference[layer, head])
    assert torch.allclose(both.difference_map(layer), both.own.cross_map(layer) - both.forced.cross_map(layer),
                          atol=1e-6)  # the mean of the heads' differences is the difference of their means
    assert torch.allclose(both.own.cross_map(layer), both.own.cross[layer].mean(0))


def test_forcing_the_models_own_words_gives_the_same_outputs_and_a_zero_difference(translator):
    own = translator.translate("the house is big")
    both = compare_forced(translator, "the house is big", own.token_ids[:3])
    assert both.same and both.shared == len(own.token_ids) == both.rows
    assert both.forced.forced[:3] == (True,) * 3 and not any(both.forced.forced[3:])
    assert both.own.score == pytest.approx(both.forced.score, abs=1e-5)
    assert both.difference.abs().max() < 1e-6 and "what the model would have said" in both.note


def test_outputs_of_different_lengths_compare_the_rows_both_have(translator, one_word):
    parted = [c for c in one_word if len(c.own.token_ids) != len(c.forced.token_ids)]
    assert parted  # forcing another first word mostly changes the length
    for c in parted:
        t_own, t_forced = len(c.own.token_ids), len(c.forced.token_ids)
        rows = min(t_own, t_forced)
        assert f"{t_own} and {t_forced} pieces" in c.note and f"the first {rows} rows, the ones both have" in c.note
        assert f"the {'own' if t_own > t_forced else 'forced'} output's last" in c.note
        if rows == 1:  # row 0 read the start token in both: nothing differs
            assert c.difference is None and c.rows == 0 and "no difference to draw" in c.note
            continue
        assert c.rows == rows and c.difference.shape == (2, 4, rows, len(c.source_pieces))
        assert torch.equal(c.difference, c.own.cross[:, :, :rows] - c.forced.cross[:, :, :rows])
        assert c.difference[:, :, 0].abs().max() < 1e-6 and c.difference[:, :, 1:].abs().max() > 1e-3
        assert torch.equal(c.difference_map(1, 2), c.difference[1, 2])


def test_when_the_rows_both_have_read_the_same_pieces_there_is_no_difference_and_the_note_says_why(no_difference):
    c = no_difference
    t_own, t_forced = len(c.own.token_ids), len(c.forced.token_ids)
    assert t_forced > t_own and c.shared == t_own - 1 and not c.same
    assert c.difference is None and c.rows == 0 and c.difference_map(1) is None
    assert f"the first {t_own} rows, the ones both have" in c.note and c.note.endswith("no difference to draw.")


def test_a_bad_prefix_or_pick_is_refused_with_its_reason(translator):
    for prefix, message in [("zèbre", "prefix: 'zèbre' has pieces the target vocabulary lacks"),
                            ([], "prefix: no pieces to force"), ([2], "prefix: piece 1 is </s>"),
                            ([4] * 12, "prefix: 12 pieces, but the output limit")]:
        with pytest.raises(ValueError, match="^prefix: ") as error:
            compare_forced(translator, "a cat", prefix)
        assert message in str(error.value)
    with pytest.raises(ValueError, match="^nothing to translate"):
        compare_forced(translator, "   ", "la")
    maps = torch.zeros(2, 4, 3, 5)
    with pytest.raises(IndexError, match="layer must be between 0 and 1, got 2"):
        head_map(maps, 2, None)
    with pytest.raises(IndexError, match="head must be between 0 and 3, got -1"):
        head_map(maps, 0, -1)
    assert shared_prefix([1, 2, 3], [1, 2]) == 2 and shared_prefix([4], [5]) == 0


def test_contrast_attributes_a_typed_words_first_piece_in_one_call():
    translator = tiny_translator(seed=1)
    output = translator.translate("the woman reads a book .")
    why = contrast(translator.model, translator.tokenizer, output.source_ids, output.token_ids, 1, "femme",
                   methods=("integrated_gradients",), steps=16)
    foil = foil_word(translator.tokenizer, "femme")
    assert why.foil == foil and why.attribution.foil == foil.id and why.foil.several
    scored = teacher_forced(translator, output.source_ids, [*output.token_ids[:1], foil.id])
    assert why.attribution.foil_log_prob == pytest.approx(scored[1], abs=1e-5)
    assert why.attribution.log_prob == pytest.approx(math.log(output.token_probs[1]), abs=1e-5)
    assert why.attribution.f == pytest.approx(why.attribution.log_prob - why.attribution.foil_log_prob, abs=1e-6)
    assert list(why.attribution.methods) == ["integrated_gradients"] and why.attribution.completeness.steps == 16
    with pytest.raises(ValueError, match="^foil: one word, got 2"):
        contrast(translator.model, translator.tokenizer, output.source_ids, output.token_ids, 1, "la femme")

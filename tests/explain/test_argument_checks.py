"""The explain API as a researcher calls it: every bad argument is one `ValueError` naming the argument and its
range (never an IndexError, a TypeError, a tensor-size error or a silently wrong answer), and the costly methods
take no more than one app request may ask for."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from tests.conftest import SPECIALS as SP
from tests.explain.test_attribution import SENTENCE, tiny_translator
from transformer.decoding.translate import Translator
from transformer.explain import (
    Intervention,
    attribution,
    cell_arithmetic,
    checks,
    head_importance,
    head_statistics,
    teacher_forced,
    views,
)
from transformer.explain.attribution import attribute, candidates
from transformer.explain.lenses import lens_maps
from transformer.explain.lenses.trace import trace
from transformer.explain.lenses.value_zeroing import value_zeroing
from transformer.explain.logit_lens import encoder_cut, logit_lens
from transformer.explain.patching import activation_patching
from transformer.model.checkpoint import Checkpoint
from transformer.model.config import ModelConfig
from transformer.model.layers import Transformer


@pytest.fixture(scope="module")
def translator():
    return tiny_translator()

@pytest.fixture(scope="module")
def translation(translator):
    return translator.translate(SENTENCE, attention=True)

@pytest.fixture(scope="module")
def long_model(translator):
    """A tiny model whose max_len (512) is beyond the app's limits, so that those limits are what bites."""
    torch.manual_seed(0)
    config = ModelConfig(src_vocab_size=translator.model.config.src_vocab_size,
                         tgt_vocab_size=translator.model.config.tgt_vocab_size, d_model=16, n_heads=2,
                         n_encoder_layers=1, n_decoder_layers=1, d_ff=32, dropout=0.0, max_len=512)
    model = Transformer(config).eval()
    return Translator(Checkpoint(None, config, model, translator.tokenizer))

def refused(call, name: str, *range_words: str) -> str:
    """The ValueError `call` raises, checked to name the argument and its range."""
    with pytest.raises(ValueError) as caught:
        call()
    message = str(caught.value)
    assert name in message, message
    for word in range_words:
        assert word in message, message
    return message

def test_the_api_limits_are_the_apps():
    from ui.shared.attention import lens_switch
    from ui.shared.models import translation_gate

    assert checks.MAX_SOURCE_TOKENS == translation_gate.MAX_SOURCE_TOKENS
    assert checks.MAX_OUTPUT_TOKENS == translation_gate.OUTPUT_LIMIT
    assert checks.MAX_ZEROED == lens_switch.MAX_ZEROED


def test_integer_takes_integers_of_any_kind_and_refuses_everything_else():
    assert checks.integer(np.int64(3), "n", 0, 5) == 3 and checks.integer(torch.tensor(2), "n", 0, 5) == 2
    for value in (True, 2.0, "2", None, torch.tensor(2.0), torch.tensor([1, 2]), [1], "x" * 5000):
        message = refused(lambda value=value: checks.integer(value, "n", 0, 5), "n must be an integer from 0 to 5")
        assert len(message) < 120
    refused(lambda: checks.integer(6, "n", 0, 5), "got 6")
    refused(lambda: checks.token_ids([[1, 2]], "ids", 10, 5), "ids[0]")


# ----------------------------------------------------------------------------- attribution and candidates

@pytest.mark.parametrize("change, name, words", [
    ({"source_ids": []}, "source_ids", ["1 to"]),
    ({"source_ids": [-1, SP.eos]}, "source_ids[0]", ["from 0 to"]),
    ({"output_ids": "vocab"}, "output_ids[0]", ["from 0 to"]),
    ({"foil": "vocab"}, "foil", ["from 0 to"]),
    ({"foil": -1}, "foil", ["from 0 to"]),
    ({"steps": "50"}, "steps", ["from 1 to"]),
    ({"steps": 1.5}, "steps", ["from 1 to"]),
    ({"steps": math.nan}, "steps", ["from 1 to"]),
    ({"steps": 0}, "steps", ["from 1 to"]),
    ({"steps": 10**7}, "steps", [f"to {checks.MAX_STEPS}"]),
    ({"position": 1.0}, "position", ["from 0 to"]),
    ({"position": -1}, "position", ["from 0 to"]),
    ({"source_ids": "too long"}, "source_ids", ["1 to 64", "max_len"]),
])
def test_attribute_refuses_each_bad_argument_by_name(translator, translation, change, name, words):
    vocab = translator.model.config.tgt_vocab_size
    kwargs = {"source_ids": translation.source_ids, "output_ids": translation.token_ids, "position": 1, "foil": None,
              "steps": 4}
    for key, value in change.items():
        if value == "vocab":
            value = [vocab] if key == "output_ids" else vocab
        elif value == "too long":
            value = [5] * 65
        kwargs[key] = value
    refused(lambda: attribute(translator.model, translator.tokenizer, **kwargs), name, *words)

@pytest.mark.parametrize("position, k, name", [(-1, 8, "position"), (999, 8, "position"), (1.0, 8, "position"),
                                               (0, -1, "k"), (0, 0, "k"), (0, 1.5, "k")])
def test_candidates_refuse_positions_outside_the_output_and_k_below_one(translator, translation, position, k, name):
    refused(lambda: candidates(translator.model, translation.source_ids, translation.token_ids, position, k,
                                       specials=SP), name,
            "from")

def test_attribution_takes_no_more_than_one_app_request(long_model):
    source, output = [5] * (checks.MAX_SOURCE_TOKENS + 1), [6] * 4
    refused(lambda: attribute(long_model.model, long_model.tokenizer, source, output, 0, steps=2), "source_ids",
            f"1 to {checks.MAX_SOURCE_TOKENS}")
    output = [6] * (checks.MAX_OUTPUT_TOKENS + 1)
    refused(lambda: attribute(long_model.model, long_model.tokenizer, [5, SP.eos], output, 0, steps=2), "output_ids",
            f"1 to {checks.MAX_OUTPUT_TOKENS}")

def test_integrated_gradients_batch_the_path_and_give_what_one_batch_gives(translator, translation, monkeypatch):
    model = tiny_translator().model.double()
    run = lambda: attribute(model, translator.tokenizer, translation.source_ids, translation.token_ids, 2,  # noqa: E731
                            steps=23, methods=["integrated_gradients"])
    whole = run()
    sizes = []
    gradients = attribution._gradients

    def recording(model, inputs, e_src, e_tgt, target, foil):
        sizes.append(e_src.size(0))
        return gradients(model, inputs, e_src, e_tgt, target, foil)
    monkeypatch.setattr(attribution, "IG_BATCH", 5)
    monkeypatch.setattr(attribution, "_gradients", recording)
    batched = run()
    assert sizes == [5, 5, 5, 5, 3]
    assert batched.completeness.attributed == pytest.approx(whole.completeness.attributed, abs=1e-10)
    assert batched.methods["integrated_gradients"].source == pytest.approx(
        whole.methods["integrated_gradients"].source, abs=1e-10)

# ----------------------------------------------------------------------------- patching, lenses, single passes

def test_patching_refuses_a_target_outside_the_vocabulary_and_inputs_beyond_the_limits(translator, long_model):
    model, vocab = translator.model, translator.model.config.tgt_vocab_size
    source = [5, 6, SP.eos]
    for target in (-1, vocab, 1.0):
        refused(lambda target=target: activation_patching(model, source, source, [SP.start, 7], target), "target",
                f"from 0 to {vocab - 1}")
    refused(lambda: activation_patching(model, source, source, [], 7), "decoder_input", "1 to")
    refused(lambda: activation_patching(model, [], [], [SP.start], 7), "clean_ids", "1 to")
    refused(lambda: activation_patching(model, source, [5, -1, SP.eos], [SP.start], 7), "counterfactual_ids[1]")
    long = [5] * (checks.MAX_SOURCE_TOKENS + 1)
    refused(lambda: activation_patching(long_model.model, long, long, [SP.start], 7), "clean_ids",
            f"1 to {checks.MAX_SOURCE_TOKENS}")

def test_value_zeroing_and_the_other_lenses_hold_the_app_limits(long_model):
    model = long_model.model
    half = checks.MAX_ZEROED // 2
    refused(lambda: lens_maps(model, [5] * half, [6] * (half + 1), "value_zeroing", specials=SP), "value zeroing",
            str(checks.MAX_ZEROED))
    refused(lambda: lens_maps(model, [5] * (checks.MAX_SOURCE_TOKENS + 1), [6, SP.eos], "raw", specials=SP), "src_ids",
            str(checks.MAX_SOURCE_TOKENS))
    refused(lambda: lens_maps(model, [5, SP.eos], [], "raw", specials=SP), "output_ids", "1 to")
    assert lens_maps(model, [5] * half, [6] * half, "value_zeroing", specials=SP).cross[0].shape == (1, half, half)
    traced = trace(model, [5] * half, [6] * (half + 1), specials=SP)  # the function itself, called without lens_maps
    refused(lambda: value_zeroing(model, traced), "value zeroing", str(checks.MAX_ZEROED))

@pytest.mark.parametrize("k", [-1, 0, 2.0])
def test_logit_lens_refuses_k_below_one(translator, translation, k):
    refused(lambda: logit_lens(translator.model, translation.source_ids, translation.token_ids, k=k, specials=SP), "k",
            "from 1")

def test_single_passes_refuse_sources_over_max_len_and_empty_outputs(translator, translation):
    model = translator.model  # max_len 64
    refused(lambda: teacher_forced(model, [5] * 65, translation.token_ids, specials=SP), "source_ids", "1 to 64")
    refused(lambda: teacher_forced(model, translation.source_ids, [], specials=SP), "output_ids", "1 to")
    refused(lambda: logit_lens(model, [5] * 65, translation.token_ids, specials=SP), "source_ids", "1 to 64")

@pytest.mark.parametrize("layer, head, query, name", [(99, 0, 0, "layer"), (-1, 0, 0, "layer"), (0, -1, 0, "head"),
                                                      (0, 99, 0, "head"), (0, 0, 1.0, "query"), (0, 0, -1, "query")])
def test_cell_arithmetic_refuses_layers_heads_and_queries_the_model_has_not(translator, translation, layer, head,
                                                                           query, name):
    decoder_input = [SP.start, *translation.token_ids[:-1]]
    refused(lambda: cell_arithmetic(translator.model, translation.source_ids, decoder_input, "cross", layer, head,
                                    query), name, "from 0 to")

def test_interventions_and_encoder_cuts_refuse_what_is_not_an_integer_or_a_positive_number(translator):
    refused(lambda: Intervention(heads_off={("cross", 1.5, 0)}), "layer", "of at least 0")
    refused(lambda: Intervention(heads_off={("cross", 0, -1)}), "head", "of at least 0")
    refused(lambda: Intervention(temperature="2"), "temperature", "positive")
    refused(lambda: Intervention(temperature=math.nan), "temperature", "positive")
    refused(lambda: encoder_cut(translator.model, 1.5), "n_layers", "from 0 to 2")


# ----------------------------------------------------------------------------- views

@pytest.mark.parametrize("call, name", [
    (lambda att: views.heatmaps(att, "cross", layers=[-1]), "layers[0]"),
    (lambda att: views.heatmaps(att, "cross", layers=[0, 99]), "layers[1]"),
    (lambda att: views.head_view(att, "cross", heads=[99]), "heads[0]"),
    (lambda att: views.head_view(att, "cross", heads=[-1]), "heads[0]"),
    (lambda att: views.head_view(att, "cross", layer=-1), "layer"),
    (lambda att: views.head_view(att, "cross", layer=1.0), "layer"),
    (lambda att: views.head_view_from(np.full((1, 1, 2, 2), 0.5), ["a", "b"], ["c", "d"], focus=2), "focus"),
    (lambda att: views.head_view_from(np.full((1, 1, 1, 2), 0.5), ["a", "b"], ["c", "d"], query_positions=[-1]),
     "query_positions[0]"),
])
def test_views_refuse_layers_and_heads_the_maps_have_not(translation, call, name):
    refused(lambda: call(translation.attention), name, "from 0 to")

def test_a_decoding_steps_head_view_refuses_a_family_a_step_has_not(translator):
    session = translator.session(SENTENCE)
    session.step()
    hyp = session.current.live[0]
    prefix, source = translator.tokenizer.target_pieces(hyp.prefix), translator.prepare(SENTENCE).pieces
    for family in ("enc_self", "crosss"):
        refused(lambda family=family: views.step_head_view(hyp, prefix, source, family), "family", "'dec_self'")
    refused(lambda: views.step_head_view(hyp, prefix, source, "cross", layer=7), "layer", "from 0 to 1")


def test_views_refuse_weights_that_are_not_finite():
    maps = np.full((2, 3, 4, 5), 0.2)
    maps[1, 2, 0, 3] = np.nan
    labels_q, labels_k = list("abcd"), list("vwxyz")
    for draw in (views.head_view_from, views.model_view_from, views.heatmaps_from):
        refused(lambda draw=draw: draw(maps, labels_q, labels_k), "weights", "layer 1, head 2")
    refused(lambda: views.heatmaps_from(maps[1:, 2:], labels_q, labels_k), "weights", "finite")
    refused(lambda: views.heatmaps_from(maps, labels_q[:3], labels_k), "4 queries", "3 query")

def test_eq1_picture_refuses_a_key_that_is_not_an_integer_position(translator, translation):
    cell = cell_arithmetic(translator.model, translation.source_ids, None, "enc_self", 0, 0, 0)
    labels = translation.attention.source_pieces
    for key in (1.5, -1, len(labels)):
        refused(lambda key=key: views.cell_flow(cell, "q", labels, key), "key", "from 0 to")
    broken = dataclasses.replace(cell, weights=cell.weights.clone().fill_(math.nan))
    refused(lambda: views.cell_flow(broken, "q", labels), "weights", "key 0")


@pytest.mark.parametrize("batch_size", [0, -1, 2.5])
def test_head_statistics_and_importance_refuse_a_batch_size_below_one(translator, batch_size):
    pairs = [(SENTENCE, SENTENCE)]
    refused(lambda: head_statistics(translator.model, translator.tokenizer, pairs, batch_size), "batch_size",
            "of at least 1")
    refused(lambda: head_importance(translator.model, translator.tokenizer, pairs, batch_size=batch_size),
            "batch_size", "of at least 1")

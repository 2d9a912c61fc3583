"""Activation patching on a counterfactual source pair (transformer/explain/patching.py): constructed cases."""

import pytest
import torch

from tests.conftest import SPECIALS
from tests.explain.test_attribution import tiny_translator
from transformer.explain import patching, teacher_forced
from transformer.explain.patching import PatchingError, activation_patching, check_pair
from transformer.explain.stream import replaced
from transformer.model.layers import MultiHeadAttention

CLEAN = "the woman reads a book ."


@pytest.fixture(scope="module")
def translator():
    return tiny_translator(seed=1)


@pytest.fixture(scope="module")
def pair(translator):
    clean = translator.prepare(CLEAN).ids
    other = [*clean[:1], clean[1] + 1, *clean[2:]]  # one piece swapped: "▁wo" for the next id of the vocabulary
    output = translator.translate(CLEAN).token_ids
    return clean, other, [SPECIALS.start, *output[:1]], output[1]


def hooks(model):
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def test_a_run_patched_into_itself_changes_nothing(translator, pair):
    clean, _, decoder_input, target = pair
    result = activation_patching(translator.model, clean, clean, decoder_input, target)
    assert result.difference == 0.0
    assert all(abs(v) < 1e-5 for row in result.residual for v in row)
    assert all(abs(v) < 1e-5 for rows in result.heads.values() for row in rows for v in row)


def test_the_map_has_a_known_answer_where_the_sources_agree_or_differ(translator, pair):
    clean, other, decoder_input, target = pair
    model = translator.model
    result = activation_patching(model, clean, other, decoder_input, target)
    forced = [teacher_forced(model, ids, [*decoder_input[1:], target], specials=SPECIALS).log_probs[-1]
              for ids in (clean, other)]
    assert result.clean_log_prob == pytest.approx(float(forced[0]), abs=1e-5)
    assert result.counterfactual_log_prob == pytest.approx(float(forced[1]), abs=1e-5)
    assert len(result.residual) == 3 and all(len(row) == len(clean) for row in result.residual)
    assert {f: (len(r), len(r[0])) for f, r in result.heads.items()} == {f: (2, 4) for f in result.heads}
    differs = next(s for s, (a, b) in enumerate(zip(clean, other)) if a != b)
    embeddings = result.residual[0]
    # the embeddings of an unchanged word are the same in both runs; patching the changed one makes the clean run
    assert all(abs(v) < 1e-6 for s, v in enumerate(embeddings) if s != differs)
    assert embeddings[differs] == pytest.approx(result.difference, abs=1e-4)
    # decoder layer 0's self-attention reads only the target prefix, the same in both runs
    assert all(abs(v) < 1e-6 for v in result.heads["dec_self"][0])
    assert abs(result.difference) > 1e-3 and hooks(model) == 0


def test_sources_of_different_lengths_are_refused_clearly(translator):
    long = translator.prepare("the woman reads a big book .").ids
    short = translator.prepare(CLEAN).ids
    with pytest.raises(PatchingError, match=rf"clean one has {len(long)} \(.*\), the counterfactual {len(short)}"):
        check_pair(long, short, translator.tokenizer.source_pieces(long), translator.tokenizer.source_pieces(short))
    with pytest.raises(PatchingError, match="same number of tokens"):
        activation_patching(translator.model, long, short, [SPECIALS.start], 5)


def test_the_shared_model_is_never_changed_not_even_while_a_patched_run_fails(translator, pair, monkeypatch):
    clean, other, decoder_input, target = pair
    model = translator.model
    originals = [m.w_o for m in model.modules() if isinstance(m, MultiHeadAttention)]
    seen, real = [], patching._log_prob

    def failing(logits, token, foil=None):  # calls 1-2: clean and counterfactual, 3-5: residual rows, 6: a head patch
        seen.append((hooks(model), [m.w_o for m in model.modules() if isinstance(m, MultiHeadAttention)]))
        if len(seen) == 6:
            raise RuntimeError("out of memory")
        return real(logits, token, foil)

    monkeypatch.setattr(patching, "_log_prob", failing)
    with pytest.raises(RuntimeError, match="out of memory"):
        activation_patching(model, clean, other, decoder_input, target)
    assert all(n == 0 and modules == originals for n, modules in seen)  # another thread decodes the plain model
    assert hooks(model) == 0 and not model.training


def test_a_replaced_view_shares_everything_but_the_swapped_module(translator):
    model = translator.model
    new = torch.nn.Identity()
    view = replaced(model, "decoder_layers.1.cross_attn.w_o", new)
    assert view.decoder_layers[1].cross_attn.w_o is new
    assert isinstance(model.decoder_layers[1].cross_attn.w_o, torch.nn.Linear)  # the model is untouched
    assert view.decoder_layers[0] is model.decoder_layers[0] and view.encoder_layers is model.encoder_layers
    assert view.decoder_layers[1].cross_attn.w_q is model.decoder_layers[1].cross_attn.w_q

"""The logit lens, DecoderLens and the residual-stream passes they run on (transformer/explain/logit_lens.py,
stream.py), on constructed cases with known answers."""

import pytest
import torch

from tests.conftest import SPECIALS
from tests.explain.test_attribution import SENTENCE, tiny_translator
from transformer.decoding.search import SearchSettings
from transformer.explain.logit_lens import decoder_lens, encoder_cut, logit_lens
from transformer.explain.stream import Inputs, log_probs_from_embeddings, token_embeddings


@pytest.fixture(scope="module", params=[True, False], ids=["pre-LN", "post-LN"])
def translator(request):
    return tiny_translator(seed=3, norm_first=request.param)


def test_a_pass_from_the_token_embeddings_equals_the_model(translator):
    model = translator.model
    source_ids = translator.prepare(SENTENCE).ids
    decoder_input = [SPECIALS.start, 5, 7, 9]
    inputs = Inputs.of(model, source_ids, decoder_input)
    ours = log_probs_from_embeddings(model, inputs, token_embeddings(model, inputs.src, "src"),
                                     token_embeddings(model, inputs.tgt, "tgt"))  # (1, V)
    with torch.no_grad():
        theirs = model(inputs.src, inputs.tgt).logits[:, -1].log_softmax(-1)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_the_last_layer_of_the_logit_lens_is_the_models_distribution(translator):
    translation = translator.translate(SENTENCE)
    lens = logit_lens(translator.model, translation.source_ids, translation.token_ids, k=4, specials=SPECIALS)
    assert lens.layers == ("embeddings", "layer 0", "layer 1")
    assert len(lens.cells) == 3 and all(len(row) == len(translation.token_ids) for row in lens.cells)
    src = torch.tensor([translation.source_ids])
    tgt = torch.tensor([[SPECIALS.start, *translation.token_ids[:-1]]])
    with torch.no_grad():
        probs = translator.model(src, tgt).logits[0].softmax(-1)  # (T, V)
    probs[:, [SPECIALS.pad, SPECIALS.start]] = 0.0  # never an output, as decoding rules them out
    for t, cell in enumerate(lens.cells[-1]):
        top = probs[t].topk(4)
        assert cell.tokens == tuple(top.indices.tolist())
        assert cell.probs == pytest.approx(top.values.tolist(), abs=1e-6)
        # greedy decoding emitted each token as the argmax of exactly this distribution
        assert cell.output_rank == 0 and cell.output_prob == pytest.approx(translation.token_probs[t], abs=1e-5)
    # the earlier layers are other distributions
    assert lens.top_tokens()[0] != lens.top_tokens()[-1] or lens.cells[0][0].probs != lens.cells[-1][0].probs


@pytest.mark.parametrize("settings", [SearchSettings(), SearchSettings(beam_size=3)], ids=["greedy", "beam"])
def test_decoder_lens_at_the_last_layer_is_the_normal_translation(translator, settings):
    normal = translator.translate(SENTENCE, settings)
    layers = decoder_lens(translator, SENTENCE, settings)
    assert [lt.layer for lt in layers] == ["embeddings", "layer 0", "layer 1"]
    assert layers[-1].translation.token_ids == normal.token_ids
    assert layers[-1].translation.score == pytest.approx(normal.score, abs=1e-5)
    assert len(translator.model.encoder_layers) == 2  # the model keeps its layers


def test_an_encoder_cut_reads_the_intermediate_layer_through_the_final_norm(translator):
    model = translator.model
    src = torch.tensor([translator.prepare(SENTENCE).ids])
    with torch.no_grad():
        x = model.src_embed(src)
        after_0 = model.encoder_layers[0](x, src != 0, False)[0]
        torch.testing.assert_close(encoder_cut(model, 0).encode(src).memory, model.encoder_norm(x))
        torch.testing.assert_close(encoder_cut(model, 1).encode(src).memory, model.encoder_norm(after_0))
        torch.testing.assert_close(encoder_cut(model, 2).encode(src).memory, model.encode(src).memory)
    assert encoder_cut(model, 1).generator is model.generator  # a view: nothing copied
    with pytest.raises(ValueError, match="n_layers must be an integer from 0 to 2"):
        encoder_cut(model, 3)

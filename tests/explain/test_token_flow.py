"""One token through the whole model (transformer.explain.flow): every stage equals the model's own forward pass,
read with hooks on its modules, in pre-LN and post-LN; the temperature's probabilities and draws are sampling's."""

from pathlib import Path

import pytest
import torch

from tests.conftest import SPECIALS, tiny_config
from transformer import Transformer
from transformer.data.tokenizer import SpecialIds
from transformer.decoding.search import SearchSettings, greedy_decode, sample
from transformer.explain.flow import TEMPERATURES, neuron_examples, token_flow
from transformer.model.checkpoint import load_checkpoint

TEACHING = Path(__file__).resolve().parents[2] / "checkpoints" / "en-fr-teaching"
# The flow and the hooked pass compute the same float32 sums in a different grouping: on a CPU with AVX-512 their
# last bits differ (1.1e-5 on a value of 3, a relative 4e-6), so the check is relative too.
ATOL, RTOL = 1e-5, 1e-5


def recorded_pass(model: Transformer, src: list[int], tgt: list[int]) -> dict:
    """The model's forward pass with a hook on every module the flow reads: what each Sublayer got (the stream x and
    the sublayer's output) and returned, the embeddings, the final norms and the logits."""
    seen: dict = {"sub": [], "embed": [], "ff_in": [], "norms": {}}
    hooks = [model.src_embed.register_forward_hook(lambda m, a, o: seen["embed"].append(o[0])),
             model.decoder_norm.register_forward_hook(lambda m, a, o: seen["norms"].__setitem__("dec", o[0])),
             model.encoder_norm.register_forward_hook(lambda m, a, o: seen["norms"].__setitem__("enc", o[0]))]
    if model.tgt_embed is not model.src_embed:
        hooks.append(model.tgt_embed.register_forward_hook(lambda m, a, o: seen["embed"].append(o[0])))
    for layer in [*model.encoder_layers, *model.decoder_layers]:
        for sub in layer.sublayers:
            hooks.append(sub.register_forward_hook(lambda m, a, o: seen["sub"].append((a[0][0], a[1][0], o[0]))))
        hooks.append(layer.feed_forward.register_forward_hook(lambda m, a, o: seen["ff_in"].append(a[0][0])))
    try:
        with torch.no_grad():
            seen["logits"] = model(torch.tensor([src]), torch.tensor([tgt])).logits[0]
    finally:
        for h in hooks:
            h.remove()
    return seen


def check_flow(model: Transformer, src: list[int], tgt: list[int], position: int, source_position: int,
               specials: SpecialIds = SPECIALS) -> None:
    flow = token_flow(model, src, tgt, position, source_position=source_position, specials=specials)
    seen = recorded_pass(model, src, tgt)
    n_enc = len(model.encoder_layers)
    subs = seen["sub"]  # encoder sublayers in order, then the decoder's
    stages = [s for s in flow.stages if s.layer is not None]
    assert len(stages) == len(subs) == 2 * n_enc + 3 * len(model.decoder_layers)
    for i, (stage, (x, out, after)) in enumerate(zip(stages, subs)):
        p = source_position if i < 2 * n_enc else position
        torch.testing.assert_close(stage.added, out[p], atol=ATOL, rtol=RTOL)  # what the sublayer adds
        torch.testing.assert_close(stage.stream, after[p], atol=ATOL, rtol=RTOL)  # the stream it leaves
        if model.config.norm_first:  # h = LayerNorm(x): the sublayer's own norm of the stream it got
            layer = (model.encoder_layers if i < 2 * n_enc else model.decoder_layers)
            norm = [sub for lay in layer for sub in lay.sublayers][i if i < 2 * n_enc else i - 2 * n_enc].norm
            torch.testing.assert_close(stage.vectors[0].values, norm(x)[p], atol=ATOL, rtol=RTOL)
        else:  # x + output, then its LayerNorm is the stream
            torch.testing.assert_close(stage.vectors[1].values, (x + out)[p], atol=ATOL, rtol=RTOL)
        if stage.key.endswith("feed_forward"):
            ff_in = seen["ff_in"][i // 2 if i < 2 * n_enc else n_enc + (i - 2 * n_enc) // 3]
            ff = (model.encoder_layers[i // 2] if i < 2 * n_enc else model.decoder_layers[(i - 2 * n_enc) // 3]
                  ).feed_forward
            hidden = ff.activation(ff.w_1(ff_in[p])).detach()
            assert [n.index for n in stage.neurons] == hidden.topk(len(stage.neurons)).indices.tolist()
            assert stage.neurons[0].activation == pytest.approx(float(hidden.max()), abs=ATOL)
    src_embed, tgt_embed = seen["embed"]
    torch.testing.assert_close(flow.stage("src.embed").stream, src_embed[source_position], atol=ATOL, rtol=RTOL)
    torch.testing.assert_close(flow.stage("tgt.embed").stream, tgt_embed[position], atol=ATOL, rtol=RTOL)
    e = flow.stage("tgt.embed").vectors
    torch.testing.assert_close(e[0].values + e[1].values, e[2].values)  # E[piece] x sqrt(d) + PE
    if isinstance(model.decoder_norm, torch.nn.LayerNorm):  # pre-LN (unless a config drops the final norms)
        torch.testing.assert_close(flow.stage("memory").stream, seen["norms"]["enc"][source_position], atol=ATOL,
                                   rtol=0)
        torch.testing.assert_close(flow.stage("final_norm").stream, seen["norms"]["dec"][position], atol=ATOL,
                                   rtol=0)
    else:
        assert "final_norm" not in flow.keys and "memory" not in flow.keys
    if model.config.norm_first:  # the embedding and every sublayer's output sum to the last stream: shares sum to 1
        for side in ("source", "target"):
            assert sum(s.share for s in flow.stages if s.side == side) == pytest.approx(1.0, abs=1e-4)
    torch.testing.assert_close(flow.output.logits, seen["logits"][position], atol=ATOL, rtol=RTOL)
    logp = seen["logits"][position].log_softmax(-1)
    logp[list(specials.never)] = -torch.inf  # never emitted
    assert [c.token for c in flow.output.candidates] == logp.topk(len(flow.output.candidates)).indices.tolist()
    assert flow.output.candidates[0].log_prob == pytest.approx(float(logp.max()), abs=ATOL)
    for stage in flow.stages:
        if stage.attention is not None:
            assert stage.attention.sum(-1) == pytest.approx(1.0, abs=1e-5)
            assert stage.attention.shape[-1] == len(stage.keys)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("options", [{}, {"activation": "gelu"}, {"activation": "swish"},
                                     {"scale_embedding": False, "positional_layout": "halves"},
                                     {"final_logits_bias": True, "layer_norm_eps": 1e-6}, {"final_norm": False}])
def test_every_stage_equals_the_forward_pass(norm_first, options):
    """The model's own options (Marian's among them) are followed: the flow reads the model's modules."""
    torch.manual_seed(1)
    model = Transformer(tiny_config(norm_first=norm_first, **options)).eval()
    if model.final_logits_bias is not None:
        torch.nn.init.normal_(model.final_logits_bias)
    src, tgt = [5, 9, 12, 7, 2], [SPECIALS.start, 8, 4, 11, 6]
    for position, source_position in [(0, 0), (3, 2), (4, 4)]:
        check_flow(model, src, tgt, position, source_position)


def test_a_decoder_that_starts_from_pad_as_marian_does():
    marian = SpecialIds(pad=0, start=0, eos=2, unk=3, never=(0,))
    torch.manual_seed(5)
    model = Transformer(tiny_config(norm_first=False, activation="swish", scale_embedding=False,
                                    positional_layout="halves", final_logits_bias=True)).eval()
    for position in (0, 3):
        check_flow(model, [5, 9, 12, 7, 2], [marian.start, 8, 4, 11, 6], position, 1, marian)
    flow = token_flow(model, [5, 9, 2], [marian.start, 8], 1, specials=marian)
    assert flow.output.log_probs[1] > -torch.inf and flow.output.log_probs[0] == -torch.inf  # <s> is a piece here


def test_the_shipped_teaching_model():
    checkpoint = load_checkpoint(TEACHING)
    tok = checkpoint.tokenizer
    src = tok.encode_source("the cat sees the dog .")
    tgt = tok.encode_target("le chat voit le chien .")[:-1]
    check_flow(checkpoint.model, src, tgt, 2, 1)
    # the default source piece: the one cross-attended to most
    flow = token_flow(checkpoint.model, src, tgt, 2, specials=tok.specials)
    cross = flow.stage("dec.1.cross_attn").attention  # (H, S)
    assert flow.source_position == int(cross.mean(0).argmax())


def test_bad_arguments_are_named():
    model = Transformer(tiny_config()).eval()
    with pytest.raises(ValueError, match="position must be an integer from 0 to 2"):
        token_flow(model, [5, 6, 2], [SPECIALS.start, 5, 6], 3, specials=SPECIALS)
    with pytest.raises(ValueError, match="source_position"):
        token_flow(model, [5, 6, 2], [SPECIALS.start, 5, 6], 1, source_position=7, specials=SPECIALS)
    flow = token_flow(model, [5, 6, 2], [SPECIALS.start, 5, 6], 1, specials=SPECIALS)
    with pytest.raises(ValueError, match="stage must be one of src.embed"):
        flow.stage("nope")
    with pytest.raises(ValueError, match="temperature must be above 0"):
        flow.output.probabilities(0)


@pytest.mark.parametrize("temperature", [0.3, 1.0, 1.7])
def test_temperature_is_what_sampling_draws_from(temperature):
    """Translator sampling's recorded distribution at every step equals the flow's at that step and temperature,
    and the flow's draw with the same seed is the token the sample took."""
    torch.manual_seed(2)
    model = Transformer(tiny_config(tgt_vocab_size=40)).eval()
    src = [5, 9, 12, 7, 2]
    settings = SearchSettings(do_sample=True, temperature=temperature, seed=3, record_steps=True, candidates=6,
                              max_len_a=0, max_len_b=6)
    result = sample(model, torch.tensor([src]), settings, specials=SPECIALS)[0]
    tokens = result.hypotheses[0].tokens
    assert len(result.steps) >= 3
    for t, step in enumerate(result.steps):
        found = step.live[0].candidates
        flow = token_flow(model, src, [SPECIALS.start, *tokens[:t]], t, specials=SPECIALS)
        probs = flow.output.probabilities(temperature)
        assert probs[found.tokens].tolist() == pytest.approx(found.tempered, abs=ATOL)
        assert probs[found.tokens].tolist() == pytest.approx(found.sampled, abs=ATOL)  # no top-k or top-p
        assert flow.output.sampled(temperature, seed=3) == tokens[t]
    settings = SearchSettings(max_len_a=0, max_len_b=6)
    greedy = greedy_decode(model, torch.tensor([src]), settings, specials=SPECIALS)[0].hypotheses[0].tokens
    for t, token in enumerate(greedy):
        assert token_flow(model, src, [SPECIALS.start, *greedy[:t]], t, specials=SPECIALS).output.greedy == token
    assert TEMPERATURES[0] == 0.05 and TEMPERATURES[-1] == 3.0


def test_neurons_fire_on_the_pieces_named():
    torch.manual_seed(3)
    model = Transformer(tiny_config()).eval()
    pairs = [([5, 9, 12, 2], [SPECIALS.start, 8, 4]), ([7, 7, 13, 6, 2], [SPECIALS.start, 9])]
    flow = token_flow(model, *pairs[0], 1, specials=SPECIALS)
    neuron = flow.stage("dec.0.feed_forward").neurons[0]
    (found,) = neuron_examples(model, pairs, "target", 0, [neuron.index], k=2)
    assert found.firings[0].activation >= found.firings[1].activation
    assert found.firings[0].activation >= neuron.activation - 1e-6  # the followed token fires it this much at least
    expected = []  # the model's own feed-forward input at decoder layer 0, every position of both pairs
    ff = model.decoder_layers[0].feed_forward
    for i, (src, tgt) in enumerate(pairs):
        hidden = ff.activation(ff.w_1(recorded_pass(model, src, tgt)["ff_in"][len(model.encoder_layers)]))
        expected += [(float(a), i, p) for p, a in enumerate(hidden[:, neuron.index].tolist())]
    expected.sort(reverse=True)
    assert [(f.sentence, f.position) for f in found.firings] == [(i, p) for _, i, p in expected[:2]]
    assert found.firings[0].activation == pytest.approx(expected[0][0], abs=ATOL)
    assert found.firings[0].token == pairs[expected[0][1]][1][expected[0][2]]
    with pytest.raises(ValueError, match="side must be"):
        neuron_examples(model, pairs, "middle", 0, [0])


def test_the_view_draws_every_stage_and_sampling_s_numbers():
    import base64
    import html
    import json
    import re
    import zlib

    from transformer.charts import theme
    from transformer.explain.views import stage_label, token_flow_view
    from transformer.explain.views.token_flow import rgb, strip_png

    torch.manual_seed(4)
    model = Transformer(tiny_config()).eval()
    flow = token_flow(model, [5, 9, 12, 2], [SPECIALS.start, 8, 4], 2, specials=SPECIALS)
    pieces = {5: "<script>", 9: "سلام"}  # a piece that is markup, and an Arabic one
    label = lambda ids: [pieces.get(i, f"p{i}") for i in ids]  # noqa: E731
    view = token_flow_view(flow, label, label, stage="dec.1.cross_attn", seed=7, font_px=18)
    assert "<script>(" in view.html and "&lt;script&gt;" in view.html
    assert view.html.count("<script>") == 1  # the piece never opens a script
    assert re.search(r'class="stage on" data-key="dec.1.cross_attn"', view.html)
    assert '<details open data-group="dec.1">' in view.html and view.html.count("<details open") == 1
    assert '<bdi dir="auto" title="سلام">' in view.html
    data = json.loads(re.search(r"\),(\{.*\})\);</script>", view.html).group(1))
    assert len(data["temps"]) == len(TEMPERATURES) and len(data["vectors"]) == sum(len(s.vectors) for s in flow.stages)
    for row in data["temps"][::7]:
        probs = flow.output.probabilities(row["t"])
        assert row["p"] == pytest.approx([float(probs[c.token]) for c in flow.output.candidates])
        assert row["label"] == label([flow.output.sampled(row["t"], seed=7)])[0]
    assert data["greedy"] == label([flow.output.greedy])[0]
    assert stage_label("dec.1.cross_attn") == "decoder layer 1: cross-attention"
    busiest = flow.stage("enc.0.feed_forward").neurons[0].index
    found = neuron_examples(model, [([5, 9, 12, 2], [SPECIALS.start, 8, 4])], "source", 0, [busiest], k=2)
    named = token_flow_view(flow, label, label, neurons=found).html
    assert named.count("fires most on") == 1  # beside that neuron of that stage only
    first = html.escape(label([found[0].firings[0].token])[0])  # the piece that fires it most, escaped
    assert f"<b>{busiest}</b>" in named and f'title="{first}"' in named.split("fires most on")[1][:300]
    with pytest.raises(ValueError, match="stage must be one of src.embed"):
        token_flow_view(flow, label, label, stage="dec.9.ffn")
    with pytest.raises(ValueError, match="font_px must be from 12 to 40"):
        token_flow_view(flow, label, label, font_px=8)
    png = base64.b64decode(strip_png([1.0, -2.0, 0.0]).split(",")[1])  # 3 x 1 pixels: half red, full blue, white
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    idat = png[png.index(b"IDAT") + 4: png.index(b"IEND") - 8]
    assert (width, height) == (3, 1)
    red, blue = rgb(theme.POSITIVE), rgb(theme.NEGATIVE)  # the theme's positive and negative, at their full
    assert zlib.decompress(idat)[1:] == bytes([*(round(255 + (c - 255) / 2) for c in red), *blue, 255, 255, 255])

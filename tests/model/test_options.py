"""The ModelConfig options that Marian (opus-mt) needs, each against a computation written out here in plain tensor
math: swish, embedding scaling, the "halves" sinusoid layout, final_logits_bias, post-LN with its own epsilon and
no final norm, pre-LN without a final norm, shared embeddings with a tied output and pad at the last id. The
defaults are checked the same way, and a config.json written before the options existed loads with them."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from tests.conftest import tiny_config
from transformer import ModelConfig, Transformer
from transformer.model.checkpoint import load_checkpoint, save_checkpoint, write_checksums
from transformer.model.config import ADDED_KEYS
from transformer.model.layers import sinusoidal_encoding
from transformer.model.loss import TokenLoss

MARIAN_LIKE = dict(src_vocab_size=29, tgt_vocab_size=29, pad_id=28, share_embeddings=True, tie_output=True,
                   activation="swish", positional_layout="halves", final_logits_bias=True, norm_first=False,
                   layer_norm_eps=1e-3)
OPTIONS = {
    "defaults": {},
    "marian-like": MARIAN_LIKE,
    "pre-LN, no final norm, unscaled, gelu": dict(final_norm=False, scale_embedding=False, activation="gelu",
                                                  layer_norm_eps=0.5),
    "post-LN, relu, interleaved, bias": dict(norm_first=False, final_logits_bias=True),
    # the layouts of the other Hugging Face encoder-decoders (transformer.model.hf)
    "bart-like": dict(norm_first=False, embedding_norm=True, learned_positions=True, position_offset=2,
                      activation="gelu", scale_embedding=False, share_embeddings=True, tie_output=True,
                      src_vocab_size=29, tgt_vocab_size=29, pad_id=1, final_logits_bias=True),
    "mbart-like": dict(embedding_norm=True, learned_positions=True, position_offset=2, activation="gelu",
                       share_embeddings=True, tie_output=True, src_vocab_size=29, tgt_vocab_size=29, pad_id=1),
    "m2m100-like": dict(positional_layout="fairseq", position_offset=2, share_embeddings=True, tie_output=True,
                        src_vocab_size=29, tgt_vocab_size=29, pad_id=1),
    "separate learned tables, odd offset": dict(learned_positions=True, position_offset=3, embedding_norm=True),
}


# ----------------------------------------------------------------------------- the computation, written out


def sinusoids(n_pos: int, dim: int, layout: str) -> torch.Tensor:
    """Section 3.5 one entry at a time; "halves" as transformers' MarianSinusoidalPositionalEmbedding writes it:
    angle(pos, j) = pos / 10000^(2 * (j // 2) / dim), sin of the even j first, then cos of the odd j; "fairseq" as
    M2M100's: the sines of pos * 10000^(-i / (dim/2 - 1)), then their cosines, then a zero for an odd dim."""
    if layout == "fairseq":
        half = dim // 2
        freqs = [math.exp(-i * math.log(10000) / max(half - 1, 1)) for i in range(half)]
        return torch.tensor([[math.sin(pos * f) for f in freqs] + [math.cos(pos * f) for f in freqs] + [0.0] * (dim % 2)
                             for pos in range(n_pos)], dtype=torch.float64)
    angle = [[pos / math.pow(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)]
    if layout == "halves":
        rows = [[math.sin(a) for a in row[0::2]] + [math.cos(a) for a in row[1::2]] for row in angle]
    else:
        rows = [[math.sin(a) if j % 2 == 0 else math.cos(a) for j, a in enumerate(row)] for row in angle]
    return torch.tensor(rows, dtype=torch.float64)


def hand_logits(model: Transformer, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """model's logits for src (S,) and tgt (T,) ids, one sentence, in float64 from its weights alone."""
    c = model.config
    w = {k: v.double() for k, v in model.state_dict().items()}
    act = {"relu": torch.relu, "gelu": lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))),
           "swish": lambda x: x * torch.sigmoid(x)}[c.activation]

    def norm(x, name):
        mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + c.layer_norm_eps) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def linear(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def attend(x, memory, name, allowed):  # allowed (L_q, L_k) bool
        d = c.d_head
        q = linear(x, f"{name}.w_q")
        k, v = linear(memory, f"{name}.w_kv").split(c.d_model, dim=-1)
        heads = []
        for h in range(c.n_heads):
            cols = slice(h * d, (h + 1) * d)
            scores = (q[:, cols] @ k[:, cols].T / math.sqrt(d)).masked_fill(~allowed, -math.inf)
            heads.append(torch.softmax(scores, -1) @ v[:, cols])
        return linear(torch.cat(heads, -1), f"{name}.w_o")

    def residual(x, sublayer, name):  # pre-LN: x + f(norm(x)); post-LN (the paper): norm(x + f(x))
        return x + sublayer(norm(x, name)) if c.norm_first else norm(x + sublayer(x), name)

    def ffn(name):
        return lambda x: linear(act(linear(x, f"{name}.w_1")), f"{name}.w_2")

    def embed(table, ids, side):  # token * scale + position (row offset + p), then the embeddings' norm if any
        pe = w[f"{side}.pe"] if c.learned_positions else sinusoids(c.max_len + c.position_offset, c.d_model,
                                                                      c.positional_layout)
        x = table[ids] * scale + pe[c.position_offset: c.position_offset + len(ids)]
        return norm(x, f"{side}.norm") if c.embedding_norm else x

    scale = math.sqrt(c.d_model) if c.scale_embedding else 1.0
    src_table = w["src_embed.tokens.weight"]
    tgt_table = src_table if c.share_embeddings else w["tgt_embed.tokens.weight"]
    src_keys = (src != c.pad_id)[None, :]  # (1, S)
    tgt_keys = (tgt != c.pad_id) | (torch.arange(len(tgt)) == 0)  # the start token may be pad (Marian)
    causal = torch.ones(len(tgt), len(tgt), dtype=torch.bool).tril() & tgt_keys[None, :]

    x = embed(src_table, src, "src_embed")
    for i in range(c.n_encoder_layers):
        p = f"encoder_layers.{i}"
        x = residual(x, lambda h, p=p: attend(h, h, f"{p}.self_attn", src_keys), f"{p}.sublayers.0.norm")
        x = residual(x, ffn(f"{p}.feed_forward"), f"{p}.sublayers.1.norm")
    memory = norm(x, "encoder_norm") if c.norm_first and c.final_norm else x
    y = embed(tgt_table, tgt, "tgt_embed")
    for i in range(c.n_decoder_layers):
        p = f"decoder_layers.{i}"
        y = residual(y, lambda h, p=p: attend(h, h, f"{p}.self_attn", causal), f"{p}.sublayers.0.norm")
        y = residual(y, lambda h, p=p: attend(h, memory, f"{p}.cross_attn", src_keys), f"{p}.sublayers.1.norm")
        y = residual(y, ffn(f"{p}.feed_forward"), f"{p}.sublayers.2.norm")
    if c.norm_first and c.final_norm:
        y = norm(y, "decoder_norm")
    output = tgt_table if c.tie_output else w["generator.weight"]
    return y @ output.T + (w["final_logits_bias"] if c.final_logits_bias else 0.0)  # (T, V)


def randomized(config: ModelConfig, seed: int = 0) -> Transformer:
    """A model whose every parameter and buffer is random (LayerNorm gains and biases, final_logits_bias too)."""
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():  # learned positions too (the sinusoids are not in it)
            tensor.copy_(torch.randn_like(tensor) * (0.3 if tensor.dim() > 1 else 0.5) + ("norm" in name))
    return model


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_logits_equal_the_computation_written_out(options):
    config = tiny_config(n_encoder_layers=1, n_decoder_layers=1, **options)
    model = randomized(config)
    pad = config.pad_id
    src = torch.tensor([5, 9, 3, 7, 2, pad, pad])
    start = pad if config.pad_id == 28 else 2 if config.pad_id == 1 else 1  # Marian: pad; fairseq's: </s>
    tgt = torch.tensor([start, 4, 8, 6, pad])
    with torch.inference_mode():
        ours = model(src[None], tgt[None]).logits[0]
    expected = hand_logits(model, src, tgt)
    real = tgt != pad
    real[0] = True  # pad query rows are never read
    torch.testing.assert_close(ours[real].double(), expected[real], atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("layout", ["interleaved", "halves", "fairseq"])
@pytest.mark.parametrize("dim", [8, 7, 512])
def test_positional_table_matches_its_formula(layout, dim):
    table = sinusoidal_encoding(64, dim, layout)
    expected = sinusoids(64, dim, layout)
    assert table.dtype == torch.float32 and table.shape == (64, dim)
    if layout == "halves":  # computed in float64 and rounded once, as transformers does
        assert torch.equal(table, expected.float())
    elif layout == "fairseq":  # in float32, as fairseq and transformers' M2M100 compute it
        torch.testing.assert_close(table.double(), expected, atol=5e-5, rtol=0)
    else:  # computed in float32, as it always was
        torch.testing.assert_close(table.double(), expected, atol=5e-5, rtol=0)


def test_the_halves_layout_puts_sines_first_and_cosines_second():
    table = sinusoidal_encoding(10, 6, "halves")
    assert torch.equal(table[0], torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]))  # sin 0 = 0, cos 0 = 1
    assert table[3, 0].item() == pytest.approx(math.sin(3)) and table[3, 3].item() == pytest.approx(math.cos(3))
    assert table[3, 1].item() == pytest.approx(math.sin(3 / 10000 ** (2 / 6)))


def test_every_layer_norm_has_the_configured_epsilon_and_only_pre_ln_ends_with_one():
    for options, final in [({}, True), ({"final_norm": False}, False), ({"norm_first": False}, False)]:
        model = Transformer(tiny_config(layer_norm_eps=1e-3, **options))
        norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
        assert norms and all(m.eps == 1e-3 for m in norms)
        assert isinstance(model.decoder_norm, torch.nn.LayerNorm) == final
        assert isinstance(model.encoder_norm, torch.nn.LayerNorm) == final


def test_final_logits_bias_is_saved_by_name_loaded_and_added_on_every_path(tmp_path):
    model = randomized(tiny_config(final_logits_bias=True, tie_output=True), seed=1)
    bias = model.final_logits_bias.clone()
    assert bias.shape == (model.config.tgt_vocab_size,) and bias.abs().sum() > 0
    assert "final_logits_bias" not in dict(model.named_parameters())  # fixed, as in Marian: never trained
    path = save_checkpoint(tmp_path / "m", model)
    assert torch.equal(load_file(str(path / "model.safetensors"))["final_logits_bias"], bias)
    loaded = load_checkpoint(path).model
    assert torch.equal(loaded.final_logits_bias, bias)
    src, tgt = torch.tensor([[5, 6, 7, 2]] * 3), torch.tensor([[1, 9, 4]] * 3)
    with torch.inference_mode():
        full = loaded(src, tgt).logits  # (3, 3, V)
        without = loaded.generator(loaded.decoder_states(tgt, loaded.encode(src).memory, src))
        torch.testing.assert_close(full, without + bias)
        for rows in (1, 3):  # one row, and the few-rows path of decode_step
            cache = loaded.start_cache(loaded.encode(src[:rows]).memory, src[:rows])
            for t in range(tgt.size(1)):
                step = loaded.decode_step(tgt[:rows, t], cache)
                torch.testing.assert_close(step.logits, full[:rows, t], atol=1e-5, rtol=1e-5)
                cache = step.cache
    assert Transformer(tiny_config()).final_logits_bias is None
    assert "final_logits_bias" not in Transformer(tiny_config()).state_dict()


def test_the_training_loss_includes_final_logits_bias():
    model = randomized(tiny_config(final_logits_bias=True), seed=2)
    src, tgt = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]]), torch.tensor([[1, 9, 4, 2], [1, 5, 2, 0]])
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    expected = F.cross_entropy(model(src, tgt_in).logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0,
                               reduction="sum", label_smoothing=0.1)
    torch.testing.assert_close(TokenLoss(model)(src, tgt_in, tgt_out, 0.1), expected)
    assert model.final_logits_bias.abs().sum() > 0


def test_shared_tied_embeddings_with_pad_at_the_last_id_round_trip_and_decode_from_pad(tmp_path):
    config = tiny_config(**MARIAN_LIKE)
    model = randomized(config, seed=3)
    model.src_embed.tokens.weight.data[config.pad_id] = 0.0  # as Marian's table keeps pad's row
    path = save_checkpoint(tmp_path / "m", model)
    weights = load_file(str(path / "model.safetensors"))
    assert [k for k in weights if "tokens" in k or "generator" in k] == ["src_embed.tokens.weight"]
    loaded = load_checkpoint(path).model
    assert loaded.generator.weight is loaded.tgt_embed.tokens.weight is loaded.src_embed.tokens.weight
    src, tgt = torch.tensor([[5, 6, 7, 0, 28]]), torch.tensor([[28, 9, 4, 0]])  # the decoder starts from pad
    with torch.inference_mode():
        out = loaded(src, tgt, return_attention=True)
        assert torch.equal(out.logits, model(src, tgt, return_attention=True).logits)
        for w in out.attention.dec_self:
            assert torch.equal(w[0, :, 0, 0], torch.ones(config.n_heads))  # the start token sees itself
            assert (w[0, :, :, 0] > 0).all()  # and every later query sees it
        for w in out.attention.cross + out.attention.enc_self:
            assert (w[0, :, :, 4] == 0).all()  # a pad in the source stays masked
        cache = loaded.start_cache(loaded.encode(src).memory, src)
        for t in range(tgt.size(1)):
            step = loaded.decode_step(tgt[:, t], cache, return_attention=True)
            torch.testing.assert_close(step.logits, out.logits[:, t], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(step.self_attention[0], out.attention.dec_self[0][:, :, t, : t + 1])
            cache = step.cache


def test_a_config_written_before_the_options_loads_with_defaults_that_compute_as_before(tmp_path):
    """A checkpoint whose config.json has only the keys of before: the defaults stand in, and the logits are the
    paper's pre-LN computation (scaled embeddings, interleaved sinusoids, ReLU, a final norm per stack)."""
    model = randomized(tiny_config(), seed=4)
    path = save_checkpoint(tmp_path / "old", model)
    old = {k: v for k, v in json.loads((path / "config.json").read_text()).items() if k not in ADDED_KEYS}
    assert set(old) == {"src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "n_encoder_layers",
                        "n_decoder_layers", "d_ff", "dropout", "max_len", "pad_id", "norm_first", "activation",
                        "share_embeddings", "tie_output"}
    (path / "config.json").write_text(json.dumps(old))
    write_checksums(path)
    loaded = load_checkpoint(path)
    assert loaded.config == model.config == ModelConfig.from_dict(old)
    src, tgt = torch.tensor([5, 9, 3, 7, 2]), torch.tensor([1, 4, 8, 6])
    with torch.inference_mode():
        logits = loaded.model(src[None], tgt[None]).logits[0]
        assert torch.equal(logits, model(src[None], tgt[None]).logits[0])
    torch.testing.assert_close(logits.double(), hand_logits(model, src, tgt), atol=2e-5, rtol=1e-5)


def test_a_missing_key_of_before_is_still_refused(tmp_path):
    path = save_checkpoint(tmp_path / "m", Transformer(tiny_config()))
    data = {k: v for k, v in json.loads((path / "config.json").read_text()).items() if k != "norm_first"}
    (path / "config.json").write_text(json.dumps(data))
    write_checksums(path)
    with pytest.raises(Exception, match="missing ModelConfig keys: norm_first"):
        load_checkpoint(path)


@pytest.mark.parametrize("key, value, message", [
    ("activation", "silu", "activation must be one of"),
    ("positional_layout", "sines-first", "positional_layout must be one of"),
    ("layer_norm_eps", 0.0, "layer_norm_eps must be a number in"),
    ("layer_norm_eps", True, "layer_norm_eps must be a number in"),
    ("final_logits_bias", "yes", "final_logits_bias must be true or false"),
    ("scale_embedding", 1, "scale_embedding must be true or false"),
    ("final_norm", None, "final_norm must be true or false"),
])
def test_bad_option_values_are_refused_by_name(key, value, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**{key: value})


@pytest.mark.parametrize("name", ["bart-like", "mbart-like", "m2m100-like"])
def test_the_fairseq_layouts_round_trip_with_one_token_table_and_a_position_table_per_side(tmp_path, name):
    model = randomized(tiny_config(**OPTIONS[name]), seed=5)
    path = save_checkpoint(tmp_path / "m", model)
    saved = load_file(str(path / "model.safetensors"))
    assert [k for k in saved if "tokens" in k or "generator" in k] == ["src_embed.tokens.weight"]
    c = model.config
    assert ({"src_embed.pe", "tgt_embed.pe"} <= set(saved)) == c.learned_positions
    assert ({"src_embed.norm.weight", "tgt_embed.norm.weight"} <= set(saved)) == c.embedding_norm
    loaded = load_checkpoint(path).model
    assert loaded.generator.weight is loaded.tgt_embed.tokens.weight is loaded.src_embed.tokens.weight
    if c.learned_positions:
        assert not torch.equal(loaded.src_embed.pe, loaded.tgt_embed.pe)  # each side its own
        assert loaded.src_embed.pe.shape == (c.max_len + c.position_offset, c.d_model)
    assert all(p.requires_grad for p in loaded.parameters())  # fine-tuning starts from a loaded model
    src, tgt = torch.tensor([[5, 9, 3, 7, 2]]), torch.tensor([[2, 4, 8, 6]])
    with torch.inference_mode():
        assert torch.equal(loaded(src, tgt).logits, model(src, tgt).logits)


def test_from_weights_holds_the_given_tensors_and_names_what_is_missing():
    """load_checkpoint builds on the meta device and keeps the file's tensors: the weights are held once."""
    from transformer.model.checkpoint import unique_state_dict

    for options in ({}, OPTIONS["bart-like"], OPTIONS["m2m100-like"]):
        model = randomized(tiny_config(**options), seed=6)
        weights = {k: v.clone() for k, v in unique_state_dict(model).items()}
        built = Transformer.from_weights(model.config, weights)
        held = {t.data_ptr() for t in weights.values()}
        assert all(p.data_ptr() in held for p in built.parameters())
        assert built.generator.weight is built.tgt_embed.tokens.weight or not model.config.tie_output
        src, tgt = torch.tensor([[5, 9, 3, 7, 2]]), torch.tensor([[2, 4, 8, 6]])
        with torch.inference_mode():
            assert torch.equal(built.eval()(src, tgt).logits, model(src, tgt).logits)
    del weights["encoder_layers.0.feed_forward.w_1.weight"]
    with pytest.raises(ValueError, match="no weights for encoder_layers.0.feed_forward.w_1.weight"):
        Transformer.from_weights(model.config, weights)

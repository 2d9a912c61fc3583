import json

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import random_batch, tiny_config
from transformer import ModelConfig, Transformer
from transformer.model.layers import attention, padding_mask, sinusoidal_encoding, subsequent_mask


def real_lengths(ids: torch.Tensor, pad_id: int = 0) -> list[int]:
    return (ids != pad_id).sum(1).tolist()


def test_shapes_of_logits_and_every_attention_family(tiny_model):
    c = tiny_model.config
    src, tgt = random_batch(c, B=3, S=7, T=6)
    out = tiny_model(src, tgt, return_attention=True)
    assert out.logits.shape == (3, 6, c.tgt_vocab_size)
    maps = out.attention
    assert len(maps.enc_self) == c.n_encoder_layers and len(maps.dec_self) == c.n_decoder_layers
    assert len(maps.cross) == c.n_decoder_layers
    assert all(w.shape == (3, c.n_heads, 7, 7) for w in maps.enc_self)
    assert all(w.shape == (3, c.n_heads, 6, 6) for w in maps.dec_self)
    assert all(w.shape == (3, c.n_heads, 6, 7) for w in maps.cross)
    assert tiny_model(src, tgt).attention is None


def test_rows_sum_to_one_and_masked_keys_get_zero(tiny_model):
    src, tgt = random_batch(tiny_model.config)
    maps = tiny_model(src, tgt, return_attention=True).attention
    for b, (s_len, t_len) in enumerate(zip(real_lengths(src), real_lengths(tgt))):
        for w in maps.enc_self:
            torch.testing.assert_close(w[b, :, :s_len].sum(-1), torch.ones(w.size(1), s_len))
            assert (w[b, :, :, s_len:] == 0).all()  # pad columns
        for w in maps.cross:
            torch.testing.assert_close(w[b, :, :t_len].sum(-1), torch.ones(w.size(1), t_len))
            assert (w[b, :, :, s_len:] == 0).all()
        for w in maps.dec_self:
            torch.testing.assert_close(w[b, :, :t_len].sum(-1), torch.ones(w.size(1), t_len))
            assert (w[b, :, :, t_len:] == 0).all()
            assert (w[b].triu(diagonal=1) == 0).all()  # causal: no weight on the future


def test_pad_query_rows_attend_to_real_keys_and_all_pad_rows_are_zero():
    """Decided: masks are on keys only, so a pad query still sums to 1 over real keys (its output is
    never read); a query with no real key at all gets an all-zero row and a zero output, never NaN."""
    q, k, v = torch.randn(3, 2, 4, 8).unbind(0)
    ids = torch.tensor([[5, 6, 0, 0]])
    out, w = attention(q[None], k[None], v[None], padding_mask(ids, 0), need_weights=True)
    torch.testing.assert_close(w[0, :, 3].sum(-1), torch.ones(2))  # pad query row
    all_pad = padding_mask(torch.zeros(1, 4, dtype=torch.long), 0)
    for need_weights in (True, False):
        out, w = attention(q[None], k[None], v[None], all_pad, need_weights=need_weights)
        assert torch.isfinite(out).all() and (out == 0).all()
        if need_weights:
            assert (w == 0).all()


def test_no_future_leakage(tiny_model):
    src, tgt = random_batch(tiny_model.config, B=2, S=5, T=6)
    base = tiny_model(src, tgt).logits
    for t in range(tgt.size(1) - 1):
        changed = tgt.clone()
        changed[:, t + 1] = (changed[:, t + 1] + 1 - 4) % (tiny_model.config.tgt_vocab_size - 4) + 4
        logits = tiny_model(src, changed).logits
        torch.testing.assert_close(logits[:, : t + 1], base[:, : t + 1])
        assert not torch.allclose(logits[:, t + 1], base[:, t + 1])


@pytest.mark.parametrize("norm_first", [True, False])
def test_fused_path_equals_explicit_path(norm_first):
    torch.manual_seed(1)
    model = Transformer(tiny_config(norm_first=norm_first)).eval()
    src, tgt = random_batch(model.config)
    fused = model(src, tgt).logits
    explicit = model(src, tgt, return_attention=True).logits
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=0)


def test_cached_steps_equal_teacher_forced_logits_and_attention_rows(tiny_model):
    src, tgt = random_batch(tiny_model.config, B=3, S=7, T=6)
    tgt[:, :] = torch.randint(4, tiny_model.config.tgt_vocab_size, tgt.shape)  # no padding in a prefix
    full = tiny_model(src, tgt, return_attention=True)
    cache = tiny_model.start_cache(tiny_model.encode(src).memory, src)
    for t in range(tgt.size(1)):
        step = tiny_model.decode_step(tgt[:, t], cache, return_attention=True)
        cache = step.cache
        torch.testing.assert_close(step.logits, full.logits[:, t], atol=1e-5, rtol=0)
        for layer in range(tiny_model.config.n_decoder_layers):
            torch.testing.assert_close(step.self_attention[layer], full.attention.dec_self[layer][:, :, t, : t + 1])
            torch.testing.assert_close(step.cross_attention[layer], full.attention.cross[layer][:, :, t])
    assert cache.tokens.equal(tgt)
    assert cache.self_kv[0][0].shape == (3, tiny_model.config.n_heads, 6, tiny_model.config.d_head)


def test_cache_reorder_selects_hypotheses(tiny_model):
    src, tgt = random_batch(tiny_model.config, B=3, S=7, T=4)
    tgt[:, :] = 5
    tgt[:, 1] = torch.tensor([6, 7, 8])
    cache = tiny_model.start_cache(tiny_model.encode(src).memory, src)
    for t in range(3):
        cache = tiny_model.decode_step(tgt[:, t], cache).cache
    index = torch.tensor([2, 2, 0])
    reordered = tiny_model.decode_step(tgt[index, 3], cache.reorder(index)).logits
    expected = tiny_model(src[index], tgt[index]).logits[:, 3]
    torch.testing.assert_close(reordered, expected, atol=1e-5, rtol=0)


def test_head_mask_switches_heads_off(tiny_model):
    attn = tiny_model.encoder_layers[0].self_attn
    x = torch.randn(2, 5, tiny_model.config.d_model)
    kv, mask = attn.project_kv(x), torch.ones(1, 1, 1, 5, dtype=torch.bool)
    base, _ = attn(x, kv, mask)
    ones, _ = attn(x, kv, mask, head_mask=torch.ones(tiny_model.config.n_heads))
    torch.testing.assert_close(ones, base)
    off, _ = attn(x, kv, mask, head_mask=torch.zeros(tiny_model.config.n_heads))
    torch.testing.assert_close(off, attn.w_o.bias.expand_as(off))  # only the output bias is left


def test_masks_and_positional_encoding():
    assert subsequent_mask(3).squeeze().tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert padding_mask(torch.tensor([[4, 0]]), 0).shape == (1, 1, 1, 2)
    pe = sinusoidal_encoding(50, 16)
    assert pe.shape == (50, 16)
    assert torch.allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(50, 8))  # sin^2 + cos^2
    assert pe[0, 0] == 0 and pe[0, 1] == 1


def test_shared_and_tied_embeddings():
    model = Transformer(tiny_config(src_vocab_size=19, share_embeddings=True, tie_output=True))
    assert model.src_embed is model.tgt_embed
    assert model.generator.weight is model.tgt_embed.tokens.weight
    untied = Transformer(tiny_config())
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in untied.parameters())


def test_config_json_round_trip_and_strictness():
    config = tiny_config(norm_first=False, activation="gelu")
    assert ModelConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match="unknown ModelConfig keys: n_layer"):
        ModelConfig.from_dict({**config.to_dict(), "n_layer": 3})
    with pytest.raises(ValueError, match="divisible"):
        tiny_config(n_heads=5)
    with pytest.raises(ValueError, match="activation"):
        ModelConfig.from_json(json.dumps({"activation": "mish"}))
    with pytest.raises(ValueError, match="share_embeddings"):
        tiny_config(share_embeddings=True)


@pytest.mark.parametrize("norm_first", [True, False])
def test_learns_to_reverse_sequences(norm_first):
    """A tiny model learns to output its input reversed (ids 4..13, BOS=1, EOS=2) in 200 steps (about 3 s of one
    core; seeds 0-5 all reach >= 0.997 in either norm order, so the floor leaves room for another CPU's rounding)."""
    torch.manual_seed(0)
    config = tiny_config(src_vocab_size=14, tgt_vocab_size=14, n_heads=4, d_ff=128, norm_first=norm_first)
    model = Transformer(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    steps = 200
    # warm up, then decay to 0, so that the last steps polish rather than bounce
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 25) * max(0.0, 1 - step / steps) ** 0.5)

    def batch(n: int, g: torch.Generator):
        src = torch.randint(4, 14, (n, 8), generator=g)
        out = torch.cat([src.flip(1), torch.full((n, 1), 2)], dim=1)  # reversed, then </s>
        tgt_in = torch.cat([torch.full((n, 1), 1), out[:, :-1]], dim=1)
        return src, tgt_in, out

    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        src, tgt_in, tgt_out = batch(64, g)
        loss = F.cross_entropy(model(src, tgt_in).logits.flatten(0, 1), tgt_out.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()
    src, tgt_in, tgt_out = batch(256, torch.Generator().manual_seed(99))
    with torch.no_grad():
        accuracy = (model(src, tgt_in).logits.argmax(-1) == tgt_out).float().mean().item()
    assert accuracy >= 0.99

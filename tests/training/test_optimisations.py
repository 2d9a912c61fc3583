"""Each training optimisation equals the plain fp32 path: fused QKV, loss on real tokens with its fused
backward, the fused Adam kernel, cheap dropout masks (in distribution), bf16 autocast (within a stated tolerance),
bf16 detection."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import random_batch, tiny_config
from transformer import Transformer
from transformer.model.checkpoint import unique_state_dict
from transformer.model.dropout import Dropout, cheap_dropout, drop_mask, use_cheap_dropout
from transformer.model.layers import padding_mask
from transformer.model.loss import TokenLoss, projected_cross_entropy_sum
from transformer.training.precision import autocast, cpu_bf16_support, cpu_flags, resolve_precision
from transformer.training.recipe import TrainConfig, make_optimizer

CPU = torch.device("cpu")
# bf16 keeps 8 bits of mantissa: a tiny model's loss moves by well under 1% over a few steps, attention weights by
# under 0.02, and its gradients point the same way (cosine > 0.99)
BF16_LOSS_RTOL, BF16_ATTENTION_ATOL, BF16_GRAD_COSINE = 1e-2, 2e-2, 0.99


def plain_loss_sum(model, src, tgt_in, tgt_out, smoothing):
    logits = model(src, tgt_in).logits  # (B, T, V), padding included
    return F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=model.config.pad_id,
                           label_smoothing=smoothing, reduction="sum")


def batch(config, seed=0):
    src, tgt = random_batch(config, B=4, S=9, T=8, seed=seed)
    tgt_out = tgt.roll(-1, dims=1)
    tgt_out[:, -1] = 2
    tgt_out[tgt == 0] = 0  # the same padding as the input side
    return src, tgt, tgt_out


def grads(model):
    return {name: p.grad.clone() for name, p in model.named_parameters()}


# ----------------------------------------------------------------------------- fused QKV


def test_fused_qkv_equals_separate_projections_and_keeps_the_parameter_names():
    torch.manual_seed(0)
    model = Transformer(tiny_config())
    attn = model.encoder_layers[0].self_attn
    x = torch.randn(2, 5, model.config.d_model, requires_grad=True)
    q, k, v = attn.project_qkv(x)
    k2, v2 = attn.project_kv(x)
    for fused, separate in ((q, attn.project_q(x)), (k, k2), (v, v2)):
        torch.testing.assert_close(fused, separate, atol=1e-6, rtol=0)
    (q.sum() + (k * v).sum()).backward()
    fused_grads = {n: p.grad.clone() for n, p in attn.named_parameters() if p.grad is not None}
    attn.zero_grad()
    (attn.project_q(x).sum() + (k2 * v2).sum()).backward()
    for name, p in attn.named_parameters():
        if name in fused_grads:
            torch.testing.assert_close(fused_grads[name], p.grad, atol=1e-5, rtol=0)
    # checkpoints saved before the fusion name w_q and w_kv: the state dict still does
    names = set(unique_state_dict(model))
    assert {"encoder_layers.0.self_attn.w_q.weight", "encoder_layers.0.self_attn.w_kv.weight"} <= names
    assert not any("qkv" in n for n in names)


def test_layers_with_fused_qkv_give_the_attention_maps_of_separate_projections():
    torch.manual_seed(0)
    model = Transformer(tiny_config())  # training mode (dropout 0): the fused projection
    src, _ = random_batch(model.config)
    mask = padding_mask(src, model.config.pad_id)
    x = model.src_embed(src)
    for layer in model.encoder_layers:
        h = layer.sublayers[0].input(x)
        out, weights = layer.self_attn(h, layer.self_attn.project_kv(h), mask, need_weights=True)  # separate
        mid = layer.sublayers[0](x, out)
        separate = layer.sublayers[1](mid, layer.feed_forward(layer.sublayers[1].input(mid)))
        x, layer_weights = layer(x, mask, True)
        torch.testing.assert_close(layer_weights, weights, atol=1e-6, rtol=0)
        torch.testing.assert_close(x, separate, atol=1e-5, rtol=0)


# ----------------------------------------------------------------------------- loss on real tokens


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("chunk_rows", [7, 30, 512])  # an uneven last chunk, one chunk exactly, fewer rows
def test_projected_cross_entropy_equals_torch_in_value_and_both_gradients(smoothing, chunk_rows):
    g = torch.Generator().manual_seed(0)
    states = torch.randn(30, 8, generator=g, requires_grad=True)
    weight = torch.randn(17, 8, generator=g, requires_grad=True)
    target = torch.randint(0, 17, (30,), generator=g)
    ours = projected_cross_entropy_sum(states, weight, target, smoothing, chunk_rows)
    ours_grads = torch.autograd.grad(ours * 0.37, (states, weight))
    theirs = F.cross_entropy(F.linear(states, weight), target, label_smoothing=smoothing, reduction="sum")
    theirs_grads = torch.autograd.grad(theirs * 0.37, (states, weight))
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-6)
    for a, b in zip(ours_grads, theirs_grads):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    with torch.no_grad():  # a dev loss: the loss alone
        torch.testing.assert_close(projected_cross_entropy_sum(states, weight, target, smoothing, chunk_rows),
                                   theirs, atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_projected_cross_entropy_under_bf16_autocast_follows_autocasts_own_products(smoothing):
    g = torch.Generator().manual_seed(1)
    states = torch.randn(40, 16, generator=g, requires_grad=True)
    weight = torch.randn(23, 16, generator=g, requires_grad=True)
    target = torch.randint(0, 23, (40,), generator=g)
    with autocast(CPU, "bf16"):
        ours = projected_cross_entropy_sum(states, weight, target, smoothing, 9)
        theirs = F.cross_entropy(F.linear(states, weight).float(), target, label_smoothing=smoothing,
                                 reduction="sum")
    ours_grads = torch.autograd.grad(ours, (states, weight))
    theirs_grads = torch.autograd.grad(theirs, (states, weight))
    assert ours.dtype == torch.float32 and [t.dtype for t in ours_grads] == [torch.float32, torch.float32]
    torch.testing.assert_close(ours, theirs, atol=1e-3, rtol=1e-5)  # the same bf16 logits
    for a, b in zip(ours_grads, theirs_grads):
        torch.testing.assert_close(a, b, atol=0.05, rtol=0.02)  # bf16 products, rounded at different points


def test_projected_cross_entropy_under_fp16_autocast_takes_its_unscaled_gradients_in_fp32():
    g = torch.Generator().manual_seed(2)
    states = torch.randn(40, 16, generator=g, requires_grad=True)
    weight = torch.randn(23, 16, generator=g, requires_grad=True)
    target = torch.randint(0, 23, (40,), generator=g)
    fp32 = torch.autograd.grad(projected_cross_entropy_sum(states, weight, target, 0.1, 9), (states, weight))
    with torch.autocast("cpu", dtype=torch.float16):
        fp16 = projected_cross_entropy_sum(states, weight, target, 0.1, 9)
    for a, b in zip(torch.autograd.grad(fp16, (states, weight)), fp32):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)  # fp32 products: no gradient flushed to zero


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_token_loss_equals_full_logits_loss_and_gradients(smoothing):
    torch.manual_seed(0)
    model = Transformer(tiny_config())
    src, tgt_in, tgt_out = batch(model.config)
    assert (tgt_out == 0).any()  # padding to skip
    plain = plain_loss_sum(model, src, tgt_in, tgt_out, smoothing)
    plain.backward()
    expected = grads(model)
    model.zero_grad()
    ours = TokenLoss(model)(src, tgt_in, tgt_out, smoothing)
    ours.backward()
    torch.testing.assert_close(ours, plain, atol=1e-4, rtol=1e-6)
    for name, grad in grads(model).items():
        torch.testing.assert_close(grad, expected[name], atol=1e-5, rtol=1e-4, msg=name)


def train_steps(model, loss_fn, steps=4, precision="fp32", optimizer=None):
    optimizer = optimizer or torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
    losses = []
    for step in range(steps):
        src, tgt_in, tgt_out = batch(model.config, seed=step)
        with autocast(CPU, precision):
            loss = loss_fn(src, tgt_in, tgt_out)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_optimised_fp32_training_follows_the_plain_loss_curve():
    torch.manual_seed(0)
    plain_model = Transformer(tiny_config())
    fast_model = Transformer(tiny_config())
    fast_model.load_state_dict(plain_model.state_dict())
    plain = train_steps(plain_model, lambda s, ti, to: plain_loss_sum(plain_model, s, ti, to, 0.1))
    fast = train_steps(fast_model, lambda s, ti, to: TokenLoss(fast_model)(s, ti, to, 0.1))
    assert fast == pytest.approx(plain, rel=1e-5)
    assert len(set(plain)) == len(plain)  # it trains


@pytest.mark.parametrize("kind", ["adam", "adamw"])
def test_the_trainers_fused_optimizer_follows_torchs_default_loop(kind):
    torch.manual_seed(0)
    loop_model, fused_model = Transformer(tiny_config()), Transformer(tiny_config())
    fused_model.load_state_dict(loop_model.state_dict())
    config = TrainConfig(optimizer=kind, lr=1e-3, weight_decay=0.01 if kind == "adamw" else 0.0)
    fused = make_optimizer(fused_model, config)
    assert fused.defaults["fused"] is True
    assert isinstance(fused, torch.optim.AdamW if kind == "adamw" else torch.optim.Adam)
    loop = type(fused)(loop_model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9,
                       weight_decay=config.weight_decay)
    loss = TokenLoss(loop_model), TokenLoss(fused_model)
    by_loop = train_steps(loop_model, lambda s, ti, to: loss[0](s, ti, to, 0.1), steps=6, optimizer=loop)
    by_fused = train_steps(fused_model, lambda s, ti, to: loss[1](s, ti, to, 0.1), steps=6, optimizer=fused)
    assert by_fused == pytest.approx(by_loop, rel=1e-5)
    for (name, a), b in zip(loop_model.named_parameters(), fused_model.parameters()):
        if name.endswith("w_kv.bias"):
            # the key bias adds one constant to a query's every score, which softmax ignores: its gradient is
            # rounding noise, and Adam turns noise into full-size steps. The value bias must agree.
            a, b = a[a.numel() // 2:], b[b.numel() // 2:]
        torch.testing.assert_close(b, a, atol=1e-6, rtol=1e-5, msg=name)


def test_bf16_training_stays_within_tolerance_of_fp32():
    torch.manual_seed(0)
    fp32_model, bf16_model = Transformer(tiny_config()), Transformer(tiny_config())
    bf16_model.load_state_dict(fp32_model.state_dict())
    src, tgt_in, tgt_out = batch(fp32_model.config)
    plain_loss_sum(fp32_model, src, tgt_in, tgt_out, 0.1).backward()
    with autocast(CPU, "bf16"):
        loss = TokenLoss(bf16_model)(src, tgt_in, tgt_out, 0.1)
    loss.backward()
    for (name, a), b in zip(fp32_model.named_parameters(), bf16_model.parameters()):
        cosine = F.cosine_similarity(a.grad.flatten(), b.grad.flatten(), dim=0)
        assert cosine > BF16_GRAD_COSINE, name
        assert b.dtype == torch.float32  # parameters (and so Adam's state) stay fp32
    fp32_model.zero_grad()
    bf16_model.zero_grad()
    plain = train_steps(fp32_model, lambda s, ti, to: plain_loss_sum(fp32_model, s, ti, to, 0.1))
    fast = train_steps(bf16_model, lambda s, ti, to: TokenLoss(bf16_model)(s, ti, to, 0.1), precision="bf16")
    assert fast == pytest.approx(plain, rel=BF16_LOSS_RTOL)
    with torch.no_grad(), autocast(CPU, "bf16"):
        maps_bf16 = bf16_model.eval()(src, tgt_in, return_attention=True).attention
    maps_fp32 = fp32_model.eval()(src, tgt_in, return_attention=True).attention
    for family in ("enc_self", "dec_self", "cross"):
        for a, b in zip(getattr(maps_fp32, family), getattr(maps_bf16, family)):
            torch.testing.assert_close(b.float(), a, atol=BF16_ATTENTION_ATOL, rtol=0)


# ----------------------------------------------------------------------------- cheap dropout


def test_cheap_dropout_drops_p_of_the_elements_unbiased_and_reproducibly():
    x = torch.ones(1_000_003)
    torch.manual_seed(5)
    out = cheap_dropout(x, 0.1)
    dropped = (out == 0).float()
    assert dropped.mean().item() == pytest.approx(0.1, abs=2e-3)
    for lane in range(4):  # every 16-bit lane of a 64-bit draw is uniform
        assert dropped[lane::4].mean().item() == pytest.approx(0.1, abs=4e-3)
    assert out.mean().item() == pytest.approx(1.0, abs=5e-3)
    torch.manual_seed(5)
    assert torch.equal(cheap_dropout(x, 0.1), out)
    mask, scale = drop_mask(torch.Size([4]), 0.5, CPU)
    assert mask.dtype == torch.bool and scale == 2.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cheap_dropout_equals_the_masked_fill_it_replaced_forward_and_backward(dtype):
    x = torch.randn(37, 129).to(dtype).requires_grad_()
    grad = torch.randn(37, 129).to(dtype)
    torch.manual_seed(3)
    out = cheap_dropout(x, 0.1)
    out.backward(grad)
    torch.manual_seed(3)
    drop, scale = drop_mask(x.shape, 0.1, CPU)  # the same draws
    assert out.dtype == x.grad.dtype == dtype
    assert torch.equal(out, x.detach().masked_fill(drop, 0.0).mul_(scale))
    assert torch.equal(x.grad, grad.masked_fill(drop, 0.0).mul_(scale))


def test_cheap_dropout_gradient_is_the_mask_and_eval_is_identity():
    module = Dropout(0.3)
    x = torch.randn(64, 32, requires_grad=True)
    out = module(x)
    out.sum().backward()
    kept = out != 0
    torch.testing.assert_close(x.grad[kept], torch.full_like(x.grad[kept], 1 / 0.7), atol=1e-4, rtol=0)
    assert (x.grad[~kept] == 0).all()
    assert module.eval()(x) is x
    model = Transformer(tiny_config(dropout=0.1))
    use_cheap_dropout(model, False)
    assert not any(m.cheap_masks for m in model.modules() if isinstance(m, Dropout))


# ----------------------------------------------------------------------------- bf16 detection


def cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 {flags}\n\n"
                    f"processor\t: 1\nflags\t\t: fpu\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("flags, expected, words", [
    ("avx512f avx512_bf16", "bf16", "AVX-512 BF16"),
    ("amx_bf16 amx_tile avx512_bf16", "bf16", "AMX BF16"),
    ("avx512f avx512bw", "fp32", "neither AVX-512 BF16 nor AMX"),
])
def test_auto_precision_follows_the_cpu_flags(tmp_path, monkeypatch, flags, expected, words):
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    path = cpuinfo(tmp_path, flags)
    decision = resolve_precision("auto", CPU, cpuinfo=path)
    assert decision.value == expected and words in decision.reason
    assert resolve_precision("fp32", CPU, cpuinfo=path).value == "fp32"  # the override always wins


def test_precision_detection_never_assumes(tmp_path, monkeypatch):
    missing = tmp_path / "nothing"
    assert cpu_flags(missing) is None
    decision = resolve_precision("auto", CPU, cpuinfo=missing)
    assert decision.value == "fp32" and "cannot read" in decision.reason
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    no_onednn = cpu_bf16_support(cpuinfo(tmp_path, "avx512_bf16"))
    assert not no_onednn.value and "oneDNN" in no_onednn.reason
    assert resolve_precision("auto", torch.device("mps")).value == "fp32"
    assert resolve_precision("bf16", CPU, cpuinfo=missing).value == "bf16"

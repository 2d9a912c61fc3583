import json

import pytest
import torch

from tests.conftest import random_batch, tiny_config
from transformer import Transformer
from transformer.checkpoint import CheckpointError, average_checkpoints, load_checkpoint, save_checkpoint
from transformer.tokenizer import train_tokenizer


@pytest.fixture
def saved(tmp_path, tiny_model):
    tokenizer = train_tokenizer([("the house", "la maison"), ("a cat", "un chat")], kind="wordlevel",
                                vocab_size=50, min_frequency=1)
    path = save_checkpoint(tmp_path / "ckpt", tiny_model, tokenizer=tokenizer, metadata={"step": 7})
    return path, tiny_model, tokenizer


def test_round_trip_gives_identical_logits(saved):
    path, model, tokenizer = saved
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "metadata.json", "model.safetensors",
                                                      "tokenizer.json"]
    loaded = load_checkpoint(path)
    src, tgt = random_batch(model.config)
    assert loaded.config == model.config and loaded.metadata == {"step": 7}
    assert not loaded.model.training
    assert torch.equal(loaded.model(src, tgt).logits, model(src, tgt).logits)
    assert loaded.tokenizer.encode_target("la maison un chat") == tokenizer.encode_target("la maison un chat")


def test_tied_and_shared_weights_round_trip(tmp_path):
    torch.manual_seed(3)
    model = Transformer(tiny_config(src_vocab_size=19, share_embeddings=True, tie_output=True)).eval()
    loaded = load_checkpoint(save_checkpoint(tmp_path / "tied", model)).model
    assert loaded.generator.weight is loaded.tgt_embed.tokens.weight
    src, tgt = random_batch(model.config)
    assert torch.equal(loaded(src, tgt).logits, model(src, tgt).logits)


def test_fp16_storage_loads_as_fp32_and_nearly_equal(tmp_path, tiny_model):
    full = save_checkpoint(tmp_path / "fp32", tiny_model)
    half = save_checkpoint(tmp_path / "fp16", tiny_model, dtype=torch.float16)
    assert (half / "model.safetensors").stat().st_size < 0.6 * (full / "model.safetensors").stat().st_size
    loaded = load_checkpoint(half).model
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    src, tgt = random_batch(tiny_model.config)
    torch.testing.assert_close(loaded(src, tgt).logits, tiny_model(src, tgt).logits, atol=2e-2, rtol=0)


def test_save_replaces_an_existing_checkpoint_only_when_complete(saved):
    path, model, _ = saved
    with pytest.raises(RuntimeError, match="disk full"):
        save_checkpoint(path, model, metadata={"step": 8}, write_extra=lambda d: (_ for _ in ()).throw(
            RuntimeError("disk full")))
    assert load_checkpoint(path).metadata == {"step": 7}  # the old checkpoint is intact
    assert [p.name for p in path.parent.iterdir()] == ["ckpt"]  # no temporary directory left behind
    save_checkpoint(path, model, metadata={"step": 9})
    assert load_checkpoint(path).metadata == {"step": 9}


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: (p / "model.safetensors").write_bytes(b"\x00garbage" * 10), "model.safetensors: cannot be read"),
        (lambda p: (p / "model.safetensors").write_bytes((p / "model.safetensors").read_bytes()[:-100]),
         "model.safetensors: cannot be read"),
        (lambda p: (p / "model.safetensors").unlink(), "model.safetensors: file is missing"),
        (lambda p: (p / "config.json").write_text("{not json"), "config.json: not valid JSON"),
        (lambda p: (p / "config.json").unlink(), "config.json: file is missing"),
        (lambda p: (p / "config.json").write_text(json.dumps({**json.loads((p / "config.json").read_text()),
                                                             "d_ff": 48})), "shape"),
        (lambda p: (p / "config.json").write_text(json.dumps({**json.loads((p / "config.json").read_text()),
                                                             "n_encoder_layers": 1})), "does not match"),
        (lambda p: (p / "config.json").write_text(json.dumps({"hidden": 3})), "unknown ModelConfig keys: hidden"),
        (lambda p: (p / "tokenizer.json").write_text("[]"), "tokenizer.json"),
    ],
)
def test_damaged_checkpoint_raises_one_clear_error(saved, damage, message):
    path, _, _ = saved
    damage(path)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint directory"):
        load_checkpoint(tmp_path / "nowhere")


def test_average_checkpoints(tmp_path):
    models = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        models.append(Transformer(tiny_config()).eval())
    paths = [save_checkpoint(tmp_path / f"m{i}", m, metadata={"step": i}) for i, m in enumerate(models)]
    averaged = load_checkpoint(average_checkpoints(paths, tmp_path / "avg"))
    for name, p in averaged.model.named_parameters():
        expected = (dict(models[0].named_parameters())[name] + dict(models[1].named_parameters())[name]) / 2
        torch.testing.assert_close(p, expected)
    assert averaged.metadata["averaged_from"] == [str(p) for p in paths]
    torch.manual_seed(3)
    save_checkpoint(tmp_path / "other", Transformer(tiny_config(d_ff=48)))
    with pytest.raises(CheckpointError, match="config differs"):
        average_checkpoints([paths[0], tmp_path / "other"], tmp_path / "bad")


def test_checkpoint_files_get_the_modes_of_ordinary_new_files(tmp_path, tiny_model):
    import os
    umask = os.umask(0o022)
    try:
        path = save_checkpoint(tmp_path / "modes", tiny_model)
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o755
    assert {f.stat().st_mode & 0o777 for f in path.iterdir()} == {0o644}

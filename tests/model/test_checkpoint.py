import json
import pickle
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.conftest import random_batch, tiny_config
from tests.fuzz_inputs import HOSTILE_CHECKPOINTS
from transformer import Transformer
from transformer.data.tokenizer import train_tokenizer
from transformer.model import checkpoint
from transformer.model.checkpoint import (
    CheckpointError,
    average_checkpoints,
    copy_checkpoint,
    load_checkpoint,
    recover_interrupted_saves,
    save_checkpoint,
)


@pytest.fixture
def saved(tmp_path):
    tokenizer = train_tokenizer([("the house", "la maison"), ("a cat", "un chat")], kind="wordlevel",
                                vocab_size=50, min_frequency=1)
    torch.manual_seed(0)
    model = Transformer(tiny_config(src_vocab_size=tokenizer.src_vocab_size,
                                    tgt_vocab_size=tokenizer.tgt_vocab_size)).eval()
    path = save_checkpoint(tmp_path / "ckpt", model, tokenizer=tokenizer, metadata={"step": 7})
    return path, model, tokenizer


@pytest.fixture
def unsummed(saved):
    """A checkpoint as written before checksums existed: every check but the checksum one must still hold."""
    (saved[0] / "checksums.json").unlink()
    return saved


def test_round_trip_gives_identical_logits(saved):
    path, model, tokenizer = saved
    assert sorted(p.name for p in path.iterdir()) == ["checksums.json", "config.json", "metadata.json",
                                                      "model.safetensors", "tokenizer.json"]
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
        (lambda p: (p / "tokenizer.json").write_text('{"format": 1, "kind": "bpe", "shared": true, "src": {}}'),
         "tokenizer.json: not a valid tokenizer file"),
        (lambda p: (p / "config.json").write_text(json.dumps({k: v for k, v in json.loads(
            (p / "config.json").read_text()).items() if k != "dropout"})), "missing ModelConfig keys: dropout"),
        (lambda p: save_file({k: v.double() for k, v in load_file(p / "model.safetensors").items()},
                             p / "model.safetensors"), "has dtype torch.float64"),
        (lambda p: save_file({k: v.long() for k, v in load_file(p / "model.safetensors").items()},
                             p / "model.safetensors"), "has dtype torch.int64"),
        (lambda p: (p / "metadata.json").write_text("[1, 2]"), "metadata.json: expected a JSON object"),
    ],
)
def test_damaged_checkpoint_raises_one_clear_error(unsummed, saved, damage, message):
    path, _, _ = unsummed
    damage(path)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "tokenizer.json"])
def test_a_flipped_bit_in_any_checksummed_file_is_found(saved, name):
    path, _, _ = saved
    data = bytearray((path / name).read_bytes())
    data[len(data) // 2] ^= 0x04  # one bit, mid-file: for the weights, inside a tensor, still valid safetensors
    (path / name).write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{name}: its SHA-256 differs from the one in checksums.json"):
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


class _CreatesAFile:
    """Unpickling this calls open(path, "w"): the file appears only if something unpickles it."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "tokenizer.json", "metadata.json"])
@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_a_pickle_in_place_of_any_file_is_refused_and_never_executed(unsummed, tmp_path, name, writer):
    path, _, _ = unsummed
    marker = tmp_path / "pwned"
    if writer == "pickle":
        (path / name).write_bytes(pickle.dumps({"weights": _CreatesAFile(marker)}))
    else:
        torch.save({"weights": _CreatesAFile(marker)}, path / name)
    assert not marker.exists()
    with pytest.raises(CheckpointError, match=name.replace(".", r"\.")):
        load_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "tokenizer.json", "metadata.json"])
def test_a_symlink_out_of_the_checkpoint_is_refused(unsummed, tmp_path, name):
    path, _, _ = unsummed
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.move(path / name, outside / name)  # a valid file: only where it lives is wrong
    (path / name).symlink_to(outside / name)
    with pytest.raises(CheckpointError, match=f"{name}: links outside the checkpoint directory"):
        load_checkpoint(path)
    (path / name).unlink()
    (path / name).symlink_to(f"../{path.name}/../elsewhere/{name}")  # relative, through ..
    with pytest.raises(CheckpointError, match="links outside"):
        load_checkpoint(path)


def test_a_symlink_inside_the_checkpoint_is_fine(saved):
    path, _, _ = saved
    (path / "weights-v1.safetensors").write_bytes((path / "model.safetensors").read_bytes())
    (path / "model.safetensors").unlink()
    (path / "model.safetensors").symlink_to("weights-v1.safetensors")
    assert load_checkpoint(path).metadata == {"step": 7}


@pytest.mark.parametrize("words", [40, 3])
def test_a_tokenizer_of_another_size_than_the_embeddings_is_refused(unsummed, words):
    path, model, _ = unsummed
    text = " ".join(f"w{i}" for i in range(words))
    other = train_tokenizer([(text, text)], kind="wordlevel", vocab_size=100, min_frequency=1)
    assert other.src_vocab_size != model.config.src_vocab_size
    other.save(path / "tokenizer.json")
    n = other.src_vocab_size
    with pytest.raises(CheckpointError, match=rf"tokenizer.json: vocabularies of {n} \(source\) and {n} \(target\) "
                                              r"tokens do not match the embeddings of config.json \(12 and 12 rows\)"):
        load_checkpoint(path)


def test_a_swap_cut_in_two_by_a_kill_is_recovered(saved):
    path, model, _ = saved
    old = path.with_name(f".{path.name}.old")
    path.rename(old)  # killed between the two renames of a save: the old checkpoint is complete, aside
    (path.parent / f".{path.name}.abc.tmp").mkdir()  # and a half-written new one
    recover_interrupted_saves(path.parent)
    assert load_checkpoint(path).metadata == {"step": 7}
    assert sorted(p.name for p in path.parent.iterdir()) == ["ckpt"]
    copy = copy_checkpoint(path, path.parent / "copy")
    assert load_checkpoint(copy).metadata == {"step": 7}
    assert sorted(p.name for p in path.parent.iterdir()) == ["ckpt", "copy"]


@pytest.mark.parametrize("name", sorted(HOSTILE_CHECKPOINTS))
def test_a_hostile_checkpoint_is_one_clear_error_before_the_model_is_built(unsummed, monkeypatch, name):
    path, _, _ = unsummed
    damage, message = HOSTILE_CHECKPOINTS[name]
    damage(path)
    built = []
    monkeypatch.setattr(checkpoint, "Transformer", lambda config: built.append(config))
    with pytest.raises(CheckpointError, match=message) as caught:
        load_checkpoint(path)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400 + len(str(path))
    assert not built


def test_another_models_tokenizer_of_the_same_size_is_refused_by_its_checksum(saved, tmp_path):
    path, model, tokenizer = saved
    pairs = [("the dog", "le chien"), ("a hat", "un chapeau")]  # same number of words: the same vocabulary size
    other = train_tokenizer(pairs, kind="wordlevel", vocab_size=50, min_frequency=1)
    assert other.src_vocab_size == tokenizer.src_vocab_size and other.to_json() != tokenizer.to_json()
    other.save(path / "tokenizer.json")
    with pytest.raises(CheckpointError, match="tokenizer.json: its SHA-256 differs.*another checkpoint"):
        load_checkpoint(path)


def test_a_checkpoint_written_before_checksums_still_loads_and_checksums_change_no_weight(unsummed):
    path, model, _ = unsummed
    weights = (path / "model.safetensors").read_bytes()
    loaded = load_checkpoint(path)
    assert loaded.metadata == {"step": 7}
    checkpoint.write_checksums(path)
    assert (path / "model.safetensors").read_bytes() == weights
    assert set(json.loads((path / "checksums.json").read_text())["sha256"]) == {"config.json", "model.safetensors",
                                                                                "tokenizer.json"}
    assert load_checkpoint(path).metadata == {"step": 7}


SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints"


@pytest.mark.parametrize("name", sorted(p.name for p in SHIPPED.iterdir() if (p / "config.json").is_file()))
def test_every_shipped_checkpoint_has_checksums_that_match(name):
    sums = checkpoint.read_checksums(SHIPPED / name)
    assert set(sums) == {"config.json", "model.safetensors", "tokenizer.json"}
    for file in sums:
        checkpoint.verify_checksum(SHIPPED / name / file, sums)


def test_the_italian_models_tokenizer_in_the_arabic_model_is_refused(tmp_path):
    """Both vocabularies have 7,000 tokens: only the checksum tells them apart."""
    copy = shutil.copytree(SHIPPED / "en-ar-bible", tmp_path / "en-ar-bible")
    shutil.copy(SHIPPED / "en-it-bible" / "tokenizer.json", copy / "tokenizer.json")
    with pytest.raises(CheckpointError, match="tokenizer.json: its SHA-256 differs.*another checkpoint"):
        load_checkpoint(copy)

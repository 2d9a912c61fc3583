"""A run's TensorBoard event files: the same scalars as metrics.jsonl, probe images and text, never a crash."""

from __future__ import annotations

import logging

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.training.test_training import corpus_file, tiny_spec  # noqa: F401 - corpus_file is a fixture
from transformer.runs import read_metrics
from transformer.training import tensorboard_log
from transformer.training.loop import Trainer
from transformer.training.run import create_run


def events(root) -> EventAccumulator:
    acc = EventAccumulator(str(root / "tb"), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_event_files_hold_the_metrics_the_probe_maps_and_translations(tmp_path, corpus_file):  # noqa: F811
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=4, log_every=2, eval_every=4))
    list(Trainer(root).fit())
    acc, records = events(root), read_metrics(root)
    for key, tag in [("train_loss", "train/loss"), ("lr", "train/lr"), ("tokens_per_s", "train/tokens_per_s"),
                     ("grad_norm", "train/grad_norm"), ("dev_bleu", "dev/bleu"), ("dev_chrf", "dev/chrf"),
                     ("dev_loss", "dev/loss")]:
        expected = [(r["step"], r[key]) for r in records if key in r]
        assert expected, key
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in expected], tag
        assert [v for _, v in got] == pytest.approx([v for _, v in expected], rel=1e-5), tag
    tags = acc.Tags()
    assert {"probe0/cross", "probe0/enc_self", "probe0/dec_self"} <= set(tags["images"])
    image = acc.Images("probe0/cross")[0]
    assert image.step == 4 and image.width > 0 and image.height > 0
    assert "probe0/translation/text_summary" in tags["tensors"]
    text = acc.Tensors("probe0/translation/text_summary")[0]
    assert text.step == 4 and "→" in text.tensor_proto.string_val[0].decode("utf-8")


def test_attention_image_lays_layers_out_as_rows_and_heads_as_columns():
    maps = torch.zeros(2, 3, 4, 5)  # (L, H, L_q, L_k)
    maps[1, 2, 0, 4] = 1.0  # last layer, last head, first query on the last key
    image = tensorboard_log.attention_image(maps)
    scale = tensorboard_log.CELL_PIXELS // 5
    gap = tensorboard_log.GAP
    assert image.dtype.name == "uint8" and image.shape == (1, 2 * 4 * scale + gap, 3 * 5 * scale + 2 * gap)
    y, x = 4 * scale + gap, 2 * (5 * scale + gap) + 4 * scale
    assert image[0, y, x] == 255 and image[0, y + scale, x] == 0 and image[0, 0, 0] == 0


def test_a_failing_writer_warns_and_the_run_goes_on(tmp_path, corpus_file, monkeypatch, caplog):  # noqa: F811
    from torch.utils.tensorboard import SummaryWriter

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SummaryWriter, "add_scalar", full_disk)
    root = create_run(tmp_path / "full", tiny_spec(corpus_file, max_steps=4, log_every=1, eval_every=2))
    with caplog.at_level(logging.WARNING, logger="transformer.training.tensorboard_log"):
        records = list(Trainer(root).fit())
    assert [r["step"] for r in records if "train_loss" in r] == [1, 2, 3, 4]
    assert [r["step"] for r in read_metrics(root) if "dev_bleu" in r] == [2, 4]
    assert sum("No space left" in m for m in caplog.messages) == 1  # one warning, then quiet

    unmakeable = create_run(tmp_path / "blocked", tiny_spec(corpus_file, max_steps=2))
    (unmakeable / "tb").write_text("a file where the folder should be")
    list(Trainer(unmakeable).fit())
    assert read_metrics(unmakeable)[-1]["step"] == 2

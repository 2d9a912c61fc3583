"""Resuming a run whose checkpoints were lost or damaged, a run whose training state is malformed, and corpora that
leave a split empty: each continues from what is intact or stops with one clear message."""

import json
import shutil

import pytest

from tests.training.test_training import corpus_file, tiny_spec  # noqa: F401 (fixture)
from transformer.model import checkpoint
from transformer.model.checkpoint import CheckpointError, load_checkpoint
from transformer.runs import read_metrics, read_status
from transformer.training.loop import Trainer
from transformer.training.recipe import load_training_state, make_optimizer
from transformer.training.run import TrainingError, create_run


@pytest.fixture(scope="module")
def trained_once(tmp_path_factory, corpus_file):  # noqa: F811
    """A finished run of 6 steps: latest and step-0000004, step-0000006 (keep_last 2), best from the evaluations."""
    root = create_run(tmp_path_factory.mktemp("trained") / "run",
                      tiny_spec(corpus_file, max_steps=6, save_every=2, eval_every=3, keep_last=2))
    list(Trainer(root).fit())
    return root


@pytest.fixture
def trained(trained_once, tmp_path):
    """A copy of that run for each test to damage (training it once is what took this file's time)."""
    return shutil.copytree(trained_once, tmp_path / "run", symlinks=True)


def train_steps(root) -> list[int]:
    return [r["step"] for r in read_metrics(root) if "train_loss" in r]


def flip_a_bit(file) -> None:
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x10
    file.write_bytes(bytes(data))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("loss", ["deleted", "a bit flipped"])
def test_a_resume_without_an_intact_latest_continues_from_the_newest_intact_step(trained, loss, caplog):
    latest = trained / "checkpoints" / "latest"
    if loss == "deleted":
        shutil.rmtree(latest)
    else:
        flip_a_bit(latest / "model.safetensors")
    list(Trainer(trained, overrides={"max_steps": 8}).fit())
    assert "resuming from step-0000006, the newest intact checkpoint" in caplog.text
    assert train_steps(trained) == list(range(1, 9))  # nothing dropped, nothing twice: it went on from step 6
    assert read_status(trained)["state"] == "finished"
    assert load_checkpoint(latest).metadata["step"] == 8


@pytest.mark.timeout(120)
def test_a_resume_with_no_intact_checkpoint_left_is_refused_and_keeps_best_and_the_metrics(trained):
    checkpoints = trained / "checkpoints"
    shutil.rmtree(checkpoints / "latest")
    for step in checkpoints.glob("step-*"):
        flip_a_bit(step / "trainer_state.json")
    best, metrics = (checkpoints / "best" / "model.safetensors").read_bytes(), (trained / "metrics.jsonl").read_text()
    with pytest.raises(TrainingError, match=r"cannot resume: step-0000006: .*trainer_state.json: its SHA-256 differs"
                                            r".*would drop the run's metrics and overwrite its best checkpoint"):
        list(Trainer(trained, overrides={"max_steps": 8}).fit())
    assert (checkpoints / "best" / "model.safetensors").read_bytes() == best
    assert (trained / "metrics.jsonl").read_text() == metrics
    assert read_status(trained)["state"] == "failed" and "cannot resume" in read_status(trained)["error"]


@pytest.mark.timeout(120)
def test_a_resume_never_replaces_best_by_a_worse_score(trained):
    best = trained / "checkpoints" / "best"
    metadata = json.loads((best / "metadata.json").read_text())
    # best/ scored more than the resume point knew of (as when latest was lost and the step-N resumed is older)
    (best / "metadata.json").write_text(json.dumps({**metadata, "best_dev_bleu": 99.0}))
    state_file = trained / "checkpoints" / "latest" / "trainer_state.json"
    state_file.write_text(json.dumps({**json.loads(state_file.read_text()), "best_bleu": None}))
    checkpoint.write_checksums(state_file.parent)
    weights = (best / "model.safetensors").read_bytes()
    list(Trainer(trained, overrides={"max_steps": 9}).fit())  # evaluates at steps 6 and 9 again
    assert [r["step"] for r in read_metrics(trained) if "dev_bleu" in r][-1] == 9
    assert (best / "model.safetensors").read_bytes() == weights
    assert load_checkpoint(best).metadata["best_dev_bleu"] == 99.0


@pytest.mark.parametrize("edit, message", [
    (lambda s: {k: v for k, v in s.items() if k != "scalars"}, r"scalars .* are missing"),
    (lambda s: {**s, "step": 4.5}, r"step should be a whole number >= 0, not '4.5'"),
    (lambda s: {**s, "step": "4"}, r"step should be a whole number"),
    (lambda s: {**s, "epoch": -1}, r"epoch should be a whole number"),
    (lambda s: {**s, "best_bleu": "high"}, r"best_bleu should be a finite number"),
    (lambda s: {**s, "param_groups": None}, r"param_groups .* are missing"),
    (lambda s: {**s, "scalars": {"x": 1}}, r"optimizer entry 'x' is not INDEX.NAME"),
    (lambda s: [1, 2], r"expected a JSON object, got list"),
])
def test_a_malformed_training_state_is_one_clear_error(trained, edit, message):
    latest = trained / "checkpoints" / "latest"
    state_file = latest / "trainer_state.json"
    state_file.write_text(json.dumps(edit(json.loads(state_file.read_text()))))
    optimizer = make_optimizer(load_checkpoint(latest).model, tiny_spec(trained).train)
    with pytest.raises(CheckpointError, match="trainer_state.json: its SHA-256 differs"):
        load_training_state(latest, optimizer)
    checkpoint.write_checksums(latest)  # as if the file had been written so: its fields are checked too
    with pytest.raises(CheckpointError, match=rf"trainer_state.json: {message}.*; cannot resume from it"):
        load_training_state(latest, optimizer)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lines, split", [
    ([" ".join(["cat"] * 20) + "\t" + " ".join(["chat"] * 20)] * 30, "train"),  # longer than max_len tokens
    ([f"the cat {i}\tle chat {i}" for i in range(15)], "dev"),  # 2% of 15 rounds to no dev pair
])
def test_a_corpus_that_leaves_a_split_empty_stops_with_a_message(tmp_path, lines, split):
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = tiny_spec(corpus)
    spec = type(spec)(type(spec.corpus)(kind="tsv", path=str(corpus)), spec.tokenizer,
                      {**spec.model, "max_len": 16}, spec.train)
    root = create_run(tmp_path / "run", spec)
    with pytest.raises(TrainingError, match=rf"the {split} split is empty"):
        list(Trainer(root).fit())
    assert read_status(root)["state"] == "failed"

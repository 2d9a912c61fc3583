import dataclasses
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from transformer.data.spec import CorpusSpec
from transformer.decoding import evaluate
from transformer.model import loss
from transformer.model.checkpoint import load_checkpoint
from transformer.model.config import ModelConfig
from transformer.runs import read_metrics, read_status
from transformer.training.loop import Trainer
from transformer.training.recipe import PRESETS, TokenizerSettings, TrainConfig, learning_rate
from transformer.training.run import RunSpec, TrainingError, create_run

ROOT = Path(__file__).resolve().parents[2]
WORDS = {"the": "le", "cat": "chat", "dog": "chien", "eats": "mange", "sees": "voit", "big": "grand",
         "small": "petit", "house": "maison", "red": "rouge", "man": "homme"}
TINY_MODEL = dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.1, max_len=32)


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    rng = random.Random(0)
    lines = []
    for _ in range(300):
        words = [rng.choice(list(WORDS)) for _ in range(rng.randint(3, 8))]
        lines.append(" ".join(words) + "\t" + " ".join(WORDS[w] for w in words))
    path = tmp_path_factory.mktemp("corpus") / "tiny.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tiny_spec(corpus_file: Path, **train) -> RunSpec:
    config = dict(lr=3e-3, warmup_steps=5, max_tokens=400, max_steps=12, log_every=1, eval_every=100,
                  save_every=100, eval_sentences=4, threads=1) | train
    return RunSpec(CorpusSpec(kind="tsv", path=str(corpus_file), dev_fraction=0.05, test_fraction=0.05),
                   TokenizerSettings(kind="wordlevel", vocab_size=64, min_frequency=1), TINY_MODEL,
                   TrainConfig(**config))


def train_losses(root: Path) -> list[float]:
    return [r["train_loss"] for r in read_metrics(root / "metrics.jsonl") if "train_loss" in r]


def test_learning_rate_schedules():
    noam = TrainConfig(lr=1e-3, warmup_steps=100, schedule="noam")
    assert learning_rate(50, noam) == pytest.approx(5e-4)
    assert learning_rate(100, noam) == pytest.approx(1e-3)
    assert learning_rate(400, noam) == pytest.approx(5e-4)  # inverse square root: 1e-3 * sqrt(100 / 400)
    cosine = TrainConfig(lr=1e-3, warmup_steps=100, schedule="cosine", max_steps=300)
    assert learning_rate(200, cosine) == pytest.approx(5e-4)  # half-way down the cosine
    assert learning_rate(300, cosine) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp8")
    assert TrainConfig().precision == "auto" and not TrainConfig().compile


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_makes_valid_configs_and_evaluates_several_times_in_its_run(name):
    """A preset's sections are what the CLI turns into its configs (a misspelt key fails here, not in a user's run);
    a run of the preset's length evaluates at least 4 times, so that the Train page draws a curve."""
    preset = PRESETS[name]
    ModelConfig(**preset["model"], src_vocab_size=preset["tokenizer"]["vocab_size"], tgt_vocab_size=1)
    TokenizerSettings(**preset["tokenizer"])
    train = TrainConfig(**preset["train"])
    assert learning_rate(train.warmup_steps, train) == pytest.approx(train.lr)
    assert train.max_steps // train.eval_every >= 4


def test_run_writes_metrics_checkpoints_and_probes(tmp_path, corpus_file):
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=8, eval_every=4, save_every=4))
    records = list(Trainer(root).fit())
    steps = [r["step"] for r in records if "train_loss" in r]
    assert steps == list(range(1, 9))
    evals = [r for r in records if "dev_bleu" in r]
    assert [r["step"] for r in evals] == [4, 8] and all(0 <= r["dev_chrf"] <= 100 for r in evals)
    status = read_status(root / "status.json")
    assert status["state"] == "finished"
    assert status["setup"]["precision"]["value"] in ("fp32", "bf16") and status["setup"]["precision"]["reason"]
    assert set(status["setup"]) == {"device", "precision", "loss", "dropout", "self_attention", "optimizer", "compile",
                                    "threads"}
    assert status["setup"]["optimizer"]["value"] == "adam, fused"  # on the CPU
    assert load_checkpoint(root / "checkpoints" / "latest").metadata["step"] == 8
    assert (root / "checkpoints" / "best" / "model.safetensors").is_file()
    probe = json.loads((root / "probes" / "step-0000008.json").read_text())
    assert probe["step"] == 8 and len(probe["probes"]) >= 1
    from safetensors.torch import load_file

    maps = load_file(str(root / "probes" / "step-0000008.safetensors"))
    first = probe["probes"][0]
    S, T = len(first["src_pieces"]), len(first["tgt_pieces"])
    assert maps["0.cross"].shape == (1, 2, T, S) and maps["0.enc_self"].shape == (1, 2, S, S)
    torch.testing.assert_close(maps["0.cross"].sum(-1), torch.ones(1, 2, T))
    with pytest.raises(TrainingError, match="already holds a run"):
        create_run(root, tiny_spec(corpus_file))


def test_evaluate_cli_scores_a_split_and_writes_json(tmp_path, corpus_file, capsys):
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=2))
    list(Trainer(root).fit())
    out = tmp_path / "scores.json"
    assert evaluate.main(["--checkpoint", str(root / "checkpoints" / "best"), "--split", "test", "--beam", "2",
                          "--out", str(out)]) == 0
    scores = json.loads(out.read_text())
    assert scores["split"] == "test" and scores["beam_size"] == 2 and scores["sentences"] == 15
    assert 0 <= scores["bleu"] <= 100 and scores["bleu_signature"].startswith("nrefs:1")
    assert f"BLEU {scores['bleu']:.2f}" in capsys.readouterr().out
    assert evaluate.main(["--checkpoint", str(tmp_path / "nothing")]) == 2
    assert "no checkpoint directory" in capsys.readouterr().err


def test_resumed_run_continues_the_same_loss_curve(tmp_path, corpus_file):
    straight = create_run(tmp_path / "straight", tiny_spec(corpus_file, max_steps=12))
    list(Trainer(straight).fit())
    split = create_run(tmp_path / "split", tiny_spec(corpus_file, max_steps=6))
    list(Trainer(split).fit())
    assert read_status(split / "status.json")["state"] == "finished"
    list(Trainer(split, overrides={"max_steps": 12}).fit())
    expected, resumed = train_losses(straight), train_losses(split)
    assert len(expected) == len(resumed) == 12
    assert resumed == pytest.approx(expected, rel=1e-6)
    assert len(set(expected)) > 6  # the losses really change, dropout included


def test_nan_loss_stops_with_clear_message_and_keeps_last_good_checkpoint(tmp_path, corpus_file, monkeypatch):
    root = create_run(tmp_path / "nan", tiny_spec(corpus_file, max_steps=3, save_every=2))
    list(Trainer(root).fit())
    good = load_checkpoint(root / "checkpoints" / "latest")
    original = loss.projected_cross_entropy_sum
    monkeypatch.setattr(loss, "projected_cross_entropy_sum", lambda *a, **k: original(*a, **k) * math.nan)
    with pytest.raises(TrainingError, match="loss became nan at step 4"):
        list(Trainer(root, overrides={"max_steps": 6}).fit())
    status = read_status(root / "status.json")
    assert status["state"] == "failed" and "nan" in status["error"]
    kept = load_checkpoint(root / "checkpoints" / "latest")
    assert kept.metadata["step"] == 3
    for a, b in zip(kept.model.parameters(), good.model.parameters()):
        assert torch.equal(a, b)


def run_cli(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "transformer.training", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def autogroups_enabled() -> bool:
    setting = Path("/proc/sys/kernel/sched_autogroup_enabled")
    return setting.exists() and setting.read_text().strip() == "1" and Path("/proc/self/autogroup").exists()


def tiny_cli_args(corpus_file: Path) -> list[str]:
    return ["--corpus", "tsv", "--path", str(corpus_file), "--tokenizer", "wordlevel", "--vocab-size", "64",
            "--d-model", "32", "--n-heads", "2", "--layers", "1", "--d-ff", "64", "--max-len", "32",
            "--max-tokens", "400", "--eval-sentences", "4", "--threads", "1"]


def test_cli_end_to_end_and_sigterm_saves_a_checkpoint(tmp_path, corpus_file):
    done = run_cli("--out", str(tmp_path / "cli"), *tiny_cli_args(corpus_file), "--max-steps", "6",
                   "--log-every", "2", "--eval-every", "6", "--nice", "1")
    output, _ = done.communicate(timeout=120)
    assert done.returncode == 0, output
    # started from a terminal's session, not one of its own: where Linux groups sessions, the run says nice is local
    assert ("within this terminal's session" in output) == autogroups_enabled(), output
    assert "eval at step 6" in output and "ETA" in output
    assert "precision: " in output  # the run says which precision it uses, and why
    assert read_status(tmp_path / "cli" / "status.json")["state"] == "finished"

    root = tmp_path / "stopped"
    proc = run_cli("--out", str(root), *tiny_cli_args(corpus_file), "--max-steps", "100000", "--log-every", "1",
                   "--eval-every", "100000", "--save-every", "100000", "--nice", "3", start_new_session=True)
    deadline = time.time() + 60
    while len(read_metrics(root / "metrics.jsonl")) < 3 and time.time() < deadline:
        time.sleep(0.2)
    if Path(f"/proc/{proc.pid}/task").is_dir():  # --nice lowers every thread, torch's included (Linux: per thread)
        threads = [int(stat.read_text().rsplit(")", 1)[1].split()[16]) for stat in
                   Path(f"/proc/{proc.pid}/task").glob("*/stat")]
        assert len(threads) > 1 and set(threads) == {os.nice(0) + 3}, threads
    if autogroups_enabled():  # in a session of its own (as the app starts it), the session's group yields too
        assert Path(f"/proc/{proc.pid}/autogroup").read_text().split()[-1] == str(os.nice(0) + 3)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, output
    assert f"priority: nice {os.nice(0) + 3}" in output
    assert ("its session's scheduling group too" in output) == autogroups_enabled(), output
    status = read_status(root / "status.json")
    assert status["state"] == "stopped" and status["step"] >= 3
    assert load_checkpoint(root / "checkpoints" / "latest").metadata["step"] == status["step"]


def test_cli_reports_bad_input_in_one_line(tmp_path):
    # --threads 1: no restart for a wait policy on a busy machine (a second torch import; test_cores checks it)
    proc = run_cli("--out", str(tmp_path / "bad"), "--corpus", "tsv", "--path", str(tmp_path / "missing.tsv"),
                   "--threads", "1")
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "missing.tsv" in output and "Traceback" not in output


@pytest.mark.skipif(shutil.which("torchrun") is None and not (Path(sys.executable).parent / "torchrun").exists(),
                    reason="torchrun not installed")
def test_ddp_on_two_cpu_processes(tmp_path, corpus_file):
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).parent / "torchrun")
    root = tmp_path / "ddp"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    # A start or a barrier that waits 60 s fails with an error naming what it waited for, so that the subprocess
    # timeout below only catches what those miss; it kills the whole process group, workers included.
    proc = subprocess.Popen(
        [torchrun, "--standalone", "--nproc_per_node=2", "-m", "transformer.training", "--out", str(root),
         *tiny_cli_args(corpus_file), "--max-steps", "4", "--log-every", "1", "--eval-every", "4",
         "--device", "cpu", "--start-timeout", "60", "--collective-timeout", "60"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=200)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"torchrun with 2 ranks did not finish 4 steps in 200 s; its output:\n{output}")
    assert proc.returncode == 0, output
    status = read_status(root / "status.json")
    checksums = status["rank_param_checksums"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]
    saved = load_checkpoint(root / "checkpoints" / "latest").model
    assert sum(p.double().sum().item() for p in saved.parameters()) == pytest.approx(checksums[0], rel=1e-9)
    steps = [r["step"] for r in read_metrics(root / "metrics.jsonl") if "train_loss" in r]
    assert steps == [1, 2, 3, 4]  # written once, by rank 0


def test_a_run_whose_corpus_fails_records_the_error(tmp_path):
    spec = RunSpec(CorpusSpec(kind="tsv", path=str(tmp_path / "gone.tsv")), TokenizerSettings(), TINY_MODEL,
                   TrainConfig(max_steps=2))
    root = create_run(tmp_path / "run", spec)
    with pytest.raises(ValueError, match="gone.tsv"):
        list(Trainer(root).fit())
    status = read_status(root / "status.json")
    assert status["state"] == "failed" and "gone.tsv" in status["error"]


def test_a_run_can_start_from_a_trained_checkpoint(tmp_path, corpus_file):
    base = tmp_path / "base"
    create_run(base, tiny_spec(corpus_file, max_steps=6))
    list(Trainer(base).fit())
    trained = load_checkpoint(base / "checkpoints" / "latest")
    tuned = tmp_path / "tuned"
    spec = tiny_spec(corpus_file, max_steps=3, lr=1e-9, warmup_steps=1)  # a learning rate too small to move much
    create_run(tuned, dataclasses.replace(spec, init_from=str(base / "checkpoints" / "latest")))
    trainer = Trainer(tuned)
    records = list(trainer.fit())
    assert (tuned / "tokenizer.json").read_text() == (base / "tokenizer.json").read_text()
    after = load_checkpoint(tuned / "checkpoints" / "latest")
    assert after.config == trained.config and after.metadata["step"] == 3
    for name, weight in trained.model.state_dict().items():
        assert torch.allclose(after.model.state_dict()[name], weight, atol=1e-4), name
    first = next(r["train_loss"] for r in records if "train_loss" in r)
    assert first < train_losses(base)[0] - 0.3  # it starts where the base run ended, not from random weights
    assert json.loads((tuned / "run.json").read_text())["init_from"] == str(base / "checkpoints" / "latest")
    list(Trainer(tuned, overrides={"max_steps": 4}).fit())  # a resume continues from its own latest checkpoint
    assert load_checkpoint(tuned / "checkpoints" / "latest").metadata["step"] == 4


def test_init_from_refuses_architecture_flags_and_missing_checkpoints(tmp_path, capsys):
    from transformer.training import cli as train

    assert train.main(["--out", str(tmp_path / "a"), "--init-from", str(tmp_path), "--d-model", "64"]) == 2
    assert "--init-from keeps the checkpoint's architecture and vocabulary: drop --d-model" in capsys.readouterr().err
    assert train.main(["--out", str(tmp_path / "b"), "--init-from", str(tmp_path / "nothing")]) == 2
    assert "not a checkpoint directory (no config.json)" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()

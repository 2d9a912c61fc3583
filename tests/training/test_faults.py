"""Training under faults: kill -9 at random moments, torn files, a second trainer, a full disk, a missing rank."""

import errno
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import torch

from tests.training.test_training import ROOT, corpus_file, tiny_cli_args, tiny_spec, train_losses  # noqa: F401 (fixture)
from transformer.model import checkpoint
from transformer.model.checkpoint import load_checkpoint
from transformer.runs import (
    ProbeRecord,
    RunFiles,
    RunLock,
    append_metrics,
    discard_probes_after,
    probe_steps,
    read_metrics,
    read_probe_maps,
    read_probes,
    read_status,
    truncate_metrics,
    write_probes,
)
from transformer.training.loop import Trainer
from transformer.training.run import TrainingError, create_run


def start_cli(*args: str, log: Path) -> subprocess.Popen:
    """The training CLI in its own process group, its output appended to log (a pipe nobody reads can block it).
    --threads 1, as tiny_spec records, so that it never starts itself again for a wait policy on a busy machine
    (a second torch import; tests/training/test_cores.py checks that restart)."""
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "transformer.training", *args, "--threads", "1"], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})


def wait_for(condition, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the training process exited ({proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {what}")
        time.sleep(0.005)


def last_step(root: Path) -> int:
    return max((r["step"] for r in read_metrics(root / "metrics.jsonl") if "train_loss" in r), default=0)


def reached(root: Path, pid: int, step: int) -> bool:
    """Process pid trains in root and has logged step (the log before that is a killed process's, until pid has
    truncated it to its checkpoint, which it does before it reports "running")."""
    status = read_status(root)
    return status.get("pid") == pid and status.get("state") == "running" and last_step(root) >= step


def kill_and_resume(tmp_path: Path, corpus: Path, kills: int, seed: int, **train) -> tuple[Path, Path, list[int]]:
    """The same tiny run twice: straight through in this process, and as a CLI process killed (SIGKILL) `kills`
    times at random steps, each time resumed with --resume. Returns both run folders and the steps killed at."""
    spec = tiny_spec(corpus, **train)
    straight = create_run(tmp_path / "straight", spec)
    list(Trainer(straight).fit())
    root = create_run(tmp_path / "killed", spec)
    rng, killed_at, resumed_from = random.Random(seed), [], 0
    for _ in range(kills):
        # a random step past the checkpoint this process resumes from, and a few ms more: polling every 5 ms
        # lands the kill anywhere in a step (forward or backward pass, a metrics line, an evaluation, a checkpoint
        # swap)
        target = rng.randint(resumed_from + 1, max(resumed_from + 1, spec.train.max_steps - 10))
        proc = start_cli("--resume", str(root), log=tmp_path / "cli.log")
        wait_for(partial(reached, root, proc.pid, target), 120, f"step {target}", proc)
        time.sleep(rng.uniform(0, 0.01))
        assert proc.poll() is None, "the run finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at.append(last_step(root))
        if (root / "checkpoints" / "latest").exists():  # the latest checkpoint always loads
            resumed_from = load_checkpoint(root / "checkpoints" / "latest").metadata["step"]
    proc = start_cli("--resume", str(root), log=tmp_path / "cli.log")
    assert proc.wait(timeout=120) == 0, (tmp_path / "cli.log").read_text()
    return straight, root, killed_at


def assert_same_run(straight: Path, root: Path, max_steps: int) -> None:
    records = read_metrics(root / "metrics.jsonl")
    train_steps = [r["step"] for r in records if "train_loss" in r]
    assert train_steps == list(range(1, max_steps + 1))  # each step once, in order
    eval_steps = [r["step"] for r in records if "dev_loss" in r]
    assert eval_steps == [r["step"] for r in read_metrics(straight / "metrics.jsonl") if "dev_loss" in r]
    # Exactly the uninterrupted curve: the checkpoint holds the optimizer, the RNG and the position in the epoch,
    # and the log runs in steps of 1 (a log interval cut by a resume would average fewer steps).
    assert train_losses(root) == pytest.approx(train_losses(straight), rel=1e-6)
    assert read_status(root)["state"] == "finished"
    assert load_checkpoint(root / "checkpoints" / "latest").metadata["step"] == max_steps


def test_kill_9_at_three_random_moments_then_resume_continues_the_same_curve(tmp_path, corpus_file):  # noqa: F811
    straight, root, killed_at = kill_and_resume(tmp_path, corpus_file, kills=3, seed=1, max_steps=30, save_every=3,
                                                eval_every=5)
    assert len(killed_at) == 3
    assert_same_run(straight, root, 30)


@pytest.mark.slow
def test_kill_9_at_ten_random_moments_then_resume_continues_the_same_curve(tmp_path, corpus_file):  # noqa: F811
    straight, root, killed_at = kill_and_resume(tmp_path, corpus_file, kills=10, seed=2, max_steps=120,
                                                save_every=4, eval_every=6)
    assert len(killed_at) == 10
    assert_same_run(straight, root, 120)


def test_readers_skip_a_torn_last_line_and_appends_start_a_new_one(tmp_path):
    files = RunFiles(tmp_path)
    append_metrics(files.metrics, {"step": 1, "train_loss": 3.0})
    append_metrics(files.metrics, {"step": 2, "train_loss": 2.9})
    with files.metrics.open("a") as f:
        f.write('{"step": 3, "train_lo')  # killed mid-line
    assert [r["step"] for r in read_metrics(files.metrics)] == [1, 2]
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2]  # a run folder reads the same
    append_metrics(files.metrics, {"step": 3, "train_loss": 2.8})
    assert [r["step"] for r in read_metrics(files.metrics)] == [1, 2, 3]
    assert truncate_metrics(files.metrics, 2) == 1
    assert [json.loads(line)["step"] for line in files.metrics.read_text().splitlines()] == [1, 2]
    files.status.write_text('{"state": "running", "st')
    assert read_status(files.status) == {} and read_status(tmp_path) == {}
    files.status.write_text('["not", "an", "object"]')
    assert read_status(files.status) == {}
    assert read_metrics(tmp_path / "missing.jsonl") == []


def test_probes_round_trip_as_dataclasses_and_half_written_ones_are_skipped(tmp_path):
    files = RunFiles(tmp_path)
    maps = {"enc_self": torch.rand(2, 2, 3, 3), "dec_self": torch.rand(2, 2, 4, 4), "cross": torch.rand(2, 2, 4, 3)}
    record = ProbeRecord("a cat", "un chat", ["▁a", "▁cat", "</s>"], ["▁un", "▁chat", "</s>", "x"],
                         ["<s>", "▁un", "▁chat", "</s>"], gold_links="0-0 1-1")
    for step in (4, 8, 12):
        write_probes(files, step, [record], [maps])
    files.probe_base(8).with_suffix(".safetensors").unlink()  # killed before its tensors were in place
    files.probe_base(16).with_suffix(".json").write_text('{"step": 16, "pro')
    assert probe_steps(tmp_path) == [4, 12]
    snapshots = read_probes(tmp_path)
    assert [s.step for s in snapshots] == [4, 12] and snapshots[0].probes == [record]
    torch.testing.assert_close(read_probe_maps(tmp_path, 12)["cross"], maps["cross"])
    discard_probes_after(files, 4)
    assert probe_steps(tmp_path) == [4]
    assert not any(p.name.startswith("step-0000012") for p in files.probes.iterdir())


def test_a_second_trainer_is_refused_while_the_first_lives_and_welcome_once_it_is_killed(tmp_path, corpus_file):  # noqa: F811
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=100_000, eval_every=100_000,
                                                  save_every=100_000))
    proc = start_cli("--resume", str(root), log=tmp_path / "first.log")
    try:
        wait_for(lambda: last_step(root) >= 1, 120, "the first trainer's first step", proc)
        with pytest.raises(TrainingError, match=rf"in use by another training process \(pid {proc.pid}\)"):
            Trainer(root)
        second = start_cli("--resume", str(root), log=tmp_path / "second.log")
        assert second.wait(timeout=120) == 2
        assert f"in use by another training process (pid {proc.pid})" in (tmp_path / "second.log").read_text()
        assert read_status(root)["pid"] == proc.pid  # the refused trainer wrote nothing
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    trainer = Trainer(root)  # the kernel dropped the dead process's lock
    with pytest.raises(TrainingError, match="in use"):
        Trainer(root)  # a trainer in this very process holds it too
    trainer.close()
    with RunLock(root):
        pass


def test_lock_is_released_when_fit_ends(tmp_path, corpus_file):  # noqa: F811
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=2))
    trainer = Trainer(root)
    list(trainer.fit())
    assert not trainer.lock.held
    list(Trainer(root, overrides={"max_steps": 3}).fit())


@pytest.mark.parametrize("fail", ["checkpoint", "metrics"])
def test_a_failed_write_stops_with_a_clear_message_and_keeps_the_previous_checkpoint(tmp_path, corpus_file,  # noqa: F811
                                                                                     monkeypatch, fail):
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=4, save_every=2))
    list(Trainer(root).fit())
    good = load_checkpoint(root / "checkpoints" / "latest")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if fail == "checkpoint":
        monkeypatch.setattr(checkpoint, "save_file", disk_full)
        written = r"the checkpoint .*latest"
    else:
        monkeypatch.setattr("transformer.training.loop.append_metrics", disk_full)
        written = r".*metrics\.jsonl"
    with pytest.raises(TrainingError, match=rf"could not write {written}: \[Errno 28\] No space left on device; "
                                            r"stopped, and the previous checkpoint .*latest is intact"):
        list(Trainer(root, overrides={"max_steps": 8}).fit())
    status = read_status(root)
    assert status["state"] == "failed" and "No space left on device" in status["error"]
    kept = load_checkpoint(root / "checkpoints" / "latest")
    assert kept.metadata["step"] == 4
    for a, b in zip(kept.model.parameters(), good.model.parameters()):
        assert torch.equal(a, b)
    assert not [p for p in (root / "checkpoints").iterdir() if p.name.startswith(".")]  # no temporaries left
    monkeypatch.undo()
    list(Trainer(root, overrides={"max_steps": 6}).fit())  # and the run resumes once the disk has room
    assert [r["step"] for r in read_metrics(root) if "train_loss" in r] == list(range(1, 7))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("rank, message", [
    (0, r"distributed start timed out after 2 s: rank 1 of 2 did not join at the rendezvous store at "
        r"127\.0\.0\.1:\d+ \(reported by rank 0\)"),
    (1, r"distributed start: rank 1 could not reach the rendezvous store at 127\.0\.0\.1:\d+ within 2 s"),
])
def test_a_rank_that_never_comes_is_an_error_naming_it_within_the_start_timeout(tmp_path, corpus_file,  # noqa: F811
                                                                                rank, message):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": str(rank),
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    # the 2 s start timeout, which the message names, is the bound; the 60 s here only catches a hang
    try:
        proc = subprocess.run([sys.executable, "-m", "transformer.training", "--out", str(tmp_path / "run"),
                               *tiny_cli_args(corpus_file), "--max-steps", "2", "--device", "cpu",
                               "--start-timeout", "2"], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"a lone rank {rank} waited 60 s instead of failing after its 2 s start timeout:\n{e.output}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert re.search(message, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr

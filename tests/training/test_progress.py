"""Command-line progress: a tqdm bar on a terminal, plain log lines when stderr is not one."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

from tests.training.test_training import ROOT, corpus_file, tiny_cli_args, tiny_spec  # noqa: F401 - corpus_file is a fixture
from transformer import progress
from transformer.decoding import evaluate
from transformer.training.loop import Trainer
from transformer.training.run import create_run


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_training_on_a_terminal_draws_a_bar_and_keeps_every_line_in_train_log(tmp_path, corpus_file):  # noqa: F811
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # tqdm draws nothing 0 wide
    root = tmp_path / "tty"
    proc = subprocess.Popen([sys.executable, "-m", "transformer.training", "--out", str(root),
                             *tiny_cli_args(corpus_file), "--max-steps", "4", "--log-every", "1",
                             "--eval-every", "4"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + 120
    while True:
        if not select.select([leader], [], [], max(0.0, deadline - time.monotonic()))[0]:
            proc.kill()
            proc.wait()
            raise AssertionError(f"waited 120 s for the 4-step run to close its terminal; it drew:\n"
                                 f"{b''.join(chunks).decode('utf-8', 'replace')[-2000:]}")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "training:" in screen and "4/4" in screen and "loss=" in screen and "tok_s=" in screen
    assert "\r" in screen  # the bar redraws in place
    assert "eval at step 4" in screen  # evaluations print above the bar
    assert "step      1/4  loss" not in screen  # ...steps do not
    log = (root / "train.log").read_text()
    assert all(f"step {s:>6}/4  loss" in log for s in range(1, 5)) and "eval at step 4" in log


def test_evaluate_draws_a_bar_on_a_terminal_and_logs_tenths_otherwise(tmp_path, corpus_file, monkeypatch, caplog):  # noqa: F811
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=2))
    list(Trainer(root).fit())
    checkpoint = str(root / "checkpoints" / "best")
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert evaluate.main(["--checkpoint", checkpoint, "--split", "test", "--out", str(tmp_path / "a.json")]) == 0
    assert "translating test: 100%" in terminal.getvalue() and "15/15" in terminal.getvalue()

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    counter = progress.Counter("translating test", evaluate.log)
    assert not counter.terminal
    with caplog.at_level("INFO", logger="transformer.decoding.evaluate"):
        result = evaluate.evaluate_checkpoint(checkpoint, "test", progress=counter)
    lines = [m for m in caplog.messages if m.startswith("translating test:")]
    assert lines and lines[-1] == f"translating test: {result['sentences']}/{result['sentences']} sentences (100%)"
    assert "\r" not in sys.stderr.getvalue()

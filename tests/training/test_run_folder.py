"""The run folder under hostile conditions: it becomes read-only mid-run, its name is one Windows reserves,
or a file or a link already has its name."""

import errno
import json
import os
import threading
import time

import pytest

from tests.fuzz_inputs import RUN_NAMES
from tests.training.test_training import corpus_file, tiny_spec  # noqa: F401 (fixture)
from transformer import files as atomic_files
from transformer.files import read_json_object
from transformer.model import checkpoint
from transformer.runs import RunFiles, RunTakenError, claim_run, read_status, run_name_problem, write_status
from transformer.training.loop import Trainer
from transformer.training.run import RunSpec, TrainingError, create_run
from ui.shared.training import jobs


def read_only(switch: list[bool]):
    """mkstemp / mkdtemp that fail as in a read-only folder once switch[0] is set (root ignores chmod, so a test
    run as root could not make a real one)."""
    def fail(real):
        def maker(*args, **kwargs):
            if switch[0]:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return real(*args, **kwargs)
        return maker
    return fail


@pytest.mark.timeout(120)
def test_a_run_folder_that_becomes_read_only_ends_with_a_status_that_says_so(tmp_path, corpus_file,  # noqa: F811
                                                                             monkeypatch):
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=8, save_every=4))
    switch = [False]
    wrap = read_only(switch)
    monkeypatch.setattr(atomic_files.tempfile, "mkstemp", wrap(atomic_files.tempfile.mkstemp))
    monkeypatch.setattr(checkpoint.tempfile, "mkdtemp", wrap(checkpoint.tempfile.mkdtemp))
    with pytest.raises(TrainingError, match=r"could not write the checkpoint .*latest: \[Errno 30\] Read-only"):
        for record in Trainer(root).fit():
            if record["step"] == 2:
                switch[0] = True  # the folder turns read-only: the checkpoint at step 4 cannot be made
    status = read_status(root)
    assert status["state"] == "failed" and "Read-only file system" in status["error"], status


def test_write_status_overwrites_in_place_when_no_file_can_be_made_beside_it(tmp_path, monkeypatch):
    files = RunFiles(tmp_path)
    write_status(files, "running", step=3)
    monkeypatch.setattr(atomic_files.tempfile, "mkstemp", read_only([True])(None))
    write_status(files, "stopped", step=4)
    assert read_status(files.status) | {"pid": 0, "updated": 0} == {"state": "stopped", "step": 4, "pid": 0,
                                                                    "updated": 0}


def test_the_app_says_a_dead_run_in_a_read_only_folder_could_not_record_its_end(tmp_path, monkeypatch):
    files = RunFiles(tmp_path / "run")
    files.root.mkdir()
    write_status(files, "running", step=3)
    monkeypatch.setattr(jobs, "pid_alive", lambda pid: False)
    assert "died without saving its state" in jobs.run_info(files.root).error
    monkeypatch.setattr(jobs.os, "access", lambda path, mode: False)
    info = jobs.run_info(files.root)
    assert info.state == "crashed" and "is read-only" in info.error and "died" not in info.error


@pytest.mark.parametrize("name", RUN_NAMES)
def test_windows_reserved_run_names_are_refused_everywhere(tmp_path, monkeypatch, name):
    assert run_name_problem(name)
    monkeypatch.setattr(jobs, "_launch", lambda root, args: pytest.fail(f"launched {root}"))
    with pytest.raises(ValueError, match="Windows|A run name"):
        jobs.start_run(tmp_path / "runs", name, ["--corpus", "teaching"])
    with pytest.raises(TrainingError, match="Windows"):
        create_run(tmp_path / name, tiny_spec(tmp_path / "c.tsv"))
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["con-1", "lpt10", "nullable", "auxiliary", "v1.0", "com-port"])
def test_names_that_only_look_reserved_are_fine(name):
    assert run_name_problem(name) is None and jobs.valid_run_name(name)


@pytest.mark.parametrize("kind", ["file", "link to a folder outside", "dangling link"])
def test_a_file_or_link_with_the_runs_name_is_a_clear_error_and_nothing_is_written_outside(tmp_path, monkeypatch,
                                                                                           kind):
    runs, outside = tmp_path / "runs", tmp_path / "outside"
    runs.mkdir()
    outside.mkdir()
    if kind == "file":
        (runs / "taken").write_text("not a run")
    elif kind == "dangling link":
        (runs / "taken").symlink_to(tmp_path / "nowhere")
    else:
        (runs / "taken").symlink_to(outside)
    monkeypatch.setattr(jobs, "_launch", lambda root, args: pytest.fail(f"launched {root}"))
    with pytest.raises(ValueError, match="a file or link named 'taken' is in the runs folder"):
        jobs.start_run(runs, "taken", ["--corpus", "teaching"], corpus_tsv=b"a b\tc d\n" * 60)
    with pytest.raises(TrainingError, match="a file or link of that name is in the way"):
        create_run(runs / "taken", tiny_spec(tmp_path / "c.tsv"))
    assert list(outside.iterdir()) == [] and not (tmp_path / "nowhere").exists()


class SlowPopen:
    """A started process as slow to start as a real one (about 0.2 s), without starting anything."""

    def __init__(self, command, **kwargs):
        time.sleep(0.2)
        self.pid = os.getpid()  # launch.json records it; tests keep it out of jobs._PROCESSES

    def poll(self):
        return None


def race(starters: list) -> list[object]:
    """Run the callables at once (a barrier releases them together); each one's result or exception."""
    barrier = threading.Barrier(len(starters))
    results: list[object] = [None] * len(starters)

    def run(i):
        barrier.wait()
        try:
            results[i] = starters[i]()
        except Exception as e:  # noqa: BLE001 (the test looks at which one lost)
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(starters))]
    for t in threads:
        t.start()
    for i, t in enumerate(threads):
        t.join(timeout=60)
        assert not t.is_alive(), f"waited 60 s for racer {i} of {len(threads)} to return from its start"
    return results


def test_two_starts_of_one_run_name_at_once_start_one_run_and_tell_the_other(tmp_path, monkeypatch):
    """Both used to return "started" (the second trainer then quit unseen)."""
    monkeypatch.setattr(jobs.subprocess, "Popen", SlowPopen)
    monkeypatch.setattr(jobs, "_PROCESSES", {})  # the fakes never reach other tests' clean-up
    runs = tmp_path / "runs"
    for attempt in range(3):
        name = f"same-{attempt}"
        results = race([lambda name=name: jobs.start_run(runs, name, ["--corpus", "teaching"])] * 2)
        started = [r for r in results if isinstance(r, jobs.RunInfo)]
        refused = [r for r in results if isinstance(r, ValueError)]
        assert len(started) == 1 and len(refused) == 1, results
        assert f"a run named {name!r} already exists" in str(refused[0])
        assert read_json_object(runs / name / "launch.json")["pid"] == os.getpid()
        assert started[0].state == "starting"


def test_two_cli_runs_into_one_folder_at_once_create_one_run(tmp_path, corpus_file, monkeypatch):  # noqa: F811
    to_dict = RunSpec.to_dict
    monkeypatch.setattr(RunSpec, "to_dict", lambda self: time.sleep(0.2) or to_dict(self))  # both pass the checks
    specs = [tiny_spec(corpus_file, seed=0), tiny_spec(corpus_file, seed=1)]
    results = race([lambda spec=spec: create_run(tmp_path / "same", spec) for spec in specs])
    assert sorted(type(r).__name__ for r in results) == ["PosixPath", "TrainingError"]
    assert "already holds a run" in str(next(r for r in results if isinstance(r, TrainingError)))
    seed = json.loads((tmp_path / "same" / "run.json").read_text())["train"]["seed"]
    assert seed == [i for i, r in enumerate(results) if not isinstance(r, TrainingError)][0]


def test_claim_run_is_given_back_when_the_process_cannot_start(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("no such interpreter")

    monkeypatch.setattr(jobs.subprocess, "Popen", broken)
    monkeypatch.setattr(jobs, "_PROCESSES", {})  # the fake below never reaches other tests' clean-up
    with pytest.raises(OSError):
        jobs.start_run(tmp_path / "runs", "again", ["--corpus", "teaching"])
    assert not (tmp_path / "runs" / "again" / "launch.json").exists()
    monkeypatch.setattr(jobs.subprocess, "Popen", SlowPopen)
    assert jobs.start_run(tmp_path / "runs", "again", ["--corpus", "teaching"]).state == "starting"
    with pytest.raises(RunTakenError):
        claim_run(tmp_path / "runs" / "again")

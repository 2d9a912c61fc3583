"""Every training flag's range is checked before anything is written (one table,
training.flags.RANGES, for the command, TrainConfig and the Train page), --threads is bounded by the cores, and a
run that a limit ends always leaves its checkpoints and says which limit it was."""

import dataclasses

import pytest

from tests.training.test_training import corpus_file, tiny_spec  # noqa: F401 (fixture)
from transformer.arguments import THREADS_PER_CORE, check_threads, usable_cores
from transformer.explain.lenses import __main__ as lenses_command
from transformer.runs import read_status
from transformer.training import cli
from transformer.training.flags import RANGES
from transformer.training.loop import Trainer, ended_by
from transformer.training.recipe import TokenizerSettings, TrainConfig
from transformer.training.run import create_run
from ui.shared.training import jobs as jobs

BAD_FLAGS = [  # the reproductions, and the neighbours of each
    ("--log-every", "0"), ("--eval-every", "0"), ("--save-every", "0"), ("--eval-sentences", "0"),
    ("--eval-sentences", "-5"), ("--threads", "-4"), ("--threads", "0"), ("--threads", "100000"),
    ("--vocab-size", "1"), ("--label-smoothing", "2"), ("--label-smoothing", "-1"), ("--label-smoothing", "1"),
    ("--clip-grad-norm", "-1"), ("--warmup-steps", "-5"), ("--keep-last", "-1"), ("--start-timeout", "nan"),
    ("--collective-timeout", "-1"), ("--max-epochs", "0"), ("--max-epochs", "-1"), ("--max-steps", "1e20"),
    ("--max-steps", "2.5"), ("--lr", "-inf"), ("--lr", "0"), ("--start-timeout", "-inf"), ("--nice", "-5"),
    ("--seed", "-1"), ("--accumulation", "0"), ("--max-tokens", "0"),
]


def new_run_args(tmp_path, corpus_file, *flags: str) -> list[str]:  # noqa: F811
    return ["--out", str(tmp_path / "run"), "--corpus", "tsv", "--path", str(corpus_file), "--tokenizer",
            "wordlevel", *flags]


@pytest.mark.parametrize("flag, value", BAD_FLAGS)
def test_a_flag_out_of_range_is_one_line_naming_it_and_nothing_is_written(tmp_path, corpus_file, capsys,  # noqa: F811
                                                                          flag, value):
    assert cli.main(new_run_args(tmp_path, corpus_file, flag, value)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag} must be a ") and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match=f"^{flag} must be a "):  # the Train page's check: the same words
        jobs.start_run(tmp_path / "runs", "run", ["--corpus", "teaching", flag, value])
    assert list(tmp_path.iterdir()) == []


def test_model_sizes_are_checked_before_the_run_is_made(tmp_path, corpus_file, capsys):  # noqa: F811
    for flags, message in ((["--d-model", "0"], "d_model must be between 1"), (["--dropout", "1.5"], "dropout"),
                           (["--d-model", "30", "--n-heads", "4"], "divisible by n_heads")):
        assert cli.main(new_run_args(tmp_path, corpus_file, *flags)) == 2
        assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_resume_checks_its_flags_before_touching_the_run(tmp_path, corpus_file, capsys):  # noqa: F811
    root = create_run(tmp_path / "run", tiny_spec(corpus_file))
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    assert cli.main(["--resume", str(root), "--log-every", "0"]) == 2
    assert "error: --log-every must be a whole number from 1" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_whole_numbers_given_as_floats_are_stored_as_ints_and_the_table_covers_every_number():
    config = TrainConfig(max_steps=100.0, log_every=5.0)
    assert type(config.max_steps) is int and config.max_steps == 100 and type(config.log_every) is int
    numbers = {f.name for f in dataclasses.fields(TrainConfig) if f.type in ("int", "float", "int | None")}
    assert numbers <= set(RANGES)
    for bad in (dict(seed=True), dict(lr="0.1"), dict(threads=2.5), dict(label_smoothing=float("nan"))):
        with pytest.raises(ValueError, match=f"^{next(iter(bad))} must be"):
            TrainConfig(**bad)
    with pytest.raises(ValueError, match="vocab_size must be a whole number from 8"):
        TokenizerSettings(vocab_size=1)


def test_threads_are_bounded_by_the_cores_in_every_command(tmp_path, capsys):
    limit = usable_cores() * THREADS_PER_CORE
    assert check_threads(limit) == limit and check_threads(1.0) == 1
    for bad in (limit + 1, 0, -4, 10**5, True, "2"):
        with pytest.raises(ValueError, match=f"--threads must be a whole number from 1 to {limit:,}"):
            check_threads(bad)
    with pytest.raises(SystemExit) as exited:  # the lens command: before the checkpoint is even read
        lenses_command.main(["--checkpoint", str(tmp_path / "none"), "--threads", "100000"])
    assert exited.value.code == 2
    assert f"the thread count must be a whole number from 1 to {limit:,}" in capsys.readouterr().err


def test_a_run_ended_by_max_epochs_evaluates_saves_and_says_so(tmp_path, corpus_file):  # noqa: F811
    """--max-steps 100 --max-epochs 1 on a tiny corpus used to train a few steps, say "finished" and save nothing."""
    root = create_run(tmp_path / "run", tiny_spec(corpus_file, max_steps=100, max_epochs=1, eval_every=50,
                                                  save_every=50, log_every=50))
    trainer = Trainer(root)
    records = list(trainer.fit())
    status = read_status(root)
    steps = status["step"]
    assert status["state"] == "finished" and 0 < steps < 50
    assert (root / "checkpoints" / "latest").is_dir() and (root / "checkpoints" / "best").is_dir()
    assert [r["step"] for r in records if "dev_bleu" in r] == [steps]  # the one evaluation, at the last step
    assert status["ended_by"] == trainer.ended_by == (
        f"--max-epochs 1 ended it at step {steps} of --max-steps 100, before the first scheduled evaluation "
        f"(step 50): it evaluated and saved at step {steps}")


def test_ended_by_names_the_limit():
    config = TrainConfig(max_steps=10, max_epochs=3, eval_every=4)
    assert ended_by(config, 10) == "reached --max-steps 10"
    assert ended_by(config, 6) == "--max-epochs 3 ended it at step 6 of --max-steps 10"


"""The lens command (`python -m transformer.explain.lenses`) on bad flags, bad metadata and bad output paths: a
message and exit status, never a traceback, and the output path checked before any sentence is scored."""

import dataclasses

import pytest
import torch

from transformer.data.load import load_corpus
from transformer.explain.lenses import __main__ as cli
from transformer.model.checkpoint import load_checkpoint
from transformer.model.layers import Transformer

TEACHING = "checkpoints/en-fr-teaching"


@pytest.fixture(scope="module")
def teaching():
    return load_checkpoint(TEACHING)


@pytest.fixture
def never_scored(monkeypatch):
    """Fails the test if the command starts scoring."""
    def score(*args, **kwargs):
        raise AssertionError("the command scored sentences it should have refused to start")
    monkeypatch.setattr(cli, "score_lenses", score)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the command; argparse's refusals exit through SystemExit."""
    try:
        status = cli.main(["--checkpoint", TEACHING, "--lenses", "raw", *argv])
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("limit", ["-500", "-499", "-1", "0"])
def test_a_limit_below_one_is_refused(capsys, never_scored, limit):
    status, _, err = run(capsys, "--limit", limit)
    assert status == 2 and "--limit" in err and "at least 1" in err


def test_an_empty_json_path_is_refused(capsys, never_scored):
    status, _, err = run(capsys, "--json", "")
    assert status == 2 and "--json" in err


@pytest.mark.parametrize("where", ["directory", "missing folder", "/proc/self/status", "/dev/null", "link"])
def test_an_unwritable_json_path_is_refused_before_scoring(capsys, never_scored, tmp_path, where):
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere.json")
    path = {"directory": str(tmp_path), "missing folder": str(tmp_path / "no" / "out.json"),
            "link": str(tmp_path / "link")}.get(where, where)
    status, _, err = run(capsys, "--json", path)
    assert status == 2 and "--json" in err and path in err and "Traceback" not in err


def test_a_write_that_fails_after_scoring_keeps_the_table(capsys, monkeypatch, tmp_path, teaching):
    monkeypatch.setattr(cli, "load_checkpoint", lambda path: teaching)

    def fail(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cli, "write_json_atomic", fail)
    status = cli.main(["--checkpoint", TEACHING, "--lenses", "raw", "--limit", "2", "--json", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert status == 1 and "| raw |" in out and "No space left" in err


def test_a_grammar_the_code_does_not_know_is_a_message(capsys, monkeypatch, never_scored, teaching):
    corpus = {**teaching.metadata["corpus"], "grammar": 999}
    monkeypatch.setattr(cli, "load_checkpoint", lambda path: dataclasses.replace(teaching, metadata={"corpus": corpus}))
    status, _, err = run(capsys)
    assert status == 2 and "grammar" in err and "999" in err


def test_a_model_that_scores_no_sentence_says_so(capsys, monkeypatch, teaching):
    # metadata of the teaching corpus, but a model whose max_len no sentence fits: every sentence is skipped
    config = dataclasses.replace(teaching.config, max_len=3)
    torch.manual_seed(0)
    short = dataclasses.replace(teaching, config=config, model=Transformer(config).eval())
    monkeypatch.setattr(cli, "load_checkpoint", lambda path: short)
    status, _, err = run(capsys, "--limit", "3")
    assert status == 1 and "no sentence" in err and "3 skipped" in err


def test_the_train_split_builds_only_the_pairs_the_limit_asks_for(capsys, monkeypatch, teaching):
    specs = []

    def load(spec):
        specs.append(spec)
        return load_corpus(spec)
    monkeypatch.setattr(cli, "load_checkpoint", lambda path: teaching)
    monkeypatch.setattr(cli, "load_corpus", load)
    status, out, _ = run(capsys, "--split", "train", "--limit", "2")
    assert status == 0 and [s.train_pairs for s in specs] == [2] and "2 sentences scored" in out
    # a larger train split begins with the pairs of a smaller one: these are the full split's first two
    longer = load_corpus(dataclasses.replace(specs[0], train_pairs=20))
    assert load_corpus(specs[0]).train == longer.train[:2]


def test_the_lenses_command_help_says_its_description_whole(capsys):
    from transformer.explain.lenses.__main__ import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "scored on a teaching model's gold links" in shown and "faithfulness to occlusion." in shown

"""Every command that README.md and docs/*.md give still runs, or at least still takes the flags they name.

The commands checked are the lines of fenced shell blocks (```bash, ```sh, ```shell, ```console or a bare ```) that
invoke `python -m transformer...` (any python: `python3`, `.venv/bin/python`; `torchrun ... -m transformer...` too),
`transformer-*` or `.venv/bin/transformer-*` (pyproject's [project.scripts]), `attention-explorer`, or
`streamlit run`. A line ending in `\\` goes on with the next; `&&`, `||`, `;` and `|` separate commands on a line;
`...`, redirections and comments are not flags. Each command is checked one of two ways:

- **Runnable** lines carry the marker `test:run` in their comment, e.g.
  `python -m transformer.decoding.translate "And God said."   # test:run`. The test runs them from the repository root,
  `python` (or `.venv/bin/NAME`) standing for this interpreter (or the script beside it), and expects exit status
  0 within 60 s. Mark only cheap ones: a `--help`, one sentence on a shipped model.
- **Every other** line has each `--flag` it names looked up in that command's argparse parser, which the test gets
  by starting the command's entry point in this process and stopping it at its first `parse_args`, before it does
  anything. `streamlit run` takes Streamlit's config options (`--server.port` is `server.port`);
  `attention-explorer` takes its own flags and those.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import re
import runpy
import shlex
import subprocess
import sys
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"", "bash", "sh", "shell", "console"}
MARKER = "test:run"
SEPARATORS = {"&&", "||", ";", "|", "&"}
REDIRECTIONS = {"<", ">", ">>", "2>"}


@dataclass(frozen=True)
class Command:
    where: str                # file:line, for the message
    line: str                 # as the document writes it, continuation lines joined
    kind: str                 # "module" (python -m), "script" (an installed command) or "streamlit"
    target: str               # the module, the script's name, or "streamlit"
    args: tuple[str, ...]     # what follows the module, script or `streamlit run APP`
    prefix: tuple[str, ...]   # what comes before it: environment assignments, the interpreter and its `-m`
    runnable: bool


def shell_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, line) of every fenced shell block, a line ending in a backslash joined with the next."""
    found, inside, language, pending, start = [], False, "", "", 0
    for number, line in enumerate(markdown.splitlines(), 1):
        fence = re.fullmatch(r"\s*```\s*([\w+-]*)\s*", line)
        if fence and not inside:
            inside, language = True, fence[1].lower()
        elif fence:
            inside = False
        elif inside and language in SHELLS:
            start = start or number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            found.append((start, pending + line))
            pending, start = "", 0
    return found


def _invocation(tokens: list[str]) -> tuple[str, str, int, int] | None:
    """(kind, target, index of the module, script or streamlit, index of its first argument) of the documented
    command in one shell command, if it is one."""
    for i, token in enumerate(tokens):
        name = token.rsplit("/", 1)[-1]
        if token == "-m" and i + 1 < len(tokens) and re.match(r"transformer(\.|$)", tokens[i + 1]):
            return "module", tokens[i + 1], i + 1, i + 2
        if name.startswith("transformer-") or name == "attention-explorer":
            return "script", name, i, i + 1
        if name == "streamlit" and tokens[i + 1:i + 2] == ["run"]:
            return "streamlit", "streamlit", i, i + 3  # after `run APP`
    return None


def commands(text: str, source: str) -> list[Command]:
    found = []
    for number, line in shell_lines(text):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            tokens = list(lexer)
        except ValueError as e:  # an unclosed quote
            raise AssertionError(f"{source}:{number}: cannot read {line!r}: {e}") from e
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token not in SEPARATORS:
                segment.append(token)
                continue
            if (invocation := _invocation(segment)) is not None:
                kind, target, at, first = invocation
                args = [a for i, a in enumerate(segment[first:], first)
                        if a not in REDIRECTIONS and segment[i - 1] not in REDIRECTIONS]
                found.append(Command(f"{source}:{number}", line.strip(), kind, target, tuple(args),
                                     tuple(segment[:at]), bool(re.search(rf"#.*\b{MARKER}\b", line))))
            segment = []
    return found


def flags(command: Command) -> list[str]:
    return [a.split("=", 1)[0] for a in command.args if a.startswith("--") and a != "--"]


class _Stop(Exception):
    """Raised by the patched parse_known_args: the parser is built, nothing has run."""


@functools.cache
def _parser(kind: str, target: str) -> argparse.ArgumentParser:
    """The argparse parser of a module run as `python -m` or of an installed script, stopped before it parses."""
    built: list[argparse.ArgumentParser] = []

    def stop(self, args=None, namespace=None):
        built.append(self)
        raise _Stop

    if kind == "module":
        def start():
            with warnings.catch_warnings():  # runpy warns when an old path re-exporting module is already imported
                warnings.simplefilter("ignore", RuntimeWarning)
                runpy.run_module(target, run_name="__main__", alter_sys=False)
    else:
        scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
        assert target in scripts, f"{target} is not one of pyproject's scripts: {sorted(scripts)}"
        module, function = scripts[target].split(":")
        start = getattr(importlib.import_module(module), function)
    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", stop), \
            mock.patch.object(sys, "argv", [target]):
        try:
            start()
        except _Stop:
            pass
    assert built, f"{target} built no argparse parser"
    return built[0]


@functools.cache
def _streamlit_options() -> frozenset[str]:
    from streamlit import config

    return frozenset(f"--{name}" for name in config.get_config_options())


def unknown_flags(command: Command) -> list[str]:
    """The flags of `command` that the command does not take."""
    known: set[str] = set()
    if command.kind in ("module", "script"):
        known |= set(_parser(command.kind, command.target)._option_string_actions)
    if command.kind == "streamlit" or command.target == "attention-explorer":
        known |= _streamlit_options()
    return [flag for flag in flags(command) if flag not in known]


def run(command: Command) -> subprocess.CompletedProcess:
    """A runnable command as a shell would run it from the repository root, with this interpreter for `python`."""
    bin_dir = Path(sys.executable).parent
    env = dict(a.split("=", 1) for a in command.prefix if re.match(r"[A-Z_][A-Z0-9_]*=", a))
    program = [p for p in command.prefix if "=" not in p]
    pythons = (["python", "-m"], ["python3", "-m"], [".venv/bin/python", "-m"])
    assert program in pythons if command.kind == "module" else (command.kind == "script" and not program), \
        f"{command.where}: a runnable command is `python -m MODULE ...` or a script: {command.line}"
    head = [sys.executable, "-m", command.target] if command.kind == "module" else [str(bin_dir / command.target)]
    return subprocess.run([*head, *command.args], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60)


DOCUMENTED = [c for doc in DOCUMENTS for c in commands(doc.read_text(encoding="utf-8"), str(doc.relative_to(ROOT)))]


def test_the_docs_give_commands_of_every_kind_and_some_runnable():
    """The reader finds what the docs hold: a regression in it would pass every check below on nothing."""
    assert len(DOCUMENTED) >= 20
    assert {c.kind for c in DOCUMENTED} == {"module", "script", "streamlit"}
    assert any(c.runnable for c in DOCUMENTED)
    assert sum(len(flags(c)) for c in DOCUMENTED) >= 50


@pytest.mark.parametrize("command", [c for c in DOCUMENTED if not c.runnable], ids=lambda c: c.where)
def test_each_documented_flag_exists(command):
    assert not unknown_flags(command), f"{command.where}: {command.line}"


@pytest.mark.parametrize("command", [c for c in DOCUMENTED if c.runnable], ids=lambda c: c.where)
def test_each_runnable_command_runs(command):
    done = run(command)
    assert done.returncode == 0, f"{command.where}: {command.line}\n{done.stderr[-2000:]}"
    assert done.stdout.strip()


def test_a_flag_that_does_not_exist_is_found():
    """A constructed document: one wrong flag per kind of command, among right ones, continued lines and noise."""
    doc = "\n".join([
        "Text, and a block in another language that is not read:",
        "```python", "python -m transformer.training --no-such-python-flag", "```",
        "```bash",
        "# a comment line, then commands",
        "python -m transformer.training --corpus teaching --preset tiny --out runs/x --no-such-flag 3  # --in-comment",
        "MALLOC_ARENA_MAX=2 .venv/bin/streamlit run app.py --server.address 0.0.0.0 --server.nosuch 1",
        ".venv/bin/transformer-evaluate --checkpoint c --beem 4 < in.txt && python -m pytest -q --not-checked",
        "torchrun --standalone --nproc_per_node=2 -m transformer.decoding.translate --beam 4 \\",
        "    --nbest 2 --bogus",
        "attention-explorer --server.port 8502 --print-command --nope",
        "```",
        "```",
        'python -m transformer.decoding.evaluate --split test --part bible "..."   # test:run',
        "```",
    ])
    found = commands(doc, "constructed.md")
    assert [(c.target, c.runnable) for c in found] == [
        ("transformer.training", False), ("streamlit", False), ("transformer-evaluate", False),
        ("transformer.decoding.translate", False), ("attention-explorer", False),
        ("transformer.decoding.evaluate", True)]
    assert [unknown_flags(c) for c in found] == [["--no-such-flag"], ["--server.nosuch"], ["--beem"], ["--bogus"],
                                                 ["--nope"], []]
    assert found[3].where == "constructed.md:10" and "--nbest 2" in found[3].line
    assert found[1].prefix == ("MALLOC_ARENA_MAX=2",) and found[0].prefix == ("python", "-m")

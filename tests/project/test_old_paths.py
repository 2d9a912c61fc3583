"""The old module paths: one-line re-exports of the new modules, each kept only because a documented command or
import still uses it (the model cards' and runs' recorded `python -m transformer.train`, the notebook's
`from transformer.translate import Translator`). Each gives the new module's very objects, its `python -m` runs,
and a document still names it; an old path nothing documents any more is deleted, not kept."""

from __future__ import annotations

import ast
import importlib
import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLD_PATHS = {  # old module -> the module it re-exports
    "transformer.train": "transformer.training.cli",
    "transformer.translate": "transformer.decoding.translate",
    "transformer.evaluate": "transformer.decoding.evaluate",
}
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("checkpoints/*/*.md")),
             ROOT / "notebooks" / "quickstart.ipynb"]


def test_every_old_path_in_the_package_is_listed_here():
    found = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "transformer").rglob("*.py")
             if (ast.get_docstring(ast.parse(p.read_text())) or "").startswith("The old path of")}
    assert found == set(OLD_PATHS)


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_an_old_path_gives_the_new_modules_objects(old):
    module, new = importlib.import_module(old), importlib.import_module(OLD_PATHS[old])
    assert module.__all__ and "main" in module.__all__
    for name in module.__all__:
        assert getattr(module, name) is getattr(new, name), name


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_an_old_paths_python_m_help_runs(old, monkeypatch, capsys):
    """`python -m OLD --help` as the shell runs it (`__main__`), in this process: exit 0 and the new parser's help."""
    monkeypatch.setattr(sys, "argv", [old, "--help"])
    monkeypatch.delitem(sys.modules, old, raising=False)  # as a fresh interpreter has it: not imported yet
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module(old, run_name="__main__")
    assert exit_.value.code == 0
    assert re.search(r"^usage: ", capsys.readouterr().out, re.M)


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_an_old_path_is_still_documented(old):
    pattern = re.compile(rf"(-m {re.escape(old)}|from {re.escape(old)} import)\b")
    assert any(pattern.search(doc.read_text(encoding="utf-8")) for doc in DOCUMENTS), f"nothing documents {old}"

"""The package's imports run one way, each on-disk format has one owner, and no module outgrows a sitting.

Imports are read with `ast` (nothing is imported), so the check sees every import, lazy ones inside
functions too. Layers, lowest first: a module may import its own layer or a lower one, never a higher one.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "transformer"

LAYERS = [  # (layer name, module prefixes)
    ("helpers", ("transformer.files", "transformer.progress", "transformer.memory", "transformer.runs",
                 "transformer.devices", "transformer.arguments")),
    ("data", ("transformer.data",)),
    ("model", ("transformer.model",)),
    ("decoding", ("transformer.decoding",)),
    ("explain", ("transformer.explain",)),
    ("training", ("transformer.training",)),
    # the installed commands and the old module paths (one-line re-exports) sit above everything
    ("entry points", ("transformer.cli", "transformer.translate", "transformer.train", "transformer.evaluate",
                      "transformer.corpora")),
]
# Inside data the order matters too: the loaders read words, the spec reads two loaders, load reads them all.
DATA_ORDER = ["transformer.data.words", "transformer.data.tokenizer", "transformer.data.corpora",
              "transformer.data.spec", "transformer.data.load"]
TRAINING_ORDER = ["transformer.training.cores", "transformer.training.recipe",
                  "transformer.training.run", "transformer.training.setup",
                  "transformer.training.loop", "transformer.training.cli"]
OWNERS = {  # a file name of an on-disk format -> the one module that spells it
    "config.json": "transformer/model/checkpoint.py",
    "model.safetensors": "transformer/model/checkpoint.py",
    "metadata.json": "transformer/model/checkpoint.py",
    "checksums.json": "transformer/model/checkpoint.py",
    "run.json": "transformer/runs.py",
    "metrics.jsonl": "transformer/runs.py",
    "status.json": "transformer/runs.py",
    "launch.json": "transformer/runs.py",
    "process.log": "transformer/runs.py",
    "trainer_state.json": "transformer/training/recipe.py",
    "optimizer.safetensors": "transformer/training/recipe.py",
    "manifest.json": "transformer/data/corpora/debian.py",
    "pairs.tsv": "transformer/data/corpora/debian.py",
}
MAX_LINES = 400
DATA_TABLES = {"transformer/data/corpora/teaching_lexicon.py", "transformer/data/corpora/teaching_lexicon_more.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The package modules `name` imports (`from a import b` names module a.b when it is one)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imports(name) for name in MODULES}


def rank(name: str, order: list[str]) -> int | None:
    for index, prefix in enumerate(order):
        if name == prefix or name.startswith(prefix + "."):
            return index
    return None


def layer(name: str) -> int:
    if name == "transformer":
        return len(LAYERS) - 1  # the package's own __init__ re-exports the model for `from transformer import`
    index = rank(name, [p for _, prefixes in LAYERS for p in prefixes])
    assert index is not None, f"{name} belongs to no layer: add it to LAYERS"
    flat = [i for i, (_, prefixes) in enumerate(LAYERS) for _ in prefixes]
    return flat[index]


def test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower_layers():
    upward = [f"{a} ({LAYERS[layer(a)][0]}) imports {b} ({LAYERS[layer(b)][0]})"
              for a, targets in GRAPH.items() for b in targets if layer(b) > layer(a)]
    assert not upward, "imports that run upward:\n" + "\n".join(sorted(upward))


@pytest.mark.parametrize("order", [DATA_ORDER, TRAINING_ORDER], ids=["data", "training"])
def test_inside_a_layer_the_lower_modules_never_import_the_higher(order):
    upward = [f"{a} imports {b}" for a, targets in GRAPH.items() for b in targets
              if rank(a, order) is not None and rank(b, order) is not None and rank(b, order) > rank(a, order)]
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circle():
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for target in sorted(GRAPH[node]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target] if target in path else path + [node, target]
            if target not in state and (circle := visit(target, path + [target])):
                return circle
        state[node] = 2
        return None

    for start in sorted(GRAPH):
        if start not in state and (circle := visit(start, [start])):
            pytest.fail("import circle: " + " -> ".join(circle))


def test_the_check_sees_a_circle_and_an_upward_import():
    """The graph reader on a constructed case: a real import, aliased and from-imports all count."""
    graph = {"transformer.model.layers": imports("transformer.model.layers"),
             "transformer.training.loop": imports("transformer.training.loop")}
    assert "transformer.model.config" in graph["transformer.model.layers"]
    assert "transformer.training.distributed" in graph["transformer.training.loop"]  # `from pkg import module`
    assert layer("transformer.training.loop") > layer("transformer.model.layers") > layer("transformer.data.words")


def test_the_package_never_imports_the_app():
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not roots & {"streamlit", "ui", "pages"}, f"{name} imports the app: {roots & {'streamlit', 'ui'}}"


def test_ui_modules_never_import_pages():
    for path in (ROOT / "ui").rglob("*.py"):
        assert not re.search(r"^\s*(from|import) pages\b", path.read_text(), re.M), path


@pytest.mark.parametrize("file_name", sorted(OWNERS))
def test_each_on_disk_file_name_is_spelled_by_its_one_owner(file_name):
    spelled = sorted(str(p.relative_to(ROOT)) for folder in ("transformer", "ui", "pages") for p in
                     (ROOT / folder).rglob("*.py") if f'"{file_name}"' in p.read_text() or f"'{file_name}'" in
                     p.read_text())
    assert spelled == [OWNERS[file_name]]


def test_no_module_over_400_lines_but_data_tables():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES and str(p.relative_to(ROOT)) not in DATA_TABLES}
    assert not long, long


def test_old_entry_points_still_work():
    from transformer.decoding import translate
    from transformer.train import main
    from transformer.training import cli
    from transformer.translate import Translator

    assert Translator is translate.Translator and main is cli.main

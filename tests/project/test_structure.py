"""The package's imports run one way, each on-disk format has one owner, and no module outgrows a sitting.

Imports are read with `ast` (nothing is imported), so the check sees every import, lazy ones inside
functions too. Layers, lowest first: a module may import its own layer or a lower one, never a higher one.
The app's `ui/` is grouped by page (docs/layout.md): a page imports its own folder and `ui/shared/` only, a page
folder imports itself and `ui/shared/`, `ui/shared/` imports no page folder, and no import circle runs through ui.
"""

import ast
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "transformer"

LAYERS = [  # (layer name, module prefixes)
    ("helpers", ("transformer.files", "transformer.progress", "transformer.memory", "transformer.runs",
                 "transformer.devices", "transformer.arguments", "transformer.labels", "transformer.bidi")),
    ("charts", ("transformer.charts",)),  # Altair builders over numbers and labels; the views read their theme
    ("data", ("transformer.data",)),
    ("model", ("transformer.model",)),
    ("decoding", ("transformer.decoding",)),
    ("explain", ("transformer.explain",)),
    ("training", ("transformer.training",)),
    # the installed commands sit above
    ("entry points", ("transformer.cli",)),
]
# Inside data the order matters too: the loaders read words, the spec reads two loaders, load reads them all.
DATA_ORDER = ["transformer.data.words", "transformer.data.tokenizer", "transformer.data.corpora",
              "transformer.data.spec", "transformer.data.load"]
TEACHING_ORDER = [f"transformer.data.corpora.teaching.{name}" for name in (  # as its __init__ lists them
    "morphology", "lexicon_generated", "lexicon", "frames", "french", "realizer", "syntax", "parser_phrases", "parser",
    "sampler_core", "sampler_constructions", "corpus", "constructions", "suggest")]
TRAINING_ORDER = ["transformer.training.cores", "transformer.training.recipe",
                  "transformer.training.run", "transformer.training.setup",
                  "transformer.training.loop", "transformer.training.cli"]
OWNERS = {  # a file name of an on-disk format -> the one module that spells it
    "config.json": "transformer/model/checkpoint_files.py",
    "model.safetensors": "transformer/model/checkpoint_files.py",
    "metadata.json": "transformer/model/checkpoint_files.py",
    "checksums.json": "transformer/model/checkpoint_files.py",
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
DATA_TABLES = {"transformer/data/corpora/teaching/lexicon.py", "transformer/data/corpora/teaching/lexicon_generated.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str, modules: Mapping[str, Path] = MODULES) -> set[str]:
    """The modules of `modules` that `name` imports (`from a import b` names module a.b when it is one)."""
    path = modules[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return read_imports(path.read_text(), package, modules) - {name}


def read_imports(source: str, package: str, modules: Mapping[str, Path]) -> set[str]:
    """The modules of `modules` that `source` imports, relative imports read from inside `package`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target:
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


@pytest.mark.parametrize("order", [DATA_ORDER, TEACHING_ORDER, TRAINING_ORDER], ids=["data", "teaching", "training"])
def test_inside_a_layer_the_lower_modules_never_import_the_higher(order):
    upward = [f"{a} imports {b}" for a, targets in GRAPH.items() for b in targets
              if rank(a, order) is not None and rank(b, order) is not None and rank(b, order) > rank(a, order)]
    assert not upward, "\n".join(sorted(upward))


def find_circle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (module -> the modules it imports), as a path back to its start, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target] if target in path else path + [node, target]
            if target not in state and (circle := visit(target, path + [target])):
                return circle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (circle := visit(start, [start])):
            return circle
    return None


def test_no_import_circle():
    circle = find_circle(GRAPH)
    assert circle is None, "import circle: " + " -> ".join(circle)


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


# ---------------------------------------------------------------------------------------------- the app's ui/
UI_MODULES = {module_name(p): p for p in (ROOT / "ui").rglob("*.py")}
SHARED = "shared"
PAGE_FOLDERS = {  # a page (or the home page) -> its own folder of ui/; the home page has none
    "app.py": None,
    "pages/1_Translate.py": "translate",
    "pages/2_Step_by_step.py": "step",
    "pages/3_Train.py": "train",
    "pages/4_Learn.py": "learn",
    "pages/5_Teaching_guide.py": "teaching",
    "pages/6_Explain_heads.py": "explain",
    "pages/7_Dataset.py": "dataset",
}


def ui_folder(module: str) -> str | None:
    """The folder of ui/ a module lives in ("shared", "explain", ...), None for ui's own __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def cross_folder_imports(source: str, package: str, own: str | None) -> list[str]:
    """The ui modules `source` imports that it may not: a page, or a module inside ui/`own`/, imports its own
    folder and shared/ only; shared/ (own == "shared") imports shared/ only."""
    allowed = {SHARED, own}
    return sorted(m for m in read_imports(source, package, UI_MODULES)
                  if m.split(".")[0] == "ui" and ui_folder(m) not in allowed)


def test_every_ui_module_lives_in_its_pages_folder_or_the_shared_one():
    folders = {p.name for p in (ROOT / "ui").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders == {SHARED} | {f for f in PAGE_FOLDERS.values() if f}
    loose = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ui").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside a page folder or shared/: {loose}"
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py")} | {"app.py"}
    assert pages == set(PAGE_FOLDERS), "a new page needs its folder in PAGE_FOLDERS (and docs/layout.md)"


@pytest.mark.parametrize("page", sorted(PAGE_FOLDERS))
def test_a_page_imports_only_its_own_folder_and_shared(page):
    path = ROOT / page
    wrong = cross_folder_imports(path.read_text(), "pages", PAGE_FOLDERS[page])
    assert not wrong, f"{page} imports another page's folder: {wrong}"


@pytest.mark.parametrize("module", sorted(m for m in UI_MODULES if ui_folder(m)))
def test_a_ui_folder_imports_only_itself_and_shared(module):
    path = UI_MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    wrong = cross_folder_imports(path.read_text(), package, ui_folder(module))
    assert not wrong, f"{module} ({ui_folder(module)}/) imports {wrong}"


def test_no_import_circle_in_ui():
    graph = {name: imports(name, UI_MODULES) for name in UI_MODULES}
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle)


@pytest.mark.parametrize(("source", "package", "own", "wrong"), [
    # a page reaching into another page's folder, in every spelling of the import
    ("from ui.explain.one_sentence import translated", "pages", "translate", ["ui.explain.one_sentence"]),
    ("from ui.explain import head_maps", "pages", "learn", ["ui.explain.head_maps"]),
    ("from ui import train", "pages", "step", ["ui.train"]),
    ("def main():\n    import ui.step.hypotheses", "pages", None, ["ui.step.hypotheses"]),
    # a page folder reaching sideways, also by a relative import; shared reaching up into a page
    ("from ..learn.attention_steps import encoder_attention_steps", "ui.translate", "translate",
     ["ui.learn.attention_steps"]),
    ("from ui.translate.probability_table import rows", "ui.shared", SHARED, ["ui.translate.probability_table"]),
    # what the rule allows
    ("from ui.shared.state.page_state import link\nfrom ui.explain import attribution", "pages", "explain", []),
    ("from . import head_maps\nfrom ..shared import text", "ui.explain", "explain", []),
    ("import numpy\nfrom transformer.decoding.translate import Translation", "ui.shared", SHARED, []),
])
def test_the_ui_rule_sees_a_cross_page_import(source, package, own, wrong):
    """The rule on constructed cases: each import that crosses into another page's folder is named."""
    assert cross_folder_imports(source, package, own) == wrong


def test_the_ui_circle_check_sees_a_circle():
    graph = {"ui.shared.a": {"ui.shared.b"}, "ui.shared.b": {"ui.shared.c"}, "ui.shared.c": {"ui.shared.a"},
             "ui.step.d": {"ui.shared.a"}}
    assert find_circle(graph) == ["ui.shared.a", "ui.shared.b", "ui.shared.c", "ui.shared.a"]
    assert find_circle({"ui.step.d": {"ui.shared.a"}, "ui.shared.a": set()}) is None


@pytest.mark.parametrize("file_name", sorted(OWNERS))
def test_each_on_disk_file_name_is_spelled_by_its_one_owner(file_name):
    spelled = sorted(str(p.relative_to(ROOT)) for folder in ("transformer", "ui", "pages") for p in
                     (ROOT / folder).rglob("*.py") if f'"{file_name}"' in p.read_text() or f"'{file_name}'" in
                     p.read_text())
    assert spelled == [OWNERS[file_name]]


def test_no_module_over_400_lines_but_data_tables():
    long = {str(p.relative_to(ROOT)): n for folder in (PACKAGE, ROOT / "ui") for p in folder.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES and str(p.relative_to(ROOT)) not in DATA_TABLES}
    assert not long, long


def test_the_teaching_package_lists_each_of_its_modules_once_in_import_order():
    """Its `__init__` docstring is the map a newcomer reads: every module, in TEACHING_ORDER, which the test above
    holds to the imports."""
    package = PACKAGE / "data" / "corpora" / "teaching"
    listed = re.findall(r"^    ([a-z_]+) {2,}\S", ast.get_docstring(ast.parse((package / "__init__.py").read_text())),
                        re.M)
    assert [f"transformer.data.corpora.teaching.{name}" for name in listed] == TEACHING_ORDER
    assert sorted(listed) == sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")


def magic_lines(source: str) -> list[int]:
    """Lines of the statements Streamlit's magic would show with st.write in a page script: a bare value, name or
    expression on its own line; neither a call nor a docstring."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for i, child in enumerate(body if isinstance(body, list) else []):
            if not isinstance(child, ast.Expr) or isinstance(child.value, (ast.Call, ast.Await, ast.Yield,
                                                                           ast.YieldFrom)):
                continue
            if i == 0 and isinstance(child.value, ast.Constant) and isinstance(child.value.value, str):
                continue  # a docstring
            lines.append(child.lineno)
    return sorted(lines)


@pytest.mark.parametrize("page", sorted(PAGE_FOLDERS))
def test_no_page_relies_on_magic_which_the_app_turns_off(page):
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["magicEnabled"] is False  # it compiled each page again for every new session
    assert not magic_lines((ROOT / page).read_text()), f"{page} shows a value through magic"


def test_the_magic_check_sees_a_bare_value_and_skips_calls_and_docstrings():
    source = '"""doc"""\nimport streamlit as st\nx = 1\nx\nst.write(x)\n\n\ndef f():\n    "doc"\n    "shown"\n'
    assert magic_lines(source) == [4, 10]

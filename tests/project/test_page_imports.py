"""Pages that need no model import no torch: the first request after a start of the Train page,
the Teacher's guide or the home page's text does not wait for torch's import (8 s of 14 s under load).

Each check runs a page's own top-level imports in a fresh interpreter, as Streamlit's first run of the page does.
The pages that must not load torch share one interpreter, which runs each page's imports in turn and says after each
whether torch is loaded yet (their common imports are paid once): while it is not, no page so far loaded it; the
first page after which it is loaded is the one that did, and the pages after it go unchecked, which fails them too.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NO_MODEL_PAGES = ["app.py", "pages/3_Train.py", "pages/5_Teaching_guide.py"]


def loads_torch(statements: list[str]) -> bool:
    code = "\n".join([*statements, "import sys", "print('torch' in sys.modules)"])
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1] == "True"


def page_imports(page: str) -> list[str]:
    tree = ast.parse((ROOT / page).read_text(encoding="utf-8"))
    return [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]


PACKAGE_NAMES = ["import transformer", "import transformer.runs", "import transformer.model.checkpoint_files",
                 "import transformer.training.presets"]


@pytest.fixture(scope="module")
def torch_after() -> dict[str, bool]:
    """{page: torch loaded once its imports (and those of the pages before it) ran}, the package's names first."""
    groups = {"the package's names": PACKAGE_NAMES, **{page: page_imports(page) for page in NO_MODEL_PAGES}}
    code = ["import sys"]
    for name, statements in groups.items():
        code += [*statements, f"print({name!r}, 'torch' in sys.modules, sep='\t')"]
    out = subprocess.run([sys.executable, "-c", "\n".join(code)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return {name: loaded == "True" for name, loaded in (line.split("\t") for line in out.stdout.splitlines())}


def assert_no_torch(torch_after: dict[str, bool], name: str) -> None:
    names = list(torch_after)
    earlier = [n for n in names[: names.index(name)] if torch_after[n]]
    assert not earlier, f"torch came with the imports of {earlier[0]}, so those of {name} went unchecked"
    assert not torch_after[name], f"the imports of {name} load torch"


@pytest.mark.parametrize("page", NO_MODEL_PAGES)
def test_a_page_without_a_model_imports_no_torch(page, torch_after):
    assert any("ui.shared.page" in s for s in page_imports(page))  # the page setup every page imports
    assert_no_torch(torch_after, page)


def test_the_check_sees_torch_where_a_page_needs_it():
    assert loads_torch(page_imports("pages/1_Translate.py"))


def test_the_packages_names_still_import_from_the_top(torch_after):
    assert_no_torch(torch_after, "the package's names")
    import transformer
    from transformer import AttentionMaps, ModelConfig, Transformer
    from transformer.model.config import ModelConfig as config_home
    from transformer.model.layers import AttentionMaps as maps_home
    from transformer.model.layers import Transformer as model_home

    assert (Transformer, ModelConfig, AttentionMaps) == (model_home, config_home, maps_home)
    assert set(transformer.__all__) <= set(dir(transformer))
    with pytest.raises(AttributeError, match="no attribute 'Transfomer'"):
        transformer.Transfomer  # noqa: B018


TEACHING_METADATA = ROOT / "checkpoints" / "en-fr-teaching" / "metadata.json"


def test_the_stored_teaching_examples_are_the_corpus_first_test_sources():
    """If this fails, the grammar's test split changed: rewrite ui/shared/assets/teaching_examples.json as
    {stored_key(spec): [its first EXAMPLES test sources]} for the shipped teaching model's corpus."""
    import json

    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec
    from ui.shared.models.example_sentences import EXAMPLES
    from ui.shared.models.offline_examples import STORED_FILE, stored_examples, stored_key

    spec = CorpusSpec.from_dict(json.loads(TEACHING_METADATA.read_text())["corpus"])
    assert list(json.loads(STORED_FILE.read_text(encoding="utf-8"))) == [stored_key(spec)]
    assert stored_examples(spec) == [src for src, _ in load_corpus(spec.for_evaluation()).test][:EXAMPLES]
    assert stored_examples(spec.for_evaluation()) == stored_examples(spec)  # the train size is not in the key
    assert stored_examples(CorpusSpec.from_dict({**spec.to_dict(), "seed": 1})) is None


def test_the_example_box_of_the_teaching_model_builds_no_corpus(monkeypatch):
    import json

    import transformer.data.load
    from transformer.data.spec import CorpusSpec
    from ui.shared.models import example_sentences as examples_module
    from ui.shared.models.offline_examples import stored_examples

    def no_build(spec):
        raise AssertionError(f"built {spec.kind}")

    monkeypatch.setattr(transformer.data.load, "load_corpus", no_build)
    metadata = json.loads(TEACHING_METADATA.read_text())
    examples_module._examples.clear()
    examples = examples_module.example_sentences(metadata)
    assert len(examples) == examples_module.EXAMPLES
    assert examples == stored_examples(CorpusSpec.from_dict(metadata["corpus"]))

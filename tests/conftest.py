import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer import ModelConfig, Transformer
from transformer.data.tokenizer import SpecialIds
from transformer.decoding import translate

# The helpers that hold assertions of their own (moved out of test modules): pytest shows their values too.
pytest.register_assert_rewrite("tests.app_fixtures", "tests.chart_reading", "tests.browser.browsing")

# our vocabularies' special ids, as every trained `Tokenizer.specials` gives them (tests/data/test_tokenizer.py checks)
SPECIALS = SpecialIds(pad=0, start=1, eos=2, unk=3, never=(0, 1))


def tiny_config(**overrides) -> ModelConfig:
    base = dict(
        src_vocab_size=23, tgt_vocab_size=19, d_model=32, n_heads=4, n_encoder_layers=2,
        n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64,
    )
    return ModelConfig(**{**base, **overrides})


@pytest.fixture
def tiny_model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(tiny_config()).eval()


def random_batch(config: ModelConfig, B=3, S=7, T=6, seed=0):
    """Ids in [4, V) with right padding of different lengths (ids 0-3 are specials)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, config.src_vocab_size, (B, S), generator=g)
    tgt = torch.randint(4, config.tgt_vocab_size, (B, T), generator=g)
    for b in range(1, B):
        src[b, S - b :] = config.pad_id
        tgt[b, T - b :] = config.pad_id
    tgt[:, 0] = 1  # <s>
    return src, tgt


# The files that take longest on 2 cores (-n 2 runs in pyproject's addopts), longest first, by their path under tests/.
# xdist's --dist loadfile hands out whole files in collection order, so these start first and the end of the run is
# many short files that even out the two workers, not one long file that keeps one worker busy while the other idles
# (a file of one slow test, such as browser/test_imported_model.py, used to come last: xdist's own order puts files
# with fewer tests later). A name missing here, or one that no longer exists, only costs time.
LONGEST_FIRST = ["browser/test_class_mode.py", "browser/test_explain.py", "browser/test_step.py",
                 "bad_input/test_fuzz.py", "data/test_teaching_corpus.py", "browser/test_translate.py",
                 "browser/test_tour.py", "browser/test_imported_model.py", "browser/test_learn.py",
                 "training/test_faults.py", "training/test_training.py", "app/test_teaching_model.py",
                 "project/test_docs_commands.py", "training/test_cores.py"]
TESTS = Path(__file__).resolve().parent


def _under_tests(item) -> str:
    path = item.path.resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else str(path)


def pytest_collection_modifyitems(config, items):
    """LONGEST_FIRST's files first, then the others by their number of tests, most first (what xdist does with its
    --loadscope-reorder, which pyproject turns off so that this order holds). A stable sort on the file keeps each
    file's tests together and in their order."""
    per_file: dict[str, int] = {}
    for item in items:
        per_file[_under_tests(item)] = per_file.get(_under_tests(item), 0) + 1
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(_under_tests(item), len(rank)), -per_file[_under_tests(item)],
                                 str(item.path)))


@pytest.fixture(autouse=True, scope="session")
def single_thread():
    """Tiny models run faster on one thread than with two threads fighting over two shared cores."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(autouse=True, scope="session")
def scan_component_packages_once():
    """Every new AppTest scans each installed package for Streamlit components before its first run (0.6-0.9 s of
    reading package metadata here); the packages do not change while the suite runs, so one scan serves them all."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    patch = pytest.MonkeyPatch()
    patch.setattr(manifest_scanner, "scan_component_manifests",
                  functools.cache(manifest_scanner.scan_component_manifests))
    yield
    patch.undo()


@pytest.fixture
def translate_cli(capsys, monkeypatch):
    """`python -m transformer.decoding.translate`'s main in this process, run as its own process runs it: stdin as
    bytes (the command reads sys.stdin.buffer), its log lines on stderr in basicConfig's format; a CompletedProcess
    back, as tests/decoding/test_translate.py's run_cli gives. It saves the torch import a process of its own pays
    (about 2 s of CPU) where the process itself is not what a test checks."""
    def run(*args: str, stdin: str | bytes = "") -> subprocess.CompletedProcess:
        data = stdin if isinstance(stdin, bytes) else stdin.encode("utf-8")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        capsys.readouterr()
        handler = logging.StreamHandler(sys.stderr)  # sys.stderr is capsys's now
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        logging.getLogger().addHandler(handler)
        try:
            code = translate.main(list(args))
        finally:
            logging.getLogger().removeHandler(handler)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run

"""The app's tests' shared pieces: a tiny random-weight checkpoint and a tiny TSV corpus, the AppTest of the app
over tiny checkpoints (`checkpoints`, `at`) or the shipped ones (`shipped`), and pages opened as a link opens them."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from transformer.data.tokenizer import train_tokenizer
from transformer.model.checkpoint import save_checkpoint
from transformer.model.config import ModelConfig
from transformer.model.layers import Transformer
from ui.shared.training import jobs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
SHIPPED = ROOT / "checkpoints"  # the models the repository ships

PAIRS = [
    ("the cat sleeps .", "le chat dort ."), ("the dog eats .", "le chien mange ."),
    ("a man walks .", "un homme marche ."), ("the woman reads a book .", "la femme lit un livre ."),
    ("i see the house .", "je vois la maison ."), ("we like the sea .", "nous aimons la mer ."),
    ("the child plays in the garden .", "l'enfant joue dans le jardin ."),
    ("my father works today .", "mon père travaille aujourd'hui ."), ("the sun is hot .", "le soleil est chaud ."),
    ("she drinks water .", "elle boit de l'eau ."), ("he writes a letter .", "il écrit une lettre ."),
    ("the bird sings .", "l'oiseau chante ."), ("they go to school .", "ils vont à l'école ."),
    ("the city is big .", "la ville est grande ."), ("i love my mother .", "j'aime ma mère ."),
    ("the car is red .", "la voiture est rouge ."), ("you speak french .", "vous parlez français ."),
    ("the tree is tall .", "l'arbre est grand ."), ("the night is cold .", "la nuit est froide ."),
    ("the king speaks to the people .", "le roi parle au peuple ."), ("god is good .", "dieu est bon ."),
    ("the light shines .", "la lumière brille ."), ("the earth is round .", "la terre est ronde ."),
    ("the river flows .", "la rivière coule ."), ("the bread is fresh .", "le pain est frais ."),
    ("he opens the door .", "il ouvre la porte ."), ("she closes the window .", "elle ferme la fenêtre ."),
    ("the students learn .", "les étudiants apprennent ."), ("the teacher helps .", "le professeur aide ."),
    ("the moon is bright .", "la lune est brillante ."),
]

# The same sentences' Arabic side (Modern Standard Arabic, undotted like the Bible's Van Dyke text).
ARABIC = ["القط ينام .", "الكلب ياكل .", "رجل يمشي .", "المراة تقرا كتابا .", "انا ارى البيت .", "نحن نحب البحر .",
          "الطفل يلعب في الحديقة .", "ابي يعمل اليوم .", "الشمس حارة .", "هي تشرب الماء ."]


def make_checkpoint(path: Path, seed: int = 0, src: str = "en", tgt: str = "fr") -> Path:
    """Random weights (UI tests need shapes, not quality) with a real word-level tokenizer; tgt="ar" gives an
    English -> Arabic vocabulary."""
    pairs = PAIRS if tgt == "fr" else [(s, t) for (s, _), t in zip(PAIRS, ARABIC)]
    tokenizer = train_tokenizer(pairs, kind="wordlevel", vocab_size=500, shared=False, min_frequency=1)
    torch.manual_seed(seed)
    config = ModelConfig(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size, d_model=32,
                         n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=128)
    model = Transformer(config).eval()
    metadata = {"description": f"tiny test corpus (en -> {tgt})", "step": 0, "elapsed": 0.0, "best_dev_bleu": None,
                "corpus": {"kind": "tsv", "src": src, "tgt": tgt},
                "n_params": sum(p.numel() for p in model.parameters()), "test_bleu": 1.5}
    return save_checkpoint(path, model, tokenizer=tokenizer, metadata=metadata)


def write_tsv(path: Path, copies: int = 3) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS * copies), encoding="utf-8")
    return path


def markdown_table(markdown: str) -> dict[str, str]:
    """A two-column Markdown table (`ui.shared.text.plain.table`) back as {first cell: second cell}, as shown."""
    rows = {}
    for line in markdown.splitlines()[2:]:  # after the header and the |---| line
        name, value = line.strip()[2:-2].split(" | ")  # a pipe inside a cell is escaped, so never " | "
        rows[_shown(name)] = _shown(value)
    return rows


def _shown(cell: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", cell).replace("\u2060", "")


def home_facts(at) -> dict[str, str]:
    """The Home page's table of the loaded model's facts."""
    (facts,) = [markdown_table(m.value) for m in at.markdown if m.value.startswith("|  | value |")]
    return facts


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """"tiny" (English -> French) and "tiny-ar" (Arabic -> French)."""
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    make_checkpoint(root / "tiny-ar", seed=1, src="ar")  # listed second: "tiny" stays the default
    return root


@pytest.fixture
def at(checkpoints, tmp_path, monkeypatch):
    """The app over `checkpoints`, with a runs folder of the test's own; training runs it started are killed after."""
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    app = AppTest.from_file(APP, default_timeout=60)
    yield app
    for proc in list(jobs._PROCESSES.values()):  # training runs escape the test's process group
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def page(at, path):
    """Home first, then the page at `path` (as a click in the sidebar opens it)."""
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def selectbox(at, label):
    (box,) = [b for b in at.selectbox if b.label == label]
    return box


def app(monkeypatch, tmp_path, checkpoints) -> AppTest:
    """The app over the checkpoints folder `checkpoints` (with `SHIPPED`, the shipped models), not yet run."""
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def opened(at: AppTest, page: str, **params) -> AppTest:
    """`page` opened as a link with `params` opens it, checked to raise nothing."""
    at.query_params.update(params)  # a link opens the page
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def shipped(monkeypatch, tmp_path) -> AppTest:
    """The app over the shipped models; the test is skipped where they are missing."""
    if not (SHIPPED / "en-fr-teaching").is_dir():
        pytest.skip("needs the shipped models")
    return app(monkeypatch, tmp_path, SHIPPED)


@pytest.fixture(scope="module")
def tiny_en_ar(tmp_path_factory):
    """"tiny" (English -> French) and "tiny-ar" (English -> Arabic)."""
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    make_checkpoint(root / "tiny-ar", seed=1, tgt="ar")
    return root


@pytest.fixture(scope="module")
def tiny_and_other(tmp_path_factory):
    """"tiny" and "other": the same English -> French vocabulary, other weights."""
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    make_checkpoint(root / "other", seed=1)
    return root

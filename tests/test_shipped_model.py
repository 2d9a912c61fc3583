"""The shipped English->French checkpoint: present, the default, small enough, and still translating.

The BLEU floor sits far below the figure in the model card, so it only catches a broken, swapped or
badly converted artefact, not noise.
"""

from pathlib import Path

import pytest

from transformer.checkpoint import load_checkpoint
from transformer.data import CorpusSpec, load_corpus
from transformer.evaluate import corpus_scores
from transformer.translate import Translator, find_checkpoint

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "en-fr-bible"
BLEU_FLOOR = 12.0  # on the first 40 test verses, greedy


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator()


def test_shipped_checkpoint_is_the_default_and_fits_the_size_limit():
    assert find_checkpoint() == SHIPPED
    size = sum(f.stat().st_size for f in SHIPPED.iterdir())
    assert size <= 25 * 1024 * 1024
    checkpoint = load_checkpoint(SHIPPED)
    assert checkpoint.metadata["corpus"]["kind"] == "bible" and checkpoint.tokenizer is not None
    assert all(p.dtype.is_floating_point and p.dtype.itemsize == 4 for p in checkpoint.model.parameters())
    assert (SHIPPED / "MODEL_CARD.md").is_file()


def test_shipped_model_translates_test_verses_above_the_floor(translator):
    pairs = load_corpus(CorpusSpec(kind="bible")).test[:40]
    hypotheses = [t.text for t in translator.translate_batch([s for s, _ in pairs])]
    scores = corpus_scores(hypotheses, [t for _, t in pairs])
    assert scores["bleu"] >= BLEU_FLOOR, (scores, hypotheses[:3])


def test_shipped_model_knows_the_first_verse(translator):
    text = translator.translate("In the beginning God created the heaven and the earth.").text
    assert "Dieu" in text and "commencement" in text

"""What the server keeps so that a page opened again computes nothing twice: the last few values by key
(`ui.shared.models.recent`) and the last translations of each model (`translation_gate.RECENT`): each gives back what
computing it again would, and computes only what it does not hold. (Charts are drawn by Vega in the browser: the
server keeps no drawings.)"""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from tests.app_fixtures import PAIRS, make_checkpoint
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from ui.shared.models import translation_gate
from ui.shared.models.recent import Recent


def test_recent_drops_the_least_recently_used_first():
    recent: Recent[int] = Recent(2)
    recent.put("a", 1)
    recent.put("b", 2)
    assert recent.get("a") == 1  # read: "b" is now the oldest
    recent.put("c", 3)
    assert (recent.get("a"), recent.get("b"), recent.get("c"), len(recent)) == (1, None, 3, 2)
    recent.put("a", 10)  # written again: the newest, with its new value
    recent.put("d", 4)
    assert (recent.get("a"), recent.get("c"), recent.get("d")) == (10, None, 4)
    recent.clear()
    assert len(recent) == 0 and recent.get("a") is None
    with pytest.raises(ValueError, match="at least one value"):
        Recent(0)


def test_recent_holds_its_size_under_threads():
    recent: Recent[int] = Recent(16)

    def fill(start: int) -> None:
        for i in range(start, start + 500):
            recent.put(i, i)
            recent.get(i - 3)

    threads = [threading.Thread(target=fill, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(recent) == 16 and all(recent.get(k) in (None, k) for k in range(4000))


@pytest.fixture(scope="module")
def translator(tmp_path_factory) -> Translator:
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    return Translator(root / "tiny")


def test_a_sentence_translated_again_is_the_kept_translation_and_is_not_decoded_again(translator, monkeypatch):
    translation_gate.RECENT.clear()
    decoded = []
    real = translator.translate
    monkeypatch.setattr(translator, "translate", lambda *a, **k: decoded.append(a) or real(*a, **k))
    text = PAIRS[0][0]
    first = translation_gate.translate(translator, text, SearchSettings())
    again = translation_gate.translate(translator, text, SearchSettings())
    assert again is first and len(decoded) == 1
    fresh = real(text, translation_gate.bounded(SearchSettings()), attention=True)
    assert (fresh.token_ids, fresh.score) == (first.token_ids, first.score)
    assert all(np.allclose(a, b) for a, b in zip(fresh.attention.cross, first.attention.cross))
    # another setting, another sentence: decoded; a sampled one is kept by its seed
    beam = translation_gate.translate(translator, text, SearchSettings(beam_size=3))
    translation_gate.translate(translator, PAIRS[1][0], SearchSettings())
    sampled = translation_gate.translate(translator, text, SearchSettings(do_sample=True, seed=3))
    assert translation_gate.translate(translator, text, SearchSettings(do_sample=True, seed=3)) is sampled
    translation_gate.translate(translator, text, SearchSettings(do_sample=True, seed=4))
    assert len(decoded) == 5 and beam is not first


def test_each_model_keeps_its_own_translations_and_drops_them_with_the_model(translator):
    translation_gate.RECENT.clear()
    other = Translator(translator.checkpoint)  # the same weights, another model object (a reloaded checkpoint)
    text = PAIRS[0][0]
    mine = translation_gate.translate(translator, text, SearchSettings())
    theirs = translation_gate.translate(other, text, SearchSettings())
    assert theirs is not mine and theirs.token_ids == mine.token_ids
    assert len(translation_gate.RECENT._by_model) == 2
    del other, theirs
    gc.collect()
    assert len(translation_gate.RECENT._by_model) == 1  # weak keys: nothing keeps a dropped model alive


"""The sidebar's language picker on a many-to-many model (a tiny NLLB-200 imported as `transformer-import` puts it),
in AppTest: the model's codes, the pair it was imported with, a right-to-left target, and pages translating with the
pair picked; nothing for a model of one language pair."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) writes the NLLB folder")

from streamlit.testing.v1 import AppTest  # noqa: E402

from tests import hf_fixtures  # noqa: E402
from tests.app_fixtures import APP  # noqa: E402
from transformer.model import hf  # noqa: E402
from ui.shared.models import language_choice  # noqa: E402
from ui.shared.models.catalog import checkpoint_stamp  # noqa: E402

NAME = "tiny-nllb"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    folder = hf_fixtures.write_folder("nllb", tmp_path_factory.mktemp("hf") / NAME, train_steps=0)
    hf.import_model(str(folder), root / NAME)
    return root


def test_the_picker_reads_the_codes_only_of_a_many_to_many_import(checkpoints):
    path = str(checkpoints / NAME)
    codes, src, tgt = language_choice.model_languages(path, checkpoint_stamp(path))
    assert len(codes) == 202 and (src, tgt) == ("eng_Latn", "fra_Latn") and "arb_Arab" in codes
    shipped = str(hf_fixtures.Path(__file__).resolve().parents[2] / "checkpoints" / "en-fr-bible")
    assert language_choice.model_languages(shipped, checkpoint_stamp(shipped)) == ([], None, None)


def test_every_page_translates_with_the_pair_picked_and_says_when_it_reads_right_to_left(checkpoints, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception
    boxes = {box.label: box for box in at.sidebar.selectbox}
    assert boxes["Source language"].value == "eng_Latn" and boxes["Target language"].value == "fra_Latn"
    boxes["Target language"].select("arb_Arab").run()
    assert not at.exception
    path = str(checkpoints / NAME)
    assert at.session_state[language_choice.KEY][path] == ("eng_Latn", "arb_Arab")
    assert any("reads right to left" in caption.value for caption in at.sidebar.caption)
    at.text_input(key="tr_text").input("The cat sat on the mat.").run()
    assert not at.exception
    from ui.shared.models.translation_gate import RECENT

    arabic = [t for t in list(RECENT._by_model) if getattr(t.tokenizer, "tgt_lang", None) == "arb_Arab"]
    assert arabic, "the page translated with the pair picked"
    kept = list(RECENT.of(arabic[0])._kept.values())
    assert kept and all(t.token_ids[0] == arabic[0].specials.forced[0] for t in kept)  # arb_Arab, forced
    at.switch_page("pages/2_Step_by_step.py").run()  # the pick holds on every page
    assert not at.exception
    assert {box.label: box.value for box in at.sidebar.selectbox}["Target language"] == "arb_Arab"

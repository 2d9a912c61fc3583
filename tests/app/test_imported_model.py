"""Every page on an imported Marian (opus-mt) model, in AppTest, and the attention-map pass they all draw from.

A small random MarianMTModel of opus-mt's layout (tests/marian_fixtures.py) is imported into checkpoints/ as
`transformer-import --out checkpoints/NAME` puts it. Its metadata.json records `languages`, the source model and
its licence, but no corpus: the picker names its languages, and the views that need a corpus say so. Random
weights repeat tokens: these tests check structure (pages, pieces, maps), not quality.
"""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) writes the Marian folder")

from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.app_fixtures import APP  # noqa: E402
from tests.marian_fixtures import write_marian_folder  # noqa: E402
from transformer.decoding.evaluate import evaluate_checkpoint  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.model import hf  # noqa: E402
from transformer.model.checkpoint import CheckpointError  # noqa: E402
from transformer.model.metadata import metadata_problem  # noqa: E402
from ui.explain import attribution  # noqa: E402
from ui.shared.models.catalog import describe, find_models, languages, no_corpus, source_language  # noqa: E402

NAME = "opus-mt-en-fr"
PAGES = ["pages/1_Translate.py", "pages/2_Step_by_step.py", "pages/3_Train.py", "pages/4_Learn.py",
         "pages/5_Teaching_guide.py", "pages/6_Explain_heads.py", "pages/7_Dataset.py"]
SENTENCE = "The cat sat on the mat."
TEXT_BOXES = {PAGES[0]: "tr_text", PAGES[1]: "step_text", PAGES[5]: "ex_text"}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    folder = write_marian_folder(tmp_path_factory.mktemp("hf") / NAME)
    hf.import_marian(str(folder), root / NAME)
    return root


@pytest.fixture
def at(checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def metadata_of(checkpoints) -> dict:
    return json.loads((checkpoints / NAME / "metadata.json").read_text())


def test_the_picker_names_an_imported_models_languages_without_a_corpus(checkpoints, monkeypatch):
    metadata = metadata_of(checkpoints)
    assert "corpus" not in metadata and metadata["languages"] == {"src": "en", "tgt": "fr"}
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    [choice] = find_models()
    assert choice.key == NAME and choice.languages == ("en", "fr") and not choice.problem
    assert choice.label == f"{NAME} · English → French"
    assert choice.summary.startswith("English → French: imported from ")
    assert source_language(metadata) == "English"
    facts = describe(Translator(checkpoints / NAME).model.config, metadata, None)
    assert facts["languages"] == "en → fr" and facts["imported from"].startswith(metadata["source_model"])
    assert "imported from" in no_corpus(metadata) and "head statistics" in no_corpus(metadata)


def test_evaluate_says_an_imported_model_has_no_corpus_to_score(checkpoints):
    with pytest.raises(CheckpointError, match="imported from .*transformer-translate"):
        evaluate_checkpoint(checkpoints / NAME)


def test_languages_fall_back_only_to_a_well_formed_pair():
    assert languages({"corpus": {"src": "en", "tgt": "de"}, "languages": {"src": "xx", "tgt": "yy"}}) == ("en", "de")
    assert languages({"languages": {"src": "en"}}) is None
    assert metadata_problem({"languages": "en-fr"}) == "languages should be an object, not str 'en-fr'"
    assert "languages.src should be a language code" in metadata_problem({"languages": {"src": "<b>", "tgt": "fr"}})


def test_every_page_opens_from_a_link(at):
    at.run()
    assert not at.exception
    assert "English to French" in " ".join(m.value for m in at.markdown)  # the Home page's first line
    for page in PAGES:
        at.query_params.update(model=NAME, text=SENTENCE)  # the link a page shares
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])
        assert at.query_params["model"] == NAME
        if page in TEXT_BOXES:
            assert at.text_input(key=TEXT_BOXES[page]).value == SENTENCE, page


def test_a_translation_with_every_map(at, checkpoints):
    at.run()
    at.switch_page(PAGES[0]).run()
    assert any("records no training corpus" in c.value for c in at.caption)  # no test sentences to pick
    at.text_input(key="tr_text").input(SENTENCE).run()
    assert not at.exception
    result = at.session_state["tr_result"]
    translator = Translator(checkpoints / NAME)
    assert result.source_ids == translator.prepare(SENTENCE).ids and result.source_ids[-1] == 0  # Marian's </s>
    assert result.token_ids == translator.translate(SENTENCE).token_ids
    maps = result.attention
    config = translator.model.config
    assert len(maps.enc_self) == config.n_encoder_layers and len(maps.cross) == config.n_decoder_layers
    assert maps.cross[0].shape == (config.n_heads, len(result.token_ids), len(result.source_ids))
    assert maps.target_input_pieces[0] == "<pad>"  # Marian's decoder starts with its pad


def test_step_by_step_next_feeds_marians_start(at):
    at.run()
    at.switch_page(PAGES[1]).run()
    at.text_input(key="step_text").input(SENTENCE).run()
    assert any("feed `<pad>`" in i.value for i in at.info)
    for step in (1, 2):
        at.button(key="step_next").click().run()
        assert not at.exception
        assert any(m.value.startswith(f"**Step {step}.**") for m in at.markdown)
    assert at.session_state["step_session"].n_steps == 2


@pytest.mark.parametrize("view", ["ablate", "cell", "whatif", "search", "compare", "report", *attribution.VIEWS])
def test_explain_heads_views_of_one_sentence(at, view):
    at.run()
    at.switch_page(PAGES[5]).run()
    at.radio(key="ex_view").set_value(view).run()
    at.text_input(key="ex_text").input(SENTENCE).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["ex_result"].token_ids


@pytest.mark.parametrize("view", ["stats", "importance"])
def test_views_that_need_a_corpus_say_so(at, view):
    at.run()
    at.switch_page(PAGES[5]).run()
    at.radio(key="ex_view").set_value(view).run()
    assert not at.exception
    assert any("records no training corpus" in i.value and "head statistics" in i.value for i in at.info)


def test_the_dataset_page_offers_what_needs_no_corpus(at):
    at.query_params.update(model=NAME, limit="10")
    at.run()
    at.switch_page(PAGES[6]).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="ds_split").options == ["the teaching corpus's test split",
                                                    "the teaching corpus's dev split",
                                                    "an uploaded TSV (source<TAB>reference)"]
    assert any("records no training corpus" in c.value and "Dataset page" in c.value for c in at.caption)
    assert not at.warning, [w.value for w in at.warning]


def test_the_maps_pass_skips_the_output_projection_and_keeps_every_map(checkpoints):
    translator = Translator(checkpoints / NAME)
    model = translator.model
    calls = []
    model.generator.register_forward_hook(lambda *_: calls.append(1))
    translation = translator.translate(SENTENCE)
    src = torch.tensor([translation.source_ids])  # (1, S)
    tgt = torch.tensor([[translator.specials.start] + translation.token_ids[:-1]])  # (1, T)
    with torch.inference_mode():
        calls.clear()
        before = model(src, tgt, return_attention=True).attention  # what attention_maps computed until now
        assert calls == [1]  # the hook sees the projection
        calls.clear()
        after = translator.attention_maps(translation.source_ids, translation.token_ids)
    assert calls == []
    for family in ("enc_self", "dec_self", "cross"):
        old, new = getattr(before, family), getattr(after, family)
        assert len(old) == len(new) == 2
        assert all(torch.equal(o[0], n) for o, n in zip(old, new)), family

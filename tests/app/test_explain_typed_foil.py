"""AppTest of a typed foil on the Explain page: the Attribution and Patching views take any target
word as the contrastive foil (its first piece), say what is wrong with a word they cannot use, keep the pick in the
link (`foil_word`) and restore it, and draw the same numbers as the package called with the foil's id."""


import pytest
from streamlit.testing.v1 import AppTest

from tests.app.test_explain import open_view, translator_of
from tests.app.test_explain_attribution import SENTENCE
from tests.app_fixtures import APP, make_checkpoint
from tests.chart_reading import charts, values
from tests.explain.test_attribution import tiny_translator
from transformer.decoding.search import SearchSettings
from transformer.explain.attribution import attribute
from transformer.explain.foil import foil_word
from transformer.explain.patching import activation_patching
from transformer.model.checkpoint import save_checkpoint
from ui.explain.attribution import report_sections, swapped
from ui.explain.html_report import sentence_report

PAGE = "pages/6_Explain_heads.py"
WORD = "femme"  # two pieces in the tiny BPE vocabulary (▁f emme): the foil is the first


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A random model over a BPE vocabulary that cuts some words into several pieces (the app fixtures' is
    word-level)."""
    root = tmp_path_factory.mktemp("checkpoints")
    translator = tiny_translator()
    save_checkpoint(root / "tiny", translator.model, tokenizer=translator.tokenizer,
                    metadata={"description": "tiny BPE test model (en -> fr)", "corpus": {"kind": "tsv", "src": "en",
                                                                                           "tgt": "fr"}})
    return root


@pytest.fixture
def at(checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=60)


def opened(params: dict) -> AppTest:
    """The Explain page opened from a link (a new session)."""
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update(params)
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


def warnings(app) -> list[str]:
    return [w.value.replace("\\", "") for w in app.warning]


def test_a_typed_foil_gives_the_attribution_of_the_foils_id_and_is_kept_in_the_link(at, checkpoints):
    open_view(at, "attribution", SENTENCE)
    at.selectbox(key=next(k for k in at.session_state if k.startswith("_ex_attr_pos_"))).set_value(1).run()
    at.text_input(key="ex_attr_foil_word").input(WORD).run()
    assert not at.exception, at.exception
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE)
    foil = foil_word(translator.tokenizer, WORD)
    assert foil.several and at.session_state["ex_attr_foil"] == foil.id
    expected = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 1,
                         foil=foil.id, target_gap=0.05)
    assert float(at.metric[1].value) == pytest.approx(expected.f, abs=1e-3)
    assert expected.f == pytest.approx(expected.log_prob - expected.foil_log_prob, abs=1e-5)
    (bars,) = charts(at)
    ig = bars.data("bar", 2 * list(expected.methods).index("integrated_gradients"))
    assert ig["value"].tolist() == pytest.approx(expected.methods["integrated_gradients"].source, abs=1e-5)
    token = translation.target_pieces[1]
    assert f"log p({token}) − log p({foil.piece})" in bars.title
    assert any(m.value.replace("\\", "").startswith(f"**Explained:** f = log p({token}) − log p({foil.piece}): ")
               for m in at.markdown)
    assert any(f"{len(foil.pieces)} pieces" in c.value and "the foil is its first" in c.value for c in at.caption)
    shared = dict(at.query_params)
    assert shared["foil_word"] == WORD and "foil" not in shared and shared["pos"] == "1"
    # the link opens the same question
    again = opened(shared)
    assert again.session_state["ex_attr_foil_word"] == WORD and again.session_state["ex_attr_foil"] == foil.id
    assert again.session_state["ex_attr_pos"] == 1 and again.metric[1].value == at.metric[1].value
    assert not [w for w in warnings(again) if "link" in w]
    # a quick pick replaces the typed word in the link
    box = next(s for s in again.selectbox if s.label.startswith("…rather than"))
    box.set_value(box.options[1]).run()
    picked = again.session_state["ex_attr_foil"]
    assert picked != foil.id and again.query_params["foil"] == str(picked) and "foil_word" not in again.query_params


@pytest.mark.parametrize("typed, message", [
    ("日本", "the tokenizer makes ▁ <unk> <unk> of it, and the model cannot emit <unk>"),
    ("la femme", "one word, got 2"), ("   ", "type a target word")])
def test_a_word_the_view_cannot_use_is_said_and_contrasts_nothing(at, typed, message):
    open_view(at, "attribution", SENTENCE)
    at.text_input(key="ex_attr_foil_word").input(typed).run()
    assert not at.exception, at.exception
    assert any(w.startswith("Typed foil:") and message in w for w in warnings(at)), warnings(at)
    assert at.session_state["ex_attr_foil"] is None and "foil_word" not in at.query_params
    assert at.metric[1].value == at.metric[0].value  # f is log p(token) alone


def test_the_token_itself_as_a_typed_foil_is_refused_with_a_reason(tmp_path, monkeypatch):
    make_checkpoint(tmp_path / "words" / "tiny")  # word-level: every output token is a whole word
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "words"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    translator = translator_of(tmp_path / "words")
    position, word = 1, translator.translate(SENTENCE).target_pieces[1].removeprefix("▁")
    app = opened({"view": "attribution", "text": SENTENCE, "pos": str(position), "foil_word": word})
    assert any("Foil word of the link" in w and "the token itself" in w for w in warnings(app)), warnings(app)
    assert app.session_state["ex_attr_foil"] is None and app.session_state["ex_attr_foil_word"] == word
    app.run()  # the next run says it in the view (the link's problems are said once)
    assert any(w.startswith(f"“{word}” is the token itself") for w in warnings(app)), warnings(app)


@pytest.mark.parametrize("value, message", [("日本", "Foil word '日本' in the link: '日本' has pieces the target"),
                                            ("", "Foil word '' in the link: it is empty"),
                                            ("a b", "in the link: one word, got 2"),
                                            ("x" * 5000, "in the link: a foil is one word of at most 40 characters")])
def test_a_bad_typed_foil_in_a_link_is_said_as_the_links_and_nothing_is_contrasted(at, value, message):
    app = opened({"view": "attribution", "text": SENTENCE, "foil_word": value})
    said = [w for w in warnings(app) if message in w and "nothing is contrasted" in w]
    assert len(said) == 1 and len(said[0]) < 300, warnings(app)  # once, and the value quoted short
    assert app.session_state["ex_attr_foil"] is None and app.session_state["ex_attr_foil_word"] == value[:40]
    assert "foil_word" not in app.query_params


def test_patching_with_a_typed_foil_measures_the_difference_and_keeps_it_in_the_link(at, checkpoints):
    open_view(at, "patching", SENTENCE)
    at.text_input(key="ex_patch_foil_word").input(WORD).run()
    assert not at.exception, at.exception
    translator = translator_of(checkpoints)
    clean, other = translator.translate(SENTENCE), translator.prepare(swapped(SENTENCE))
    foil = foil_word(translator.tokenizer, WORD)
    expected = activation_patching(translator.model, clean.source_ids, other.ids, [1], clean.token_ids[0],
                                   foil=foil.id)
    assert float(at.metric[0].value) == pytest.approx(expected.clean_log_prob, abs=1e-3)
    assert float(at.metric[2].value) == pytest.approx(expected.difference, abs=1e-3)
    figs = charts(at)
    assert values(figs[0]).ravel().tolist() == pytest.approx([v for row in expected.residual for v in row], abs=1e-5)
    measure = f"log p({clean.target_pieces[0]}) − log p({foil.piece})"
    subtitles = [f.subtitle.replace("\n", " ") for f in figs]  # the heads': 2 lines
    assert len(figs) == 4 and all(measure in t for t in subtitles), subtitles
    assert any(m.value.replace("\\", "") == f"**Measured:** {measure}" for m in at.markdown)
    assert at.query_params["foil_word"] == WORD
    again = opened(dict(at.query_params))
    assert again.session_state["ex_patch_foil"] == foil.id and again.metric[2].value == at.metric[2].value
    # the counterfactual run's token is a quick pick: "why the clean token rather than the other run's"
    box = next(s for s in again.selectbox if s.label.startswith("…rather than"))
    box.set_value(box.options[1]).run()
    assert again.query_params["foil"] == str(again.session_state["ex_patch_foil"])
    assert "foil_word" not in again.query_params


def test_the_report_carries_the_patching_foil(checkpoints):
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE, attention=True)
    foil = foil_word(translator.tokenizer, WORD)
    picks = {"attribution": (1, foil.id, 20, "zeros"), "clean": SENTENCE, "other": swapped(SENTENCE),
             "position": 0, "token": None, "foil": foil.id}
    html = sentence_report(translation, model="tiny",
                           extra=report_sections(translator, translation, SearchSettings(), picks))
    expected = activation_patching(translator.model, translation.source_ids, translator.prepare(swapped(SENTENCE)).ids,
                                   [1], translation.token_ids[0], foil=foil.id)
    assert f"− log p(<bdi>{foil.piece}</bdi>): clean {expected.clean_log_prob:.3f}" in html
    # in the charts' SVG text: the bars' title, and the four maps' subtitles (the heads' on a line of its own)
    assert html.count(f"− log p({foil.piece})</text>") + html.count(f">− log p({foil.piece})</tspan>") == 1 + 4

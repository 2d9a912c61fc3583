"""AppTest of the Explain page's Attribution, Logit lens and Patching views, their figures and report sections."""


import pytest
from streamlit.testing.v1 import AppTest

from tests.app.test_explain import open_view, translator_of
from tests.app_fixtures import APP, app, make_checkpoint, opened
from tests.chart_reading import Drawn, charts, values
from tests.conftest import SPECIALS
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain.attribution import MAX_IG_STEPS, METHODS, attribute, candidates
from transformer.explain.logit_lens import decoder_lens, logit_lens
from transformer.explain.patching import activation_patching
from transformer.model.checkpoint import load_checkpoint
from ui.explain import attribution_figures
from ui.explain.attribution import report_sections, swapped
from ui.explain.html_report import sentence_report

SENTENCE = "the woman reads a book ."  # a word of the tiny vocabulary with a partner of the other gender


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    return root


@pytest.fixture
def at(checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=60)


def test_swapped_replaces_the_first_gendered_word_keeping_capitals():
    assert swapped("The woman reads.") == "The man reads."
    assert swapped("He saw his son.") == "She saw his son."
    assert swapped("Girls play.") == "Girls play."  # whole words only
    assert swapped("In the beginning.") == "In the beginning."


def test_attribution_view_draws_every_method_and_the_completeness(at, checkpoints):
    open_view(at, "attribution", SENTENCE)
    assert not at.exception, at.exception
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE)
    expected = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 0,
                         target_gap=0.05)  # the view's "auto" steps
    (bars,) = charts(at)
    assert bars.marks() == ["bar"] * 2 * len(METHODS)  # source and prefix bars per method
    ig = bars.data("bar", 2 * list(METHODS).index("integrated_gradients"))
    assert ig["value"].tolist() == pytest.approx(expected.methods["integrated_gradients"].source, abs=1e-5)
    assert float(at.metric[0].value) == pytest.approx(expected.log_prob, abs=1e-3)
    gap = f"{100 * expected.completeness.relative_gap:.2f}%"
    assert at.metric[2].value == gap and any("Σ attributions" in c.value for c in at.caption)
    # a contrastive question: the first foil the box offers
    foil_box = next(s for s in at.selectbox if s.label.startswith("…rather than"))
    foil_box.set_value(foil_box.options[1]).run()
    assert not at.exception, at.exception
    foil = at.session_state["ex_attr_foil"]
    contrast = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 0,
                         foil=foil)
    assert float(at.metric[1].value) == pytest.approx(contrast.f, abs=1e-3)


def test_lens_view_shows_the_logit_lens_and_a_translation_per_encoder_layer(at, checkpoints):
    open_view(at, "lens", SENTENCE)
    assert not at.exception, at.exception
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE)
    (table,) = charts(at)
    z = values(table)
    assert z.shape == (len(translation.token_ids), 3)  # positions x (embeddings, layer 0, layer 1)
    lens = logit_lens(translator.model, translation.source_ids, translation.token_ids, specials=SPECIALS)
    assert z[:, -1].tolist() == pytest.approx([c.probs[0] for c in lens.cells[-1]], abs=1e-6)
    layers = [m.value for m in at.markdown if m.value.startswith("**embeddings**") or m.value.startswith("**layer")]
    assert len(layers) == 3
    assert f"{decoder_lens(translator, SENTENCE)[-1].translation.score:.2f}" in layers[-1]
    assert ":orange-background" not in layers[-1]  # the last encoder layer gives the translation itself


def test_patching_view_maps_a_gender_swap_and_refuses_unequal_lengths(at, checkpoints):
    open_view(at, "patching", SENTENCE)
    assert not at.exception, at.exception
    assert at.text_input(key="ex_patch_other").value == "the man reads a book ."
    figs = charts(at)
    assert len(figs) == 4  # the residual stream and three families of heads
    translator = translator_of(checkpoints)
    clean, other = translator.translate(SENTENCE), translator.prepare("the man reads a book .")
    expected = activation_patching(translator.model, clean.source_ids, other.ids, [1], clean.token_ids[0])
    assert values(figs[0]).ravel().tolist() == pytest.approx([v for row in expected.residual for v in row], abs=1e-5)
    assert float(at.metric[2].value) == pytest.approx(expected.difference, abs=1e-3)
    at.text_input(key="ex_patch_other").input("the big man reads a book .").run()
    assert not at.exception, at.exception
    assert any("same number of tokens" in w.value for w in at.warning)
    assert not charts(at)


def test_the_patching_pair_position_and_token_are_kept_in_the_link(at, checkpoints):
    open_view(at, "patching", SENTENCE)
    assert "other" not in at.query_params and "pos" not in at.query_params  # the defaults are not written
    at.text_input(key="ex_patch_other").input("the child reads a book .").run()
    box = lambda app, label: next(s for s in app.selectbox if s.label.startswith(label))  # noqa: E731
    box(at, "Position").set_value(1).run()
    token = box(at, "Token whose")
    token.set_value(token.options[1]).run()
    assert not at.exception, at.exception
    shared = dict(at.query_params)
    assert shared["other"] == "the child reads a book ." and shared["pos"] == "1" and "clean" not in shared
    chosen, metric = at.session_state["ex_patch_token"], at.metric[2].value
    assert shared["token"] == str(chosen)
    opened = AppTest.from_file(APP, default_timeout=60)  # a reload: a new session with the same address
    opened.query_params.update(shared)
    opened.switch_page("pages/6_Explain_heads.py").run()
    assert not opened.exception, opened.exception
    assert opened.text_input(key="ex_patch_other").value == "the child reads a book ."
    assert opened.session_state["ex_patch_pos"] == 1 and opened.session_state["ex_patch_token"] == chosen
    assert opened.metric[2].value == metric and not [w for w in opened.warning if "link" in w.value]
    opened.radio(key="ex_view").set_value("search").run()  # another view: the patching picks leave the link
    assert not {"other", "pos", "token"} & set(opened.query_params)
    bad = AppTest.from_file(APP, default_timeout=60)
    bad.query_params.update({**shared, "pos": "99", "token": "5"})
    bad.switch_page("pages/6_Explain_heads.py").run()
    assert not bad.exception, bad.exception
    assert any("Pos" in w.value and "99" in w.value for w in bad.warning), [w.value for w in bad.warning]
    assert bad.session_state["ex_patch_pos"] == 0

def test_the_report_carries_the_attribution_lens_and_patching_sections(checkpoints):
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE, attention=True)
    picks = {"attribution": (1, None, 20, "zeros"), "clean": SENTENCE, "other": swapped(SENTENCE), "position": 0,
             "token": None}
    sections = report_sections(translator, translation, SearchSettings(), picks)
    html = sentence_report(translation, model="tiny", extra=sections)
    for title in ("Attribution of output token 1", "Logit lens", "DecoderLens", "Activation patching"):
        assert title in html
    assert html.count('class="map"') == html.count("<svg") - 3 == 3 * 2 * 4 + 1 + 1 + 4  # and 3 head views
    # the maps, the bars, the lens, 4 patching maps
    picks["other"] = "the big man reads a book ."  # cannot be patched: no patching section, no failure
    assert "Activation patching" not in "".join(report_sections(translator, translation, SearchSettings(), picks))


def test_attribution_bars_split_source_and_prefix():
    from tests.explain.test_attribution import tiny_translator
    translator = tiny_translator()
    translation = translator.translate(SENTENCE)
    result = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 2)
    bars = Drawn.of(attribution_figures.attribution_bars(result))
    assert bars.marks() == ["bar"] * 8
    assert bars.data("bar", 0)["value"].tolist() == list(result.methods["saliency"].source)
    assert bars.data("bar", 1)["value"].tolist() == list(result.methods["saliency"].prefix)
    assert len(bars.labels("x", "bar", 1)) == len(result.prefix_words) >= 1


def test_patching_an_equal_pair_draws_no_map(monkeypatch, tmp_path, tiny_and_other):
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/6_Explain_heads.py", model="tiny", view="patching",
                text="the cat sleeps .")  # no word to swap: the counterfactual is the clean source
    assert any("The two sources are the same" in i.value for i in at.info)
    assert not charts(at) and not at.metric


WOMAN = "the woman reads a book ."


def test_the_attribution_token_and_foil_are_kept_in_the_link(monkeypatch, tmp_path, tiny_and_other):
    translator = Translator(load_checkpoint(tiny_and_other / "tiny"))
    translation = translator.translate(WOMAN)
    foil = next(c.token for c in candidates(translator.model, translation.source_ids, translation.token_ids, 1,
                                         specials=translator.specials)
                if c.token != translation.token_ids[1])
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/6_Explain_heads.py", model="tiny",
                view="attribution", text=WOMAN, pos="1", foil=str(foil))
    assert at.session_state["ex_attr_pos"] == 1 and at.session_state["ex_attr_foil"] == foil
    assert at.query_params["pos"] == "1" and at.query_params["foil"] == str(foil)
    assert not [w.value for w in at.warning if "link" in w.value]
    (box,) = [s for s in at.selectbox if s.label == "…rather than (contrastive)"]
    box.set_value(box.options[0]).run()  # no foil: out of the link
    assert "foil" not in at.query_params and at.query_params["pos"] == "1"
    at.radio(key="ex_view").set_value("lens").run()  # another view: attribution's picks leave the link
    assert "pos" not in at.query_params and "foil" not in at.query_params


def test_the_attribution_view_shows_the_steps_integrated_gradients_used(monkeypatch, tmp_path, tiny_and_other):
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/6_Explain_heads.py", model="tiny",
                view="attribution", text=WOMAN)
    assert at.selectbox(key="ex_attr_steps").value == "auto"
    (gap,) = [m for m in at.metric if m.label.startswith("IG gap at ")]
    assert len(gap.label) <= 20  # a third of the page shows about 22 characters in class mode at 1280 px
    steps = int(gap.label.split(" at ")[1].split()[0])
    assert float(gap.value.rstrip("%")) < 5 or steps == MAX_IG_STEPS

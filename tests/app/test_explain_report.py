"""The HTML report of Explain heads (ui.explain.html_report): its forced decoding and typed-foil sections (the numbers
they print and draw, the case without a difference map, their size, the Explain page's fields that ask for them), and
a short sentence's whole report drawn as static SVG and kept small."""

import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest  # noqa: F401  (the app tests below run pages)

from tests.app.test_explain import at, checkpoints, open_view  # noqa: F401  (the Explain page's fixtures)
from tests.app_fixtures import make_checkpoint
from tests.explain.test_attribution import tiny_translator
from tests.explain.test_forced_comparison import no_difference, one_word, translator  # noqa: F401  (fixtures)
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.explain.contrast import contrast
from transformer.explain.foil import foil_word
from transformer.explain.forced_comparison import compare_forced
from transformer.model.checkpoint import load_checkpoint
from ui.explain import html_report
from ui.explain.report_download import asked_sections


def plotted(html: str) -> list[list[dict[str, str]]]:
    """Each chart's marks, read back from its SVG: every mark's hover (its title, "name: value; ..."), in drawing
    order."""
    return [[dict(part.split(": ", 1) for part in title.split("; ")) for title in
             re.findall(r"<title>([^<]*)</title>", svg)] for svg in re.findall(r'<div class="map"><svg.*?</svg>', html)]


def number(text: str) -> float:
    return float(text.replace("−", "-"))  # Vega writes a minus sign


def matrix(marks: list[dict[str, str]], rows: str = "target query", cols: str = "source key") -> np.ndarray:
    """A heatmap's cells (their hovers) back as a matrix of the value each one says."""
    shape = 1 + max(int(m[rows]) for m in marks), 1 + max(int(m[cols]) for m in marks)
    out = np.full(shape, np.nan)
    for m in marks:
        out[int(m[rows]), int(m[cols])] = number(m["value"])
    return out


def test_the_forced_section_prints_both_totals_marks_the_forced_pieces_and_draws_each_layers_difference(one_word):  # noqa: F811
    both = next(c for c in one_word if c.difference is not None and c.rows > 2)
    parts = html_report.forced_sections(both)
    body = "".join(parts)
    assert f"<td>{both.own.score:.3f}</td>" in body and f"<td>{both.forced.score:.3f}</td>" in body
    assert f"{both.forced.score - both.own.score:+.3f}" in body
    assert body.count("(forced)") == len(both.prefix)
    charts = plotted(body)
    assert len(charts) == both.own.cross.shape[0]  # one map per layer, the mean of its heads
    for layer, marks in enumerate(charts):
        expected = (both.own.cross_map(layer) - both.forced.cross_map(layer)).numpy()
        assert np.allclose(matrix(marks), expected[: both.rows], atol=1e-3)  # each cell's hover: 3 decimals
        assert all(number(m["own − forced"]) == float(f"{number(m['value']):+.3f}") for m in marks)  # signed
    assert both.note[:40] in body


def test_without_a_difference_the_section_says_why_and_draws_nothing(no_difference, translator):  # noqa: F811
    body = "".join(html_report.forced_sections(no_difference))
    assert "no difference to draw" in body and not plotted(body)
    own = translator.translate("the house is big")
    same = compare_forced(translator, "the house is big", own.token_ids[:2])
    body = "".join(html_report.forced_sections(same))
    assert "what the model would have said" in body and not plotted(body) and "+0.000" in body


def test_the_contrast_section_prints_f_and_draws_the_attribution_and_says_when_the_foil_has_pieces():
    bpe = tiny_translator(seed=1)  # "femme" is several pieces there
    output = bpe.translate("the woman reads a book .")
    why = contrast(bpe.model, bpe.tokenizer, output.source_ids, output.token_ids, 1, "femme",
                   methods=("integrated_gradients", "occlusion"), steps=16)
    body = "".join(html_report.contrast_sections(why, output.target_pieces))
    assert f"= {why.attribution.f:.3f}" in body and "femme" in body and why.foil.note in body
    (bars,) = plotted(body)
    ig = list(why.attribution.methods).index("integrated_gradients")  # source bars first, then the prefix's
    shown = [number(value) for m in bars for value in m.values()]  # a bar's hover: "word: +0.1234"
    source = shown[sum(len(s.source) + len(s.prefix) for s in list(why.attribution.methods.values())[:ig]):][
        : len(why.attribution.source_words)]
    assert np.allclose(source, why.attribution.methods["integrated_gradients"].source, atol=5e-5)


def test_asked_sections_build_only_what_was_asked_and_stay_small(translator):  # noqa: F811
    translation = translator.translate("the house is big", attention=True)
    settings = SearchSettings()
    assert asked_sections(translator, translation, settings, None, None, 0) == []
    forced = asked_sections(translator, translation, settings, translator.prefix_ids("la maison"), None, 0)
    assert "Own and forced translations" in forced[0]
    plain = html_report.sentence_report(translation, model="tiny")
    with_forced = html_report.sentence_report(translation, model="tiny", extra=forced)
    assert len(with_forced) - len(plain) < 40_000  # two layers' maps of 12 x 5 cells
    assert "<script" not in "".join(forced)  # static SVG
    too_long = asked_sections(translator, translation, settings, [4] * 12, None, 0)
    assert "No forced decoding: prefix: 12 pieces" in too_long[0]
    foil = foil_word(translator.tokenizer, "chat")
    asked = asked_sections(translator, translation, settings, None, foil, 1)
    assert len(asked) == 2 and "rather than <bdi>chat</bdi>" in asked[0]


def test_the_report_view_checks_the_prefix_and_the_foil_it_is_asked_for(at):  # noqa: F811
    open_view(at, "report")
    assert not at.exception and at.get("download_button")
    at.text_input(key="ex_report_prefix").input("le zèbre").run()
    at.text_input(key="ex_report_foil").input("la femme").run()
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert any("prefix: 'zèbre' has pieces the target vocabulary lacks" in w for w in warnings)
    assert any("foil: one word, got 2" in w for w in warnings)
    at.text_input(key="ex_report_prefix").input("la maison").run()
    at.text_input(key="ex_report_foil").input("chat").run()
    assert not at.exception and not at.warning and at.get("download_button")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Translator:
    return Translator(load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")))


def test_the_report_of_a_short_sentence_draws_static_svg_and_stays_small(tiny):
    from ui.explain import html_report

    translation = tiny.translate("the woman reads a book .", attention=True)
    doc = html_report.sentence_report(translation, model="tiny")
    assert len(doc.encode()) < 1_600_000  # 24 maps, 20 output pieces: was 5.4 MB with plotly.js, 2.8 MB packed
    figures = doc.count('<div class="map"><svg')
    assert figures == 3 * 2 * 4 and "plotly" not in doc.lower() and doc.count("<script") == 3  # the head views'

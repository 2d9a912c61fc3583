"""AppTest of the Explain heads page (pages/6_Explain_heads.py): every view on a tiny random checkpoint."""

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, PAIRS, SHIPPED, app, make_checkpoint, opened, write_tsv
from tests.chart_reading import Drawn, altair_views, chart, charts, colour_scale, curve_panels, curve_points, values
from tests.conftest import SPECIALS
from transformer.charts import theme, training_curves
from transformer.data.corpora.teaching import align
from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec
from transformer.decoding.translate import Translator
from transformer.explain import (
    FAMILIES,
    STATISTICS,
    HeadImportance,
    Intervention,
    cell_arithmetic,
    intervened_translator,
)
from transformer.model.checkpoint import load_checkpoint
from transformer.runs import (
    ProbeRecord,
    RunFiles,
    append_metrics,
    write_probes,
    write_status,
)
from ui.explain import head_maps, importance_ties
from ui.explain.html_report import sentence_report
from ui.shared.attention.families import FAMILIES as PAGE_FAMILIES
from ui.shared.models.catalog import find_models

PAGE = "pages/6_Explain_heads.py"
SENTENCE = PAIRS[3][0]
GRAMMAR = "The young man buys a green bicycle."  # a sentence of the teaching grammar


def two_tiny_models(root: Path) -> Path:
    """"tiny" and "tiny-b": the same vocabulary, other weights (another output), each with a corpus the app can load
    (a dev sample for importance) in a folder the pages may read, inside checkpoints/."""
    (root / "data").mkdir()
    tsv = write_tsv(root / "data" / "pairs.tsv", copies=4)
    for name, seed in (("tiny", 0), ("tiny-b", 1)):
        path = make_checkpoint(root / name, seed=seed)
        metadata = json.loads((path / "metadata.json").read_text())
        metadata["corpus"] = {"kind": "tsv", "src": "en", "tgt": "fr", "path": str(tsv), "dev_fraction": 0.1,
                              "test_fraction": 0.1}
        (path / "metadata.json").write_text(json.dumps(metadata))
    return root


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    return two_tiny_models(tmp_path_factory.mktemp("checkpoints"))


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    """The same two models in a folder of their own: what their tests compute (head importance) is not the other
    tests' to reuse."""
    return two_tiny_models(tmp_path_factory.mktemp("checkpoints"))


@pytest.fixture
def at(checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=60)


def open_view(at, view, text=SENTENCE):
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    at.radio(key="ex_view").set_value(view).run()
    if view not in ("stats", "importance", "training"):
        at.text_input(key="ex_text").input(text).run()
    assert not at.exception, at.exception
    return at


def translator_of(checkpoints, name="tiny"):
    return Translator(load_checkpoint(checkpoints / name))


def titles(at) -> list[str]:
    """The titles of the page's charts, in page order (Streamlit names a chart's element only when it takes
    clicks, so the page's charts are told apart by their titles)."""
    return [c.title for c in charts(at)]


def test_switching_heads_off_redecodes_and_marks_the_changes(at, checkpoints):
    open_view(at, "ablate")
    assert at.info and "No head is off" in at.info[0].value
    off = [("cross", 0, 1), ("cross", 1, 2), ("enc_self", 0, 0)]
    at.multiselect(key="ex_off").set_value(off).run()
    assert not at.exception, at.exception
    translator = translator_of(checkpoints)
    expected = intervened_translator(translator, Intervention(frozenset(off))).translate(SENTENCE)
    assert any("With 3 heads off" in m.value for m in at.markdown)
    assert float(at.metric[1].value) == pytest.approx(expected.score, abs=1e-3)
    base, off_map = titles(at)  # the trained model's map and the ablated one, at the newest head switched off
    assert base.startswith("trained model · ") and off_map.startswith("heads off · ")
    at.button(key="ex_off_all_dec_self").click().run()
    assert len(at.session_state["ex_off"]) == 3 + 8


def test_a_picked_cell_opens_its_arithmetic_for_every_family(at, checkpoints):
    open_view(at, "cell")
    assert "Click a cell" in at.info[0].value
    drawn = chart(at, "ex_cell_map")
    assert drawn.selections()[head_maps.CELL] == {"type": "point", "fields": ["row", "col"], "on": "click",
                                                 "toggle": False}  # a click selects one cell
    assert drawn.data("rect")[["row", "col"]].head(2).values.tolist() == [[0, 0], [0, 1]]
    assert head_maps.picked_cell({"row": 1, "col": 0}) == (1, 0)  # what the click reports, read back
    assert head_maps.picked_cell(None) is None and head_maps.picked_cell({"layer": 1}) is None
    translation = at.session_state["ex_result"]
    model = translator_of(checkpoints).model
    for family in FAMILIES:
        at.radio(key="ex_cell_family").set_value(family).run()
        at.session_state["ex_cell_cell"] = (1, 0)  # what a click on row 1, column 0 sets
        at.run()
        assert not at.exception, at.exception
        decoder_input = [SPECIALS.start, *translation.token_ids[:-1]]
        cell = cell_arithmetic(model, translation.source_ids, decoder_input, family, 0, 0, 1)
        assert float(at.metric[1].value) == pytest.approx(float(cell.weights[0]), abs=1e-4)
        assert float(at.metric[2].value) == pytest.approx(float(cell.model_weights[0]), abs=1e-4)
        assert len(at.dataframe[0].value) == cell.k.size(0) and not at.warning
        outlined = chart(at, "ex_cell_map").view("rect", 2)  # the picked cell is outlined
        assert outlined["mark"]["stroke"] == theme.PICKED and outlined["mark"]["filled"] is False
        assert chart(at, "ex_cell_map").data("rect", 2)[["row", "col"]].values.tolist() == [[1, 0]]


def test_what_if_switches_compare_with_the_trained_model(at):
    open_view(at, "whatif")
    assert "Every switch is off" in at.info[0].value
    at.toggle(key="ex_nopos").set_value(True).run()
    assert not at.exception and any("no positional encodings" in m.value for m in at.markdown)
    at.toggle(key="ex_nopos").set_value(False)
    at.toggle(key="ex_nocausal").set_value(True).run()
    at.radio(key="ex_wi_family").set_value("dec_self").run()
    assert not at.exception, at.exception
    base, lifted = (values(drawn) for drawn in charts(at))  # the trained model's map, the changed one
    upper = np.triu(np.ones(base.shape, dtype=bool), 1)
    assert base[upper].sum() == 0 and lifted[upper].sum() > 0
    at.select_slider(key="ex_temp").set_value(4.0).run()
    assert not at.exception and any("temperature 4" in m.value for m in at.markdown)


def test_greedy_beam_and_reference_side_by_side(at, checkpoints):
    metadata = json.loads((checkpoints / "tiny" / "metadata.json").read_text())
    source, reference = load_corpus(CorpusSpec.from_dict(metadata["corpus"])).dev[0]
    open_view(at, "search", source)
    table = at.dataframe[0].value
    assert list(table["output"])[:2] == ["greedy", "beam 4"] and len(table) == 4  # the reference was found
    assert at.text_input(key="ex_ref").value == reference
    scale = colour_scale(charts(at)[-1])  # the difference map
    assert scale["domainMid"] == 0 and scale["domain"] == [-1, 1] and scale["scheme"] == theme.DIVERGING


def test_greedy_beam_and_reference_view_reads_every_output_with_the_chosen_lens(at, checkpoints):
    from transformer.explain.lenses import lens_maps
    from ui.shared.models.catalog import checkpoint_stamp
    from ui.shared.models.loading import _load
    from ui.shared.models.translation_gate import reference_ids

    metadata = json.loads((checkpoints / "tiny" / "metadata.json").read_text())
    source, reference = load_corpus(CorpusSpec.from_dict(metadata["corpus"])).dev[0]
    open_view(at, "search", source)
    at.selectbox(key="ex_search_b").set_value("reference").run()
    at.selectbox(key="ex_search_lens").set_value("alti").run()
    assert not at.exception and at.query_params["lens"] == "alti"
    assert at.selectbox(key="ex_search_head").options == ["mean of heads"]  # one ALTI+ map per layer
    drawn = charts(at)[-1]
    assert "ALTI+" in drawn.title
    path = at.session_state["model_path"]
    translator = _load(path, checkpoint_stamp(path))
    greedy = translator.translate(source)
    maps = [lens_maps(translator.model, greedy.source_ids, ids, "alti", specials=SPECIALS).cross[0][0]  # (T, S)
            for ids in (greedy.token_ids, reference_ids(translator, reference))]
    rows, cols = min(m.shape[0] for m in maps), min(m.shape[1] for m in maps)
    assert np.allclose(values(drawn), (maps[0][:rows, :cols] - maps[1][:rows, :cols]).numpy(), atol=1e-5)


def test_head_statistics_map_and_roles(at):
    open_view(at, "stats")
    (drawn,) = charts(at)
    assert values(drawn, "layer", "head").shape == (2, 4)
    tooltip = [t["title"] for t in drawn.view("rect", 1)["encoding"]["tooltip"]]
    statistic = STATISTICS[at.session_state["ex_stats_name"]]
    assert tooltip[:3] == ["head", statistic, "role"] and "reads as" in tooltip  # the hover: every number
    assert drawn.data("rect")["summary"][0].startswith(f"layer 0, head 0: {statistic} ")
    at.radio(key="ex_stats_family").set_value("cross").run()
    assert not at.exception
    at.session_state["ex_stats_name"] = "diagonal"
    at.run()
    (drawn,) = charts(at)
    assert "cross-attention" in drawn.title and "weight near the diagonal" in drawn.subtitle
    assert ((values(drawn, "layer", "head") >= 0) & (values(drawn, "layer", "head") <= 1)).all()


def test_head_importance_runs_in_the_background_and_opens_the_ablation(at, checkpoints):
    open_view(at, "importance")
    at.select_slider(key="ex_imp_n").set_value(8)
    at.select_slider(key="ex_imp_bleu").set_value(8).run()
    at.button(key="ex_imp_start").click().run()
    job = at.session_state["ex_imp_job"]
    job.thread.join(timeout=120)
    assert job.result is not None, job.error
    at.run()
    assert not at.exception, at.exception
    assert [c.key for c in charts(at)] == [f"ex_imp_map_{family}" for family in PAGE_FAMILIES]  # they take clicks
    drawn = chart(at, "ex_imp_map_cross")
    assert values(drawn, "layer", "head").shape == (2, 4)
    assert drawn.selections()[head_maps.HEAD]["fields"] == ["layer", "head"]  # a click opens the head
    assert head_maps.picked_head({"layer": 1, "head": 3}) == (1, 3) and head_maps.picked_head({}) is None
    top_head = job.result.ranked()[0][0]
    at.button(key="ex_imp_off_0").click().run()
    assert at.session_state["ex_view"] == "ablate" and at.session_state["ex_off"] == [top_head]


def cursor_step(view) -> int:
    """The step of the red cursor rule in every panel of the training-curves view."""
    spec, data = view
    cursors = {data[layer["data"]["name"]]["step"].item() for panel in spec["vconcat"] for layer in panel["layer"]
               if layer["mark"].get("color") == training_curves.CURSOR_COLOR}
    assert len(cursors) == 1
    return cursors.pop()


def test_attention_across_training_with_curves_and_animation(at, tmp_path):
    run = RunFiles(tmp_path / "runs" / "demo")
    run.root.mkdir(parents=True)
    record = ProbeRecord("the cat", "le chat", ["▁the", "▁cat", "</s>"], ["▁le", "▁chat", "</s>"],
                         ["<s>", "▁le", "▁chat"])
    for step in (100, 200, 300):
        write_probes(run, step, [record], [{f: torch.full((2, 4, 3, 3), 1 / 3) for f in FAMILIES}])
        append_metrics(run.metrics, {"step": step, "train_loss": 3.0 - step / 200, "dev_loss": 3.0, "dev_bleu": 1.0})
    write_status(run, "finished", step=300, max_steps=300)
    open_view(at, "training")
    assert len(charts(at)) == 2  # the map and the curves; the snapshots only once their expander opens
    at.session_state["ex_tr_animation_open"] = True
    at.run()
    heat, _, animation = charts(at)
    assert values(heat).shape == (3, 3)
    view = altair_views(at)[1]  # the Train page's linked view, with a cursor at the snapshot
    assert curve_panels(view) == ["loss", "dev BLEU / chrF"]  # no learning rate in these records
    assert curve_points(view, "dev_bleu") == [(100, 1.0), (200, 1.0), (300, 1.0)]
    assert cursor_step(view) == 300  # the newest snapshot
    assert sorted(set(animation.data("rect")["step"])) == [100, 200, 300]  # every snapshot, scrubbed in the browser
    (slider,) = [p for p in animation.params() if "bind" in p]
    assert (slider["bind"]["min"], slider["bind"]["max"], slider["bind"]["step"], slider["value"]) == (100, 300, 100,
                                                                                                      300)
    at.select_slider(key="ex_tr_step_3").set_value(200).run()
    assert cursor_step(altair_views(at)[1]) == 200


def test_compare_two_models_and_download_the_report(at):
    open_view(at, "compare")
    at.radio(key="ex_cmp_family").set_value("enc_self").run()  # both cut the sentence the same way
    assert titles(at) == ["this model", "the other model", "this model − the other"]  # and their difference
    at.radio(key="ex_view").set_value("report").run()
    assert not at.exception
    assert at.get("download_button")
    assert at.multiselect(key="ex_report_lenses").value == ["norm", "alti"]


def test_the_report_is_one_html_file_with_every_map(checkpoints):
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE, attention=True)
    html = sentence_report(translation, model="tiny")
    assert html.startswith("<!DOCTYPE html>") and "https://" not in html  # nothing fetched: it works offline
    assert "plotly" not in html.lower() and "vega" not in html.lower()  # static SVG charts: no chart library
    assert html.count('class="map"') == html.count('<svg xmlns="http://www.w3.org/2000/svg"') == 3 * 2 * 4
    assert translation.text.split()[0] in html
    weight = float(translation.attention.cross[1][2, 0, 3])  # layer 1, head 2, query 0, key 3: in its cell's hover
    cross = html[html.index(f"<h2>{PAGE_FAMILIES['cross']}</h2>"):]
    maps = cross.split('class="map"')[1:]
    assert "source key: 3; target query: 0; value: " in maps[4 + 2] and f"weight: {weight:.3f}" in maps[4 + 2]


def test_the_report_draws_each_chosen_lens_layer_by_layer(checkpoints):
    from transformer.explain.lenses import lens_maps
    from ui.explain.html_report import lens_sections
    from ui.shared.attention.lens_switch import MAX_ZEROED, report_maps

    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE, attention=True)
    maps, skipped = report_maps(translator.model, translation, ["norm", "alti"], SPECIALS)
    assert list(maps) == ["norm", "alti"] and not skipped
    expected = lens_maps(translator.model, translation.source_ids, translation.token_ids, "alti",
                         specials=SPECIALS).cross[1]
    assert torch.allclose(maps["alti"].cross[1], expected)
    sections = "".join(lens_sections(translation, maps))
    assert sections.count('class="map"') == sections.count("<svg") == 2 * 2  # two lenses, two layers each
    assert "ALTI+ (Ferrando)" in sections and "norm-weighted (Kobayashi)" in sections
    html = sentence_report(translation, model="tiny", extra=lens_sections(translation, maps))
    assert html.count('class="map"') == 3 * 2 * 4 + 4
    long = dataclasses.replace(translation, source_ids=list(translation.source_ids) * MAX_ZEROED)
    kept, skipped = report_maps(translator.model, long, ["value_zeroing"], SPECIALS)
    assert kept == {} and "value zeroing" in skipped[0] and str(MAX_ZEROED) in skipped[0]
    assert lens_sections(translation, {}) == []


def test_the_snapshots_slider_moves_by_training_steps_and_thins_what_would_not_fit():
    frames = [(s, np.full((2, 3), 1 / 3), ["▁a", "▁b"], ["▁x", "▁y", "▁z"]) for s in (100, 200, 300, 350)]
    drawn = Drawn.of(head_maps.training_animation(frames, title="t", query_name="q", key_name="k"))
    (slider,) = [p for p in drawn.params() if "bind" in p]
    assert (slider["bind"]["min"], slider["bind"]["max"], slider["bind"]["step"]) == (100, 350, 50)  # their gcd
    shown = drawn.view("rect")["transform"][0]["filter"]  # the snapshot at or before the slider's step
    assert shown == "datum.snapshot == [0, 0, 1, 1, 2, 3][round((snapshot_step - 100) / 50)]"
    odd = [(s, np.eye(2), ["▁a", "▁b"], ["▁x", "▁y"]) for s in (1, 1000, 2001)]  # 2,001 positions of 1 step
    (slider,) = [p for p in Drawn.of(head_maps.training_animation(odd, title="t", query_name="q",
                                                                  key_name="k")).params() if "bind" in p]
    assert slider["bind"] == {"input": "range", "min": 0, "max": 2, "step": 1, "name": "snapshot "}  # by snapshot
    big = np.full((100, 100), 1e-4)  # 10,000 cells a snapshot: 4 fit under MAX_CELLS
    many = [(s, big, [f"q{i}" for i in range(100)], [f"k{i}" for i in range(100)]) for s in range(10, 90, 10)]
    drawn = Drawn.of(head_maps.training_animation(many, title="t", query_name="q", key_name="k"))
    steps = sorted(set(drawn.data("rect")["step"]))
    assert steps == [20, 40, 60, 80] and "4 of 8 snapshots" in drawn.subtitle  # the newest kept, said
    assert head_maps.training_animation([], title="t", query_name="q", key_name="k").to_dict()["mark"]["type"] == \
        "text"  # no snapshot: a chart that says so


def test_the_reports_svg_keeps_each_marks_description_as_its_hover_and_little_else():
    from ui.explain.report_svg import FONT, compact

    svg = (f'<g class="mark-rect role-mark" role="graphics-object" aria-roledescription="rect mark container">'
           f'<path aria-label="key: 1; weight: 0.250" role="graphics-symbol" aria-roledescription="rect mark" '
           f'd="M6.079999999999984,0.8800000000000026h-139.84Z" fill="rgb(143, 193, 222)"/></g>'
           f'<text font-family="{FONT}" transform="translate(-0.04,12.26)">▁a</text>')
    assert compact(svg) == ('<g class="mark-rect role-mark"><path d="M6.1,0.9h-139.8Z" fill="#8fc1de">'
                            '<title>key: 1; weight: 0.250</title></path></g><text transform="translate(0,12.3)">▁a'
                            '</text>')


def test_explain_heads_keeps_the_typed_sentence_and_its_link_across_views(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching")
    typed = "The young man buys a green bicycle."
    at.text_input(key="ex_text").input(typed).run()
    for view in ("stats", "ablate", "importance", "ablate"):
        at.radio(key="ex_view").set_value(view).run()
        assert not at.exception, at.exception
    assert at.text_input(key="ex_text").value == typed
    assert at.query_params["text"] == typed


def test_switch_it_off_in_head_importance_lands_on_the_current_sentence(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching")
    typed = "The young man buys a green bicycle."
    at.text_input(key="ex_text").input(typed).run()
    at.radio(key="ex_view").set_value("importance").run()
    at.session_state["ex_off"] = [("cross", 1, 2)]  # what "Switch it off" (head_views._open_in_ablation) sets,
    at.session_state["ex_view"] = "ablate"  # without computing every head's importance first
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key="ex_text").value == typed and at.query_params["text"] == typed


def test_compare_models_defaults_to_the_same_language_pair_and_keeps_the_partner_in_the_link(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/6_Explain_heads.py", model="en-fr-bible", view="compare")
    box = at.selectbox(key="ex_other")
    partner = next(c for c in find_models() if c.path == box.value)
    assert partner.languages == ("en", "fr") and at.query_params["partner"] == partner.key
    box.set_value(str(SHIPPED / "en-ar-bible")).run()
    assert at.query_params["partner"] == "en-ar-bible"
    assert len(charts(at)) == 2  # the two maps, no difference of French rows and Arabic rows
    shown = _walk(at.main)  # the pickers stand above the maps they control
    picker = next(i for i, e in enumerate(shown) if e.type == "radio" and getattr(e, "key", None) == "ex_cmp_family")
    drawn = {id(e) for e in at.get("vega_lite_chart")}
    assert picker < min(i for i, e in enumerate(shown) if id(e) in drawn)
    assert any("writes French, the other Arabic" in i.value for i in at.info)
    shared = dict(at.query_params)
    again = AppTest.from_file(APP, default_timeout=120)  # the link opens the same comparison
    again.query_params.update(shared)
    again.switch_page("pages/6_Explain_heads.py").run()
    assert not again.exception and again.selectbox(key="ex_other").value == str(SHIPPED / "en-ar-bible")


def test_a_typed_reference_is_kept_in_the_link(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching", view="search",
           text="The young man buys a green bicycle.")
    # not the grammar's own reference (that one fills the box by itself and goes without the link)
    at.text_input(key="ex_ref").input("Un jeune homme achète un vélo vert.").run()
    assert at.query_params["ref"] == "Un jeune homme achète un vélo vert."
    again = opened(AppTest.from_file(APP, default_timeout=120), "pages/6_Explain_heads.py", **dict(at.query_params))
    assert again.text_input(key="ex_ref").value == "Un jeune homme achète un vélo vert."
    rows = again.dataframe[0].value
    assert rows["output"].tolist()[2] == "reference (teacher-forced)"


def _walk(node) -> list:
    """Every element under node, in the order the page shows them."""
    out = []
    for child in getattr(node, "children", {}).values():
        out += [child, *_walk(child)]
    return out


def test_a_difference_map_only_where_both_maps_have_the_same_tokens(tiny_pair, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tiny_pair))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = opened(AppTest.from_file(APP, default_timeout=60), "pages/6_Explain_heads.py", model="tiny", view="compare",
                text=PAIRS[3][0])
    mine, other = at.session_state["ex_result"], Translator(load_checkpoint(tiny_pair / "tiny-b")).translate(
        PAIRS[3][0])
    assert mine.target_pieces != other.target_pieces
    assert len(charts(at)) == 2 and any("the two outputs are different tokens" in i.value for i in at.info)
    at.radio(key="ex_cmp_family").set_value("enc_self").run()  # the same source pieces: rows mean the same
    maps = charts(at)
    assert len(maps) == 3 and colour_scale(maps[2])["domainMid"] == 0 and not at.info


def constructed_importance() -> HeadImportance:
    """Two layers of two heads per family; by BLEU five heads tie at 0, the log-likelihood tells them apart."""
    ll = {"enc_self": torch.tensor([[0.5, 0.1], [0.3, 0.0]]), "dec_self": torch.tensor([[0.2, 0.4], [0.05, 0.6]]),
          "cross": torch.tensor([[0.9, 0.7], [0.8, 0.01]])}
    bleu = {"enc_self": torch.tensor([[0.0, 0.0], [2.0, 0.0]]), "dec_self": torch.tensor([[0.0, 1.0], [-1.0, 3.0]]),
            "cross": torch.tensor([[5.0, 4.0], [0.0, 6.0]])}
    return HeadImportance(ll, bleu, -2.0, 20.0, sentences=8, bleu_sentences=8)


def test_a_bleu_ranking_breaks_ties_by_log_likelihood_and_says_so():
    result = constructed_importance()
    ranked = result.ranked("bleu")
    assert [v for _, v in ranked] == [6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, -1]
    zero = [head for head, v in ranked if v == 0]  # ordered by the drop in log-likelihood: 0.8, 0.5, 0.2, 0.1, 0.0
    assert zero == [("cross", 1, 0), ("enc_self", 0, 0), ("dec_self", 0, 0), ("enc_self", 0, 1), ("enc_self", 1, 1)]
    assert result.ties("bleu") == [(6, 11, 0.0)] and result.ties() == []
    assert result.tie_at(8, "bleu") == (6, 11, 0.0) and result.tie_at(6, "bleu") is None
    assert result.tie_at(11, "bleu") is None
    kept = result.keep_top(8, "bleu")  # the two of the five tied heads with the largest log-likelihood drop
    assert {("cross", 1, 0), ("enc_self", 0, 0)}.isdisjoint(kept.heads_off) and ("dec_self", 0, 0) in kept.heads_off
    assert importance_ties.ranking_note(result, "bleu", 5) is None  # the first five do not tie
    assert "heads 7 to 11 of 12 tie at +0.00 BLEU" in importance_ties.ranking_note(result, "bleu", 8)
    note = importance_ties.keep_note(result, 8, "bleu")
    assert note.startswith("The top 8 keeps 2 of the 5 heads that tie at +0.00 BLEU (ranks 7 to 11)")
    assert importance_ties.keep_note(result, 6, "bleu") is None
    assert importance_ties.keep_note(result, 8, "log_likelihood") is None


def test_head_importance_by_bleu_says_when_heads_tie(tiny_pair, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tiny_pair))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = opened(AppTest.from_file(APP, default_timeout=60), "pages/6_Explain_heads.py", model="tiny",
                view="importance")
    at.select_slider(key="ex_imp_n").set_value(8)
    at.select_slider(key="ex_imp_bleu").set_value(8).run()
    at.button(key="ex_imp_start").click().run()
    job = at.session_state["ex_imp_job"]
    job.thread.join(timeout=120)
    assert job.result is not None, job.error
    at.run()
    at.radio(key="ex_imp_by").set_value("bleu").run()
    assert not at.exception, at.exception
    runs = job.result.ties("bleu")
    assert runs  # random weights: most heads leave BLEU where it was
    tied = {i for first, end, _ in runs for i in range(first, end)}
    listed = [m.value for m in at.markdown if m.value[:2] in {f"{i}." for i in range(1, 6)}]
    assert len(listed) == 5 and [("(tie)" in line) for line in listed] == [i in tied for i in range(5)]
    notes = [i.value for i in at.info]
    assert (importance_ties.ranking_note(job.result, "bleu", 5) in notes) == any(first < 5 for first, _, _ in runs)
    first, end, _ = runs[0]
    at.slider(key="ex_imp_k").set_value(first + 1).run()
    note = importance_ties.keep_note(job.result, first + 1, "bleu")
    assert note is not None and note in [i.value for i in at.info]


def test_ablation_maps_open_on_the_head_switched_off_and_say_it_still_computes_its_weights(tiny_pair, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tiny_pair))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = opened(AppTest.from_file(APP, default_timeout=60), "pages/6_Explain_heads.py", model="tiny", view="ablate",
                text=PAIRS[3][0])
    at.multiselect(key="ex_off").set_value([("cross", 1, 2)]).run()
    assert not at.exception, at.exception
    assert (at.radio(key="ex_ab_family").value, at.session_state["ex_ab_layer"], at.selectbox(key="ex_ab_head").value
            ) == ("cross", 1, 2)
    base, changed = charts(at)
    assert "head 2" in base.title and "head 2" in changed.title and changed.subtitle == "(this head is off)"
    assert not base.subtitle  # the trained model's head is on
    assert any("still computes its attention weights" in c.value and "output is removed" in c.value
               for c in at.caption)
    at.selectbox(key="ex_ab_head").set_value(0).run()  # the user's own pick stays while the heads off do not change
    assert at.selectbox(key="ex_ab_head").value == 0
    at.multiselect(key="ex_off").set_value([("cross", 1, 2), ("enc_self", 0, 1)]).run()
    assert (at.radio(key="ex_ab_family").value, at.session_state["ex_ab_layer"], at.selectbox(key="ex_ab_head").value
            ) == ("enc_self", 0, 1)


def test_search_view_says_when_greedy_and_beam_agree_and_fills_the_grammars_reference(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching", text=GRAMMAR, view="search")
    assert at.text_input(key="ex_ref").value == align(GRAMMAR).tgt  # a train sentence: the grammar's French
    table = at.dataframe[0].value
    assert "None" not in table.astype(str).to_numpy().ravel().tolist()
    assert table["log-probability"].iloc[-1] == "—" and re.fullmatch(r"-\d+\.\d{3}", table["log-probability"][0])
    assert any("write the same output" in s.value for s in at.success)  # greedy and beam 4 agree here
    assert not any("dashed line" in c.value for c in at.caption)
    assert all(" − " not in drawn.title for drawn in charts(at))  # no all-grey difference map
    at.selectbox(key="ex_search_b").set_value("reference").run()  # the model is exact: the reference agrees too
    assert not at.exception and any("write the same output" in s.value for s in at.success)


def test_leaving_compare_models_takes_the_partner_out_of_the_link(monkeypatch, tmp_path, tiny_and_other):
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/6_Explain_heads.py", model="tiny", view="compare",
                partner="other", text="the cat sleeps .")
    assert at.query_params["partner"] == "other"
    at.radio(key="ex_view").set_value("ablate").run()
    assert not at.exception, at.exception
    assert at.query_params["view"] == "ablate" and "partner" not in at.query_params

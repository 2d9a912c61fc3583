"""AppTest of the Explain heads page (pages/6_Explain_heads.py): every view on a tiny random checkpoint."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import PAIRS, make_checkpoint, write_tsv
from tests.conftest import SPECIALS
from tests.test_app import APP, altair_views, curve_panels, curve_points, figures_of, plotly_array
from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec
from transformer.decoding.translate import Translator
from transformer.explain import FAMILIES, Intervention, cell_arithmetic, intervened_translator
from transformer.model.checkpoint import load_checkpoint
from transformer.runs import ProbeRecord, RunFiles, append_metrics, write_probes, write_status
from ui.explain.html_report import sentence_report
from ui.shared.charts import training_curves

PAGE = "pages/6_Explain_heads.py"
SENTENCE = PAIRS[3][0]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    (root / "data").mkdir()
    tsv = write_tsv(root / "data" / "pairs.tsv", copies=4)  # inside checkpoints/: a folder the pages may read
    for name, seed in (("tiny", 0), ("tiny-b", 1)):
        path = make_checkpoint(root / name, seed=seed)
        metadata = json.loads((path / "metadata.json").read_text())
        metadata["corpus"] = {"kind": "tsv", "src": "en", "tgt": "fr", "path": str(tsv), "dev_fraction": 0.1,
                              "test_fraction": 0.1}
        (path / "metadata.json").write_text(json.dumps(metadata))
    return root


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
    assert len(figures_of(at)) == 2  # the trained model's map and the ablated one
    at.button(key="ex_off_all_dec_self").click().run()
    assert len(at.session_state["ex_off"]) == 3 + 8


def test_a_picked_cell_opens_its_arithmetic_for_every_family(at, checkpoints):
    open_view(at, "cell")
    assert "Click a cell" in at.info[0].value
    fig = figures_of(at)[0]
    markers = fig["data"][1]
    assert markers["type"] == "scatter" and fig["layout"]["clickmode"] == "event+select"
    assert markers["customdata"][:2] == [[0, 0], [0, 1]]
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
        assert figures_of(at)[0]["layout"]["shapes"]  # the picked cell is outlined


def test_what_if_switches_compare_with_the_trained_model(at):
    open_view(at, "whatif")
    assert "Every switch is off" in at.info[0].value
    at.toggle(key="ex_nopos").set_value(True).run()
    assert not at.exception and any("no positional encodings" in m.value for m in at.markdown)
    at.toggle(key="ex_nopos").set_value(False)
    at.toggle(key="ex_nocausal").set_value(True).run()
    at.radio(key="ex_wi_family").set_value("dec_self").run()
    assert not at.exception, at.exception
    base, lifted = (plotly_array(f["data"][0]["z"]) for f in figures_of(at))
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
    diff = figures_of(at)[-1]["data"][0]
    assert diff["zmid"] == 0 and (diff["zmin"], diff["zmax"]) == (-1, 1)


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
    fig = figures_of(at)[-1]
    assert "ALTI+" in fig["layout"]["title"]["text"]
    path = at.session_state["model_path"]
    translator = _load(path, checkpoint_stamp(path))
    greedy = translator.translate(source)
    maps = [lens_maps(translator.model, greedy.source_ids, ids, "alti", specials=SPECIALS).cross[0][0]  # (T, S)
            for ids in (greedy.token_ids, reference_ids(translator, reference))]
    rows, cols = min(m.shape[0] for m in maps), min(m.shape[1] for m in maps)
    assert np.allclose(plotly_array(fig["data"][0]["z"]), (maps[0][:rows, :cols] - maps[1][:rows, :cols]).numpy(),
                       atol=1e-5)


def test_head_statistics_map_and_roles(at):
    open_view(at, "stats")
    fig = figures_of(at)[0]
    values = plotly_array(fig["data"][0]["z"])
    assert values.shape == (2, 4) and fig["data"][1]["hovertemplate"] == "%{text}<extra></extra>"
    at.radio(key="ex_stats_family").set_value("cross").run()
    assert not at.exception
    at.session_state["ex_stats_name"] = "diagonal"
    at.run()
    fig = figures_of(at)[0]
    assert "weight near the diagonal" in fig["layout"]["title"]["text"]
    assert ((plotly_array(fig["data"][0]["z"]) >= 0) & (plotly_array(fig["data"][0]["z"]) <= 1)).all()


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
    maps = figures_of(at)
    assert len(maps) == 3 and plotly_array(maps[2]["data"][0]["z"]).shape == (2, 4)
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
    (heat,) = figures_of(at)  # the animation is built only once its expander opens
    at.session_state["ex_tr_animation_open"] = True
    at.run()
    heat, animation = figures_of(at)
    assert plotly_array(heat["data"][0]["z"]).shape == (3, 3)
    (view,) = altair_views(at)  # the Train page's linked view, with a cursor at the snapshot
    assert curve_panels(view) == ["loss", "dev BLEU / chrF"]  # no learning rate in these records
    assert curve_points(view, "dev_bleu") == [(100, 1.0), (200, 1.0), (300, 1.0)]
    assert cursor_step(view) == 300  # the newest snapshot
    assert [f["name"] for f in animation["frames"]] == ["100", "200", "300"]
    at.select_slider(key="ex_tr_step_3").set_value(200).run()
    assert cursor_step(altair_views(at)[0]) == 200


def test_compare_two_models_and_download_the_report(at):
    open_view(at, "compare")
    at.radio(key="ex_cmp_family").set_value("enc_self").run()  # both cut the sentence the same way
    assert len(figures_of(at)) == 3  # this model, the other, their difference
    at.radio(key="ex_view").set_value("report").run()
    assert not at.exception
    assert at.get("download_button")
    assert at.multiselect(key="ex_report_lenses").value == ["norm", "alti"]


def test_the_report_is_one_html_file_with_every_map(checkpoints):
    translator = translator_of(checkpoints)
    translation = translator.translate(SENTENCE, attention=True)
    html = sentence_report(translation, model="tiny")
    assert html.startswith("<!DOCTYPE html>") and "Plotly" in html and "https://" not in html.split("<script>")[0]
    assert html.count('class="map"') == 3 * 2 * 4  # every family, layer and head
    assert translation.text.split()[0] in html


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
    assert sections.count('class="map"') == 2 * 2  # two lenses, two layers each
    assert "ALTI+ (Ferrando)" in sections and "norm-weighted (Kobayashi)" in sections
    html = sentence_report(translation, model="tiny", extra=lens_sections(translation, maps))
    assert html.count('class="map"') == 3 * 2 * 4 + 4
    long = dataclasses.replace(translation, source_ids=list(translation.source_ids) * MAX_ZEROED)
    kept, skipped = report_maps(translator.model, long, ["value_zeroing"], SPECIALS)
    assert kept == {} and "value zeroing" in skipped[0] and str(MAX_ZEROED) in skipped[0]
    assert lens_sections(translation, {}) == []

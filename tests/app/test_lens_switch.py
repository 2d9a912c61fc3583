"""The lens switch in the app (ui.shared.attention.lens_switch): on Translate, Decode step by step and Explain heads,
kept in the link; a layer-level lens (one map per layer) shows no head anywhere; each lens's note says what it
carries."""

from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app.test_svg_views import iframes
from tests.app_fixtures import APP, PAIRS, opened, page, shipped
from tests.chart_reading import chart_titled, charts, map_values, outlined_cells, values
from tests.conftest import SPECIALS
from transformer.data.corpora.teaching import align
from transformer.explain import sentence_aer
from transformer.explain.lenses import lens_maps
from ui.shared.attention.lens_switch import read_lens
from ui.shared.models.catalog import checkpoint_stamp
from ui.shared.models.loading import _load


def test_read_lens_accepts_the_known_lenses_only():
    assert read_lens({}) == (None, [])
    assert read_lens({"lens": "alti"}) == ("alti", [])
    lens, problems = read_lens({"lens": "<b>grad</b>"})
    assert lens is None and "Unknown lens" in problems[0] and "value_zeroing" in problems[0]


def test_translate_draws_the_chosen_lens_and_keeps_it_in_the_link(at):  # noqa: F811
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[3][0]).run()
    assert "lens" not in at.query_params  # raw: the default, not written
    at.selectbox(key="tr_lens").set_value("alti").run()
    assert not at.exception and at.query_params["lens"] == "alti"
    translation = at.session_state["tr_result"]
    expected = lens_maps(_model(at), translation.source_ids, translation.token_ids, "alti",
                         specials=SPECIALS).cross[0][0]
    z = map_values(charts(at)[0])  # cross-attention, layer 0, the one map of the layer
    assert np.allclose(z, expected.numpy(), atol=1e-5)
    assert (z.sum(1) < 1 + 1e-5).all() and (z.sum(1) < 1 - 1e-3).any()  # ALTI+: the prefix takes the rest
    assert not [s for s in at.selectbox if s.key == "tr_head"]  # one map per layer: no head to pick
    at.selectbox(key="tr_lens").set_value("norm").run()
    assert at.query_params["lens"] == "norm" and len(at.selectbox(key="tr_head").options) == 5
    shared = dict(at.query_params)
    opened = AppTest.from_file(APP, default_timeout=60)  # a reload: a new session with the same address
    opened.query_params.update({**shared, "lens": "rollout"})
    opened.switch_page("pages/1_Translate.py").run()
    assert not opened.exception and opened.selectbox(key="tr_lens").value == "rollout"
    assert not [w for w in opened.warning if "link" in w.value]


def _model(app):
    """The app's own model: the one its cached translator holds."""
    path = app.session_state["model_path"]
    return _load(path, checkpoint_stamp(path)).model


def test_a_bad_lens_in_the_link_says_so_and_shows_raw_weights(at):  # noqa: F811
    at.query_params.update({"text": PAIRS[1][0], "lens": "saliency"})
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception
    assert any("Unknown lens" in w.value for w in at.warning)
    assert at.selectbox(key="tr_lens").value == "raw"


def test_step_page_and_explain_heads_have_the_switch(at):  # noqa: F811
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    at.selectbox(key="step_lens").set_value("alti").run()
    assert not at.exception and at.query_params["lens"] == "alti"
    session = at.session_state["step_session"]
    prefix = session.current.live[0].prefix  # <s> and the first token: the query reads the latter
    expected = lens_maps(session.model, session.src_ids, [*prefix[1:], 2], "alti", specials=SPECIALS)
    cross_row = map_values(chart_titled(at, "cross-attention per head"))  # (H' = 1, S) of decoder layer 0
    assert np.allclose(cross_row, expected.cross[0][:, -1].numpy(), atol=1e-5)
    at.selectbox(key="step_lens").set_value("shift").run()
    assert any("reads the step after a token is chosen" in c.value for c in at.caption)
    at.selectbox(key="step_lens").set_value("value_zeroing").run()
    at.button(key="step_run_to_end").click().run()
    assert not at.exception and at.query_params["lens"] == "value_zeroing"
    z = map_values(charts(at)[-1])  # the finished hypothesis, through the same lens
    hyp = at.session_state["step_session"].finished[0]
    vz = lens_maps(session.model, session.src_ids, hyp.tokens, "value_zeroing", specials=SPECIALS).cross[0][0]
    assert np.allclose(z, vz.numpy(), atol=1e-5) and np.allclose(z.sum(1), 1, atol=1e-5)
    at.switch_page("pages/6_Explain_heads.py").run()
    at.text_input(key="ex_text").input(PAIRS[5][0]).run()
    at.multiselect(key="ex_off").set_value([("cross", 0, 0)]).run()
    at.selectbox(key="ex_ab_lens").set_value("shift").run()
    assert not at.exception and at.query_params["lens"] == "shift"
    base, off = (values(drawn) for drawn in charts(at)[-2:])
    assert base.shape == off.shape and not np.allclose(base, off)  # the head off changes the shifted map
    assert torch.tensor(base).sum(1).allclose(torch.ones(base.shape[0], dtype=torch.float64), atol=1e-5)


def test_the_teaching_models_gold_links_are_drawn_over_a_lens(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(root / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    app = AppTest.from_file(APP, default_timeout=180)
    sentence = "The young man buys a green bicycle."
    app.query_params.update({"model": "en-fr-teaching", "text": sentence, "lens": "value_zeroing", "layer": "1"})
    app.switch_page("pages/1_Translate.py").run()
    assert not app.exception, app.exception
    result = app.session_state["tr_result"]
    gold = align(sentence)
    assert result.text == gold.tgt
    heatmap = charts(app)[0]
    assert outlined_cells(heatmap, "gold link")  # the gold links outlined over the lens's map
    maps = lens_maps(_model(app), result.source_ids, result.token_ids, "value_zeroing", specials=SPECIALS)
    assert np.allclose(map_values(heatmap), maps.cross[1][0].numpy(), atol=1e-5)
    expected = sentence_aer(maps.cross, result.source_pieces, result.target_pieces, gold.links)
    text = next(m.value for m in app.markdown if m.value.startswith("**Alignment error rate**"))
    assert f"**{100 * expected.layer_mean[1]:.0f}%**" in text  # the sentence's AER is the lens's
    assert any("the test-split grid scores the raw weights" in c.value for c in app.caption)


def test_the_norm_lenss_layer_map_is_kobayashis_norm_of_the_summed_vector(tmp_path, monkeypatch):
    """Under the norm-weighted lens, "mean of heads" and the AER grid's mean column show the
    layer-level map ||Σ_h alpha^h_ij f^h(x_j)||, not the mean of the per-head maps; a head stays its own map."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(root / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    app = AppTest.from_file(APP, default_timeout=180)
    sentence = "The young man buys a green bicycle."
    app.query_params.update({"model": "en-fr-teaching", "text": sentence, "lens": "norm", "layer": "0"})
    app.switch_page("pages/1_Translate.py").run()
    assert not app.exception, app.exception
    result = app.session_state["tr_result"]
    maps = lens_maps(_model(app), result.source_ids, result.token_ids, "norm", specials=SPECIALS)
    layer_map, heads_mean = maps.layer_maps.cross[0][0].numpy(), maps.cross[0].mean(0).numpy()
    assert np.abs(layer_map - heads_mean).max() > 1e-3  # the two differ on this sentence: the test tells them apart
    z = map_values(charts(app)[0])
    assert np.allclose(z, layer_map, atol=1e-5)
    gold = align(sentence)
    expected = sentence_aer(list(maps.layer_maps.cross), result.source_pieces, result.target_pieces, gold.links)
    text = next(m.value for m in app.markdown if m.value.startswith("**Alignment error rate**"))
    assert f"**{100 * expected.heads[0][0]:.0f}%**" in text
    grid = map_values(chart_titled(app, "AER %, this sentence"))
    assert np.allclose(grid[:, -1], [100 * r[0] for r in expected.heads], atol=1e-6)
    assert any("layer-level" in c.value and "Σ_h" in c.value for c in app.caption)
    app.selectbox(key="tr_head").set_value(1).run()
    assert np.allclose(map_values(charts(app)[0]), maps.cross[0][1].numpy(), atol=1e-5)


def test_the_step_pages_norm_lens_adds_the_layers_own_row_under_the_heads(at):  # noqa: F811
    """On Decode step by step, under the norm-weighted lens the per-head rows get the layer's own
    row, Kobayashi et al.'s ||Σ_h alpha^h_ij f^h(x_j)|| (the package's layer map at this step), named and said."""
    from ui.shared.attention.lens_switch import LAYER_ROW_NOTE
    from ui.shared.attention.query_rows import LAYER_ROW

    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    heads = _model(at).config.n_heads
    assert map_values(chart_titled(at, "cross-attention per head")).shape[0] == heads  # raw weights: the heads
    at.selectbox(key="step_lens").set_value("norm").run()
    at.selectbox(key="step_layer").set_value(1).run()
    assert not at.exception
    session = at.session_state["step_session"]
    prefix = session.current.live[0].prefix
    maps = lens_maps(session.model, session.src_ids, [*prefix[1:], 2], "norm", specials=SPECIALS)
    for figure, family in zip(charts(at)[1:3], ("cross", "dec_self")):
        z = map_values(figure)  # (H + 1, Lk) of decoder layer 1
        assert z.shape[0] == heads + 1 and figure.labels("y")[-1] == LAYER_ROW
        assert np.allclose(z[:heads], getattr(maps, family)[1][:, -1].numpy(), atol=1e-5)  # each head's own
        layer_row = getattr(maps.layer_maps, family)[1][0, -1].numpy()
        assert np.allclose(z[-1], layer_row, atol=1e-5) and np.isclose(z[-1].sum(), 1, atol=1e-5)
        assert not np.allclose(z[-1], z[:heads].mean(0), atol=1e-4)  # the head-summed vector's norm, not a mean
    assert any(LAYER_ROW_NOTE in c.value for c in at.caption)


@pytest.mark.parametrize("lens", ["rollout", "alti", "value_zeroing"])
def test_a_layer_level_lens_shows_no_head_anywhere(monkeypatch, tmp_path, lens):
    at = opened(shipped(monkeypatch, tmp_path), "pages/1_Translate.py", model="en-fr-teaching", lens=lens, head="1")
    assert at.selectbox(key="tr_lens").value == lens
    assert not [s for s in at.selectbox if s.label == "Head"]  # one map per layer: nothing to pick
    assert not [w.value for w in at.warning if "heads 0 to 0" in w.value]  # the link's head is ignored
    assert "head" not in at.query_params
    drawn = charts(at)
    (aer_sentence,) = [c for c in drawn if c.title == "AER %, this sentence"]
    assert drawn[0].title.endswith("layer 0, all heads together")
    assert aer_sentence.labels("x") == ["all heads"]  # one column, the layer's map: no head
    (lines,) = [html for html in iframes(at) if 'class="hv"' in html]  # the head view
    assert 'class="head"' not in lines and ">head 0<" not in lines


def test_the_rollout_help_says_what_rollout_to_the_source_carries_and_what_not():
    from ui.shared.attention.lens_switch import NOTES

    note = " ".join(NOTES["rollout"].split())
    assert "mean cross-attention" in note and "no residual" in note
    assert "nothing through the decoder's self-attention" in note and "ALTI+" in note

"""The Translate page (AppTest, a tiny random-weight checkpoint): the translation and its heatmap, the model view,
beam search's n-best list, the view kept in the link, downloads, captions, the probability table, sampling's Draw
again, and the translation gate the page calls (ui.shared.models.translation_gate)."""

import re

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, PAIRS, SHIPPED, app, opened, page, selectbox
from tests.chart_reading import Drawn, charts, colour_domain, map_values
from transformer.charts.heatmap import heatmap
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import TranslationError, Translator
from transformer.model.checkpoint import load_checkpoint
from ui.shared.attention import families
from ui.shared.models.translation_gate import MAX_CHARS, MAX_SOURCE_TOKENS, translate
from ui.translate.probability_table import probability_table, rows


@pytest.fixture(scope="module")
def translator(checkpoints):
    return Translator(load_checkpoint(checkpoints / "tiny"))

def test_translate_shows_translation_and_a_stochastic_heatmap(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[3][0]).run()
    assert not at.exception
    assert any(m.value.startswith("### ") for m in at.markdown)
    heat = charts(at)[0]
    z = map_values(heat)
    assert heat.marks()[:2] == ["rect", "rect"] and colour_domain(heat) == [0, 1]
    assert z.shape == (len(heat.labels("y")), len(heat.labels("x"))) and np.allclose(z.sum(1), 1, atol=1e-5)
    n_src = len(PAIRS[3][0].split()) + 1  # word-level pieces + </s>
    assert z.shape[1] == n_src  # cross-attention by default: columns are the source
    emitted = at.session_state["tr_result"].target_pieces  # rows: one per emitted token, labelled with it
    assert z.shape[0] == len(emitted) and heat.data("rect")["row_label"][0] == emitted[0]
    assert at.selectbox(key="tr_head").value == -1 and "mean of heads" in charts(at)[0].title
    at.selectbox(key="tr_head").set_value(1).run()
    assert "head 1" in charts(at)[0].title
    at.radio(key="tr_family").set_value("enc_self").run()
    at.toggle(key="tr_hide").set_value(True).run()
    z = map_values(charts(at)[0])
    assert z.shape == (n_src - 1, n_src - 1)
    assert any("less than 1" in c.value for c in at.caption)  # hidden specials: rows no longer sum to 1
    at.text_input(key="tr_text").input("   ").run()
    assert not at.exception and at.info


def test_model_view_is_built_only_while_its_expander_is_open(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[3][0]).run()
    assert len(charts(at)) == 1  # closed: the one heatmap, no grid of every layer and head
    at.session_state["tr_model_view_open"] = True
    at.run()
    assert not at.exception
    heatmap, grid = charts(at)
    cross = at.session_state["tr_result"].attention.cross  # n_layers x (H, T, S)
    maps = grid.data("rect")[["layer", "head"]].drop_duplicates()  # one small map per layer and head
    assert len(maps) == len(cross) * cross[0].shape[0]
    at.session_state["tr_model_view_open"] = False
    at.run()
    assert len(charts(at)) == 1


def test_beam_translate_lists_nbest(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[0][0])
    at.radio(key="tr_method").set_value("beam").run()
    assert not at.exception
    result = at.session_state["tr_result"]
    assert result.alternatives and len(at.dataframe[0].value) == 1 + len(result.alternatives)
    assert any("prob-table" in m.value for m in at.markdown)  # the probabilities: HTML that wraps, not a grid


def test_translate_view_is_in_the_link_and_a_link_opens_it(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[0][0]).run()
    at.radio(key="tr_family").set_value("enc_self").run()
    at.selectbox(key="tr_head").set_value(2).run()
    assert at.query_params["model"] == "tiny" and at.query_params["text"] == PAIRS[0][0]
    assert (at.query_params["att"], at.query_params["layer"], at.query_params["head"]) == ("enc_self", "0", "2")
    assert at.query_params["search"] == "greedy" and "beam" not in at.query_params
    shared = dict(at.query_params)
    opened = AppTest.from_file(APP, default_timeout=60)  # a reload: a new session with the same address
    opened.query_params.update({**shared, "model": "tiny-ar", "search": "beam", "beam": "3", "layer": "1"})
    opened.switch_page("pages/1_Translate.py").run()
    assert not opened.exception and not [w for w in opened.warning if "link" in w.value]
    assert opened.session_state["model_path"].endswith("tiny-ar")
    assert opened.text_input(key="tr_text").value == PAIRS[0][0]
    assert opened.text_input(key="tr_text").label == "Arabic sentence (press Enter to translate)"
    assert opened.slider(key="tr_beam").value == 3 and opened.radio(key="tr_method").value == "beam"
    assert charts(opened)[0].title == "encoder self-attention, layer 1, head 2"
    assert selectbox(opened, "Layer").value == 1


def test_heatmap_downloads_name_the_head_and_offer_svg_and_csv(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[2][0]).run()
    selectbox(at, "Layer").set_value(1).run()
    at.selectbox(key="tr_head").set_value(1).run()
    assert charts(at)[0].title.endswith("layer 1, head 1")  # PNG: the chart's own toolbar, named by Streamlit
    assert [b.proto.label for b in at.get("download_button")] == [
        "Download all maps (.npz)", "Download all maps (.json)", "Download all maps (.csv)"]
    at.radio(key="chart_format").set_value("svg").run()
    svg = [b.proto for b in at.get("download_button") if b.proto.label == "SVG"]
    assert len(svg) == len(charts(at)) and svg[0].id.endswith("tr_heatmap_svg")  # one SVG button per chart


def test_captions_speak_of_each_family_and_explain_the_tokens(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[2][0]).run()
    at.radio(key="tr_family").set_value("enc_self").run()
    caption = next(c.value for c in at.caption if c.value.startswith("Rows are"))
    assert "source queries" in caption and "emitted" not in caption and "decoder" not in caption
    assert any("▁" in m.value and "<unk>" in m.value and "</s>" in m.value for m in at.markdown)


def test_n_best_scores_share_one_precision(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/1_Translate.py", model="en-fr-bible", search="beam", beam="4", nbest="3")
    nbest = at.dataframe[-1].value  # the n-best table (the probability table is HTML)
    assert len(nbest) == 3 and all(re.fullmatch(r"-\d+\.\d{3}", s) for s in nbest["normalised score"])


def test_a_long_translation_wraps_its_probability_table_and_keeps_labels_readable(monkeypatch, tmp_path, tiny_en_ar):
    pieces = [f"▁w{i}" for i in range(57)] + ["</s>"]
    wrapped = rows(pieces, [0.5] * 58)
    assert [len(r) for r in wrapped] == [10] * 5 + [8] and wrapped[-1][-1][:2] == (58, "</s>")
    assert "<th><bdi>&lt;/s&gt;</bdi></th>" in probability_table(pieces, [0.5] * 58)
    drawn = Drawn.of(heatmap(np.full((3, 90), 1 / 90), ["a", "b", "c"], [f"▁w{i}" for i in range(90)]))
    axis = drawn.view("rect")["encoding"]["x"]["axis"]
    assert axis.get("labelFontSize", drawn.spec["config"]["axis"]["labelFontSize"]) >= 10  # never the 7 px of old
    assert drawn.spec["config"]["axis"]["labelOverlap"] == "greedy"  # labels that would overlap are left out
    at = app(monkeypatch, tmp_path, tiny_en_ar)
    opened(at, "pages/1_Translate.py", model="tiny", text=" ".join(s for s, _ in PAIRS[:8]))
    assert not any(df.proto.id.endswith("tr_probs") for df in at.dataframe)  # no horizontally scrolled grid
    (table,) = [m.value for m in at.markdown if "prob-table" in m.value]
    assert table.count("<tr>") == 3 * -(-len(at.session_state["tr_result"].target_pieces) // 10)


def test_the_probability_table_never_rounds_a_sampled_piece_to_zero():
    table = probability_table(["▁le", "▁chat", "</s>"], [0.4123, 2.34e-5, 0.0009996])
    cells = re.findall(r"<td>([^<]*)</td>", table)
    assert cells == ["0.412", "2.3e-05", "1.0e-03"]
    assert all(float(c) > 0 for c in cells)


def test_translate_gives_probabilities_attention_and_nbest(translator):
    torch.manual_seed(0)
    greedy = translate(translator, PAIRS[0][0], SearchSettings())
    assert len(greedy.target_pieces) == len(greedy.token_probs) and all(0 < p <= 1 for p in greedy.token_probs)
    assert families.stacked(greedy.attention, "cross").shape[2] == len(greedy.target_pieces)
    beam = translate(translator, PAIRS[0][0], SearchSettings(beam_size=3, nbest=3))
    assert 1 <= 1 + len(beam.alternatives) <= 3
    with pytest.raises(TranslationError, match="Type a sentence"):
        translate(translator, "   ", SearchSettings())
    with pytest.raises(TranslationError, match=f"the app reads at most {MAX_SOURCE_TOKENS}"):
        translate(translator, "the " * MAX_SOURCE_TOKENS, SearchSettings())  # + </s>: one piece too many
    with pytest.raises(TranslationError, match=f"translates at most {MAX_CHARS:,} at a time"):
        translate(translator, "x" * (MAX_CHARS + 1), SearchSettings())


def test_translate_page_draws_again_with_attention(at):  # noqa: F811
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[0][0])
    at.radio(key="tr_method").set_value("sample").run()
    assert not at.exception, at.exception
    first = at.session_state["tr_result"]
    assert first.attention is not None and at.session_state["tr_request"][2].do_sample
    seen = {tuple(first.token_ids)}
    for _ in range(4):
        at.button(key="tr_draw_again").click().run()
        seen.add(tuple(at.session_state["tr_result"].token_ids))
    assert not at.exception and at.session_state["tr_request"][2].seed == 4
    assert len(seen) > 1  # a random-weight model at temperature 1 draws different outputs
    assert at.session_state["tr_result"].attention is not None

"""The pages' own chart builders (ui/*, no streamlit), read back from their Vega-Lite specs: training and metric
curves, the positional encodings, the snapshots' slider, the candidate bars' title, attribution bars and patching maps;
and the attention arithmetic the pages draw (the explorer's maps, Eq. 1 by hand)."""

import csv
import io
import json

import numpy as np
import pytest

from tests.app_fixtures import PAIRS, make_checkpoint
from tests.chart_reading import Drawn, colour_scale
from transformer.bidi import piece_labels
from transformer.charts import training_curves
from transformer.charts.render import to_svg
from transformer.decoding.translate import Translator
from transformer.explain.attribution import attribute
from transformer.model.checkpoint import load_checkpoint
from ui.explain import attribution_figures, head_maps
from ui.learn import positional_figures
from ui.learn.attention_steps import encoder_attention_steps
from ui.shared.attention import families
from ui.step import candidate_bars
from ui.train import metric_curves


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny"))


@pytest.fixture(scope="module")
def translator(checkpoint):
    return Translator(checkpoint)


def test_metric_curves_without_values_say_so():
    drawn = Drawn.of(metric_curves.metric_curves([{"step": 1, "train_loss": 2.0}], ["dev_bleu"]))
    assert drawn.marks() == ["text"] and drawn.data("text")["text"].tolist() == ["no values yet"]
    one = Drawn.of(metric_curves.metric_curves([{"step": 250, "dev_exact": 3.0}], ["dev_exact"]))
    assert one.data("line")[["x", "y"]].values.tolist() == [[250, 3.0]]  # one logged step: a point on an axis
    assert one.view("line")["encoding"]["x"]["scale"]["domain"] == [249, 251]  # around it, not a zero-width scale
    assert one.view("line")["encoding"]["y"]["scale"]["domain"] == pytest.approx([2.7, 3.3])  # one value: around it
    zeros = Drawn.of(metric_curves.metric_curves([{"step": s, "dev_exact": 0.0} for s in (1, 2)], ["dev_exact"]))
    assert zeros.view("line")["encoding"]["y"]["scale"]["domain"] == [-1.0, 1.0]


def test_positional_heatmap_is_a_cell_per_position_and_dimension_with_sparse_ticks():
    pe = np.random.default_rng(0).uniform(-1, 1, (200, 256))
    drawn = Drawn.of(positional_figures.positional_heatmap(pe))
    encoding = drawn.view("rect")["encoding"]
    assert encoding["y"]["title"] == "position" and encoding["x"]["title"] == "dimension i"
    assert encoding["x"]["axis"]["values"] == list(range(0, 256, 16)) and encoding["y"]["axis"]["values"][1] == 10
    assert np.allclose(drawn.data("rect")["value"], pe.ravel())
    assert encoding["color"]["scale"]["domain"] == [-1.0, 1.0]


def test_attention_views_shapes_rows_and_labels(translator):
    src = translator.prepare(PAIRS[3][0]).ids
    att = translator.attention_maps(src, [5, 6, 2])
    L, H = 2, 4
    enc_self, dec_self, cross = (families.stacked(att, f) for f in ("enc_self", "dec_self", "cross"))
    assert enc_self.shape == (L, H, len(src), len(src))
    assert cross.shape == (L, H, 3, len(src)) and dec_self.shape == (L, H, 3, 3)
    assert np.allclose(cross.sum(-1), 1, atol=1e-5) and np.allclose(dec_self.sum(-1), 1, atol=1e-5)
    assert np.allclose(np.triu(dec_self, 1), 0)  # causal
    # decoder rows are the emitted tokens; decoder self-attention columns what the decoder read
    assert families.labels(att, "cross") == (att.target_pieces, att.source_pieces)
    assert families.labels(att, "dec_self") == (att.target_pieces, att.target_input_pieces)
    assert att.target_input_pieces[0] == "<s>" and att.target_pieces[-1] == "</s>"
    m, rows, cols = families.matrix(att, "cross", 1, None, hide_special=True)
    assert m.shape == (len(rows), len(cols)) == (2, len(src) - 1) and "</s>" not in rows + cols
    assert np.allclose(m, cross[1].mean(0)[:2, :-1])
    notes = families.row_notes(att, "dec_self", hide_special=True)
    assert notes == piece_labels(att.target_input_pieces[:2])  # plain text: Vega draws "<s>" as it is
    m, rows, cols = families.matrix(att, "dec_self", 0, 3, hide_special=True)
    assert m.shape == (2, 2) and cols == att.target_input_pieces[1:] and np.allclose(m, dec_self[0, 3][:2, 1:])
    assert families.row_notes(att, "enc_self") is None
    grid, rows, cols = families.every_head(att, "cross", hide_special=True)  # what the model view draws
    assert grid.shape == (L, H, 2, len(src) - 1) and np.allclose(grid, cross[:, :, :2, :-1])
    assert "</s>" not in rows + cols
    npz = np.load(io.BytesIO(families.to_npz(att)))
    assert npz["cross"].shape == cross.shape and list(npz["target_pieces"]) == att.target_pieces
    exported = json.loads(families.to_json(att))
    assert np.asarray(exported["dec_self"]).shape == dec_self.shape
    assert exported["target_input_pieces"] == att.target_input_pieces
    rows = list(csv.DictReader(io.StringIO(families.to_csv(att))))
    assert len(rows) == enc_self.size + dec_self.size + cross.size
    row = next(r for r in rows if (r["family"], r["layer"], r["head"], r["query"], r["key"]) == ("cross", "1", "2",
                                                                                                   "1", "3"))
    assert float(row["weight"]) == pytest.approx(cross[1, 2, 1, 3], abs=1e-6)
    assert (row["query_token"], row["key_token"]) == (att.target_pieces[1], att.source_pieces[3])


def test_hand_computed_attention_matches_the_model(checkpoint):
    src = checkpoint.tokenizer.encode_source(PAIRS[6][0])
    for layer in (0, 1):
        s = encoder_attention_steps(checkpoint.model, src, layer, head=2, query=3)
        assert np.allclose(s.weights, s.model_weights, atol=1e-6)
        assert np.isclose(s.weights.sum(), 1) and s.output.shape == s.q.shape


def test_hand_computed_attention_masks_padding(checkpoint):
    src = checkpoint.tokenizer.encode_source(PAIRS[6][0])
    s = encoder_attention_steps(checkpoint.model, src, 1, head=0, query=2, pad_to=len(src) + 3)
    assert s.mask.dtype == np.bool_ and s.mask.tolist() == [True] * len(src) + [False] * 3
    assert np.isneginf(s.masked[-3:]).all() and np.array_equal(s.masked[:-3], s.scores[:-3])
    assert (s.weights[-3:] == 0).all() and np.allclose(s.weights, s.model_weights, atol=1e-6)
    unpadded = encoder_attention_steps(checkpoint.model, src, 1, head=0, query=2)
    assert np.allclose(unpadded.weights, s.weights[:-3], atol=1e-6)  # padding changes nothing for real tokens


def test_one_point_gives_sane_axes_distinct_colours_and_human_names():
    one = training_curves.training_curves([{"step": 25, "train_loss": 7.822314}]).to_dict()["vconcat"][0]["layer"][0]
    assert one["encoding"]["x"]["scale"]["domain"] == [24, 26] and one["encoding"]["x"]["axis"]["format"] == "~d"
    lo, hi = one["encoding"]["y"]["scale"]["domain"]
    assert lo < 7.822314 < hi and hi - lo > 1 and one["encoding"]["y"]["axis"]["format"] == ",~f"  # no "1e+2"
    records = [{"step": 25, "train_loss": 7.822314, "lr": 1e-4}, {"step": 25, "dev_loss": 7.9}]
    loss, rate = training_curves.training_curves(records).to_dict()["vconcat"]
    lines = loss["layer"][0]["encoding"]
    assert lines["color"]["scale"]["domain"] == ["train loss", "dev loss"]
    blue, orange = lines["color"]["scale"]["range"]
    assert blue != orange
    assert {blue, orange} == {training_curves.COLORS["train_loss"], training_curves.COLORS["dev_loss"]}
    assert rate["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["learning rate"]
    curve = Drawn.of(metric_curves.metric_curves([{"step": 25, "tokens_per_s": 812.5}], ["tokens_per_s"]))
    x = curve.view("line")["encoding"]["x"]
    assert x["scale"]["domain"] == [24, 26] and (x["axis"]["format"], x["axis"]["tickMinStep"]) == ("~d", 1)
    assert curve.data("line")["series"].tolist() == ["tokens / s"]
    assert metric_curves.metric_name("dev_aer_layer1") == "layer 1 (mean of heads)"


def test_the_snapshots_chart_names_its_step_in_the_title_and_moves_by_a_slider_of_steps():
    frames = [(s, np.full((2, 3), 1 / 3), ["▁a", "▁b"], ["▁x", "▁y", "▁z"]) for s in (25, 50, 60)]
    drawn = Drawn.of(head_maps.training_animation(frames, title="cross", query_name="q", key_name="k"))
    (slider,) = [p for p in drawn.params() if "bind" in p]  # an input of its own, under the map (no Play to sit on)
    assert slider["bind"] == {"input": "range", "min": 25, "max": 60, "step": 5, "name": "step "}
    assert slider["value"] == 60  # the newest snapshot first
    title = drawn.spec["title"]["text"]["expr"]  # the shown snapshot's step, in the title (left, off the toolbar)
    assert title.startswith('"cross: step " + [25, 50, 60][') and drawn.spec["title"]["subtitle"]
    svg = to_svg(drawn.spec)
    assert "cross: step 60" in svg and "▁a" in svg


def test_a_patching_map_never_stretches_its_colours_over_rounding_noise():
    noise = [[1e-6, -2e-6], [0.0, 3e-7]]
    heat = attribution_figures.patching_map(noise, ["layer 0", "layer 1"], ["h0", "h1"], title="t", scale=4e-7)
    low, high = colour_scale(Drawn.of(heat))["domain"]
    assert high == -low >= attribution_figures.MIN_SCALE > 1e-3  # all four cells near white
    real = attribution_figures.patching_map([[0.8, -0.1]], ["layer 0"], ["h0", "h1"], title="t", scale=1.2)
    assert colour_scale(Drawn.of(real))["domain"][1] == 1.2  # a real difference keeps its own scale


WOMAN = "the woman reads a book ."


def test_attribution_bars_have_axis_titles_and_say_why_token_0_has_no_prefix(translator):
    translation = translator.translate(WOMAN)
    first = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 0)
    panels = Drawn.of(attribution_figures.attribution_bars(first)).views()
    titles = [" ".join(p["title"]["text"]) if isinstance(p["title"]["text"], list) else p["title"]["text"]
              for p in panels]
    assert any("empty" in t and "read only <s>" in t for t in titles if t.startswith("target prefix"))
    titled = lambda channel: [p["encoding"][channel].get("title") for p in panels]  # noqa: E731
    assert all(titled("x")) and len(titled("x")) == 2 * len(first.methods)
    assert len([t for t in titled("y") if t]) == len(first.methods)  # one per row of bars, on the left
    later = attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, 2)
    titles = [str(p["title"]) for p in Drawn.of(attribution_figures.attribution_bars(later)).views()]
    assert "empty" not in " ".join(titles)


def test_the_sampling_charts_title_stands_above_its_legend():
    bars = candidate_bars.ordered([1, 2], ["▁a", "▁b"], [0.6, 0.4], chosen={1}, tempered=[0.5, 0.5],
                                  sampled=[0.5, 0.5])
    drawn = Drawn.of(candidate_bars.candidates_chart(bars, title="next token",
                                                     subtitle="model → temperature → drawn from", kept=2))
    assert (drawn.title, drawn.subtitle) == ("next token", "model → temperature → drawn from")  # over everything
    assert drawn.spec["config"]["title"]["anchor"] == "start"  # at the left, where the legend starts: not centred
    legend = drawn.view("bar")["encoding"]["color"]["legend"]
    assert (legend["orient"], legend["direction"]) == ("top", "horizontal")  # Vega lays it under the title


def test_a_single_logged_step_gets_one_tick_not_half_steps_printed_twice():
    from ui.train.metric_curves import metric_curves

    x = Drawn.of(metric_curves([{"step": 250, "tokens_per_s": 1234.0}], ["tokens_per_s"])).view("line")["encoding"]["x"]
    assert x["scale"]["domain"] == [249, 251]  # a range around the one step
    assert (x["axis"]["format"], x["axis"]["tickMinStep"]) == ("~d", 1)  # whole steps: never "250 250" at halves
    two = metric_curves([{"step": 250, "tokens_per_s": 1.0}, {"step": 500, "tokens_per_s": 2.0}], ["tokens_per_s"])
    assert "domain" not in Drawn.of(two).view("line")["encoding"]["x"]["scale"]  # more than one step: Vega's own

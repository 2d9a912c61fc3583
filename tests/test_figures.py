"""Figure builders and the attention arithmetic behind the pages (no streamlit)."""

import csv
import io
import json

import numpy as np
import pytest
import torch

from tests.app_fixtures import PAIRS, make_checkpoint
from tests.chart_reading import Drawn
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import TranslationError, Translator
from transformer.model.checkpoint import load_checkpoint
from ui.learn import positional_figures
from ui.learn.attention_steps import encoder_attention_steps
from ui.shared import heatmaps
from ui.shared.attention import families
from ui.shared.models.translation_gate import MAX_CHARS, MAX_SOURCE_TOKENS, follow_prefix, translate
from ui.train import metric_curves


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny"))


@pytest.fixture(scope="module")
def translator(checkpoint):
    return Translator(checkpoint)


def test_heatmap_is_one_trace_with_fixed_scale_and_unique_labels():
    w = np.random.default_rng(0).dirichlet(np.ones(3), size=2)  # (2, 3), rows sum to 1
    fig = heatmaps.attention_heatmap(w, ["▁le", "▁le"], ["a", "b", "c"])
    (trace,) = fig.data
    assert trace.type == "heatmap" and (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert list(trace.y) == [0, 1] and list(fig.layout.yaxis.ticktext) == ["▁le", "▁le"]  # repeats stay rows
    assert np.allclose(np.asarray(trace.z), w) and trace.customdata[1][2][:2].tolist() == ["▁le", "c"]
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top
    with pytest.raises(ValueError):
        heatmaps.attention_heatmap(w, ["x"], ["a", "b", "c"])


def test_heatmap_leaves_room_for_long_tokens_and_few_rows():
    short = heatmaps.attention_heatmap(np.full((2, 3), 1 / 3), ["a", "b"], ["x", "y", "z"], title="t")
    long = heatmaps.attention_heatmap(np.full((2, 3), 1 / 3), ["a", "b"], ["x", "▁congregation", "z"], title="t")
    assert long.layout.margin.t > short.layout.margin.t  # rotated column labels do not run into the title
    assert long.layout.height - long.layout.margin.t >= 180  # two rows are not squeezed into slivers


def test_metric_curves_without_values_say_so():
    drawn = Drawn.of(metric_curves.metric_curves([{"step": 1, "train_loss": 2.0}], ["dev_bleu"]))
    assert drawn.marks() == ["text"] and drawn.data("text")["text"].tolist() == ["no values yet"]
    one = Drawn.of(metric_curves.metric_curves([{"step": 250, "dev_exact": 3.0}], ["dev_exact"]))
    assert one.data("line")[["x", "y"]].values.tolist() == [[250, 3.0]]  # one logged step: a point on an axis
    assert one.view("line")["encoding"]["x"]["scale"]["domain"] == [249, 251]  # around it, not a zero-width scale
    assert one.view("line")["encoding"]["y"]["scale"]["domain"] == pytest.approx([2.7, 3.3])  # one value: around it
    zeros = Drawn.of(metric_curves.metric_curves([{"step": s, "dev_exact": 0.0} for s in (1, 2)], ["dev_exact"]))
    assert zeros.view("line")["encoding"]["y"]["scale"]["domain"] == [-1.0, 1.0]


def test_model_view_has_a_heatmap_and_a_clickable_marker_per_head():
    maps = np.full((2, 3, 4, 5), 0.2)
    fig = heatmaps.model_view(maps)
    grids = [t for t in fig.data if t.type == "heatmap"]
    markers = [t for t in fig.data if t.type == "scatter"]
    assert len(grids) == len(markers) == 6
    assert [list(m.customdata[0]) for m in markers] == [[layer, head] for layer in range(2) for head in range(3)]
    assert all(h.hoverinfo == "skip" for h in grids)  # the marker takes hover and click (cells cannot)
    assert fig.layout.hoverdistance == -1 and fig.layout.dragmode is False
    assert (markers[5].xaxis, markers[5].yaxis) == ("x6", "y6")  # the sixth subplot: layer 1, head 2


# What Streamlit reports in the browser (captured with Chromium): a click on a marker, and a box select that
# caught the marker; a box over a subplot whose marker it missed has no point but names its axes.
CLICK = {"points": [{"curve_number": 9, "point_number": 0, "point_index": 0, "x": 2, "y": 1.5,
                     "customdata": [1, 1]}], "point_indices": [0], "box": [], "lasso": []}
BOX = {"points": [{"curve_number": 11, "point_number": 0, "customdata": [1, 2]}], "point_indices": [0],
       "box": [{"xref": "x6", "yref": "y6", "x": [-0.4, 4.4], "y": [-0.3, 3.3]}], "lasso": []}
EMPTY_BOX = {"points": [], "point_indices": [], "box": [{"xref": "x5", "yref": "y5", "x": [0, 1], "y": [0, 1]}],
             "lasso": []}


@pytest.mark.parametrize(("selection", "pick"), [(CLICK, (1, 1)), (BOX, (1, 2)), (EMPTY_BOX, (1, 1)),
                                                 ({"points": [], "box": [{"xref": "x"}]}, (0, 0)),
                                                 ({"points": [], "point_indices": [], "box": [], "lasso": []}, None),
                                                 ({}, None)])
def test_model_view_pick_reads_clicks_and_boxes(selection, pick):
    assert heatmaps.model_view_pick(selection, n_heads=3) == pick


def test_long_sentences_get_column_labels_that_do_not_overlap():
    for n in (5, 30, 60, 90, 127):
        fig = heatmaps.attention_heatmap(np.full((2, n), 1 / n), ["a", "b"], [f"▁word{i}" for i in range(n)])
        font, angle, ticks = fig.layout.xaxis.tickfont.size, fig.layout.xaxis.tickangle, fig.layout.xaxis.tickvals
        footprint = heatmaps.LINE_HEIGHT * font / abs(np.sin(np.radians(angle)))  # px along the axis per label
        assert footprint <= heatmaps.PLOT_WIDTH / n * (ticks[1] - ticks[0]), (n, font, angle)
        assert font >= heatmaps.MIN_FONT == 10 and (len(ticks) == n) == (n <= 58)
        longest = len(f"▁word{n - 1}")
        assert fig.layout.margin.t >= 50 + 0.6 * font * longest * abs(np.sin(np.radians(angle)))  # labels fit
    assert heatmaps.column_font(5) == (12, -60, 1) and heatmaps.column_font(60) == (10, -90, 2)


def test_positional_heatmap_leaves_room_for_ticks_and_axis_titles():
    fig = positional_figures.positional_heatmap(np.zeros((200, 256)))
    assert fig.layout.margin.l >= 70 and fig.layout.margin.b >= 50  # "200" and "position" beside each other
    assert fig.layout.yaxis.title.text == "position" and fig.layout.xaxis.title.text == "dimension i"


def test_chart_config_names_the_file_and_the_format():
    png = heatmaps.chart_config("cross-attention, layer 2, head 1")
    assert png["toImageButtonOptions"] == {"format": "png", "filename": "cross-attention-layer-2-head-1", "scale": 2}
    svg = heatmaps.chart_config("enc_self-layer-0-mean of heads", "svg")["toImageButtonOptions"]
    assert svg == {"format": "svg", "filename": "enc-self-layer-0-mean-of-heads"}


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
    assert notes == [f"<br>query read: {heatmaps.escape(p)}" for p in att.target_input_pieces[:2]]
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


def test_follow_prefix_follows_a_hypothesis_by_identity():
    assert follow_prefix((1, 5, 7), [(1, 5, 8, 2), (1, 4, 7, 9), (1, 5, 7, 3)]) == 2  # after Next: its extension
    assert follow_prefix((1, 5, 7, 3), [(1, 4, 7), (1, 5, 7)]) == 1  # after Back: its ancestor
    assert follow_prefix((1, 5, 7), [(1, 5, 8, 2), (1, 4, 7, 9)]) is None  # it left the beam
    assert follow_prefix(None, [(1,)]) is None


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


def test_links_read_valid_values_and_explain_the_rest():
    from ui.shared.state import links

    assert links.read_model({"model": "en-fr"}, ["en-fr", "run/x/best"]) == ("en-fr", [])
    key, problems = links.read_model({"model": "../../etc/passwd"}, ["en-fr"])
    assert key is None and "not on this server" in problems[0]
    assert links.read_search({"search": "beam", "beam": "3", "alpha": "1.23", "nbest": "2"}) == (
        {"method": "beam", "beam": 3, "alpha": 1.2, "nbest": 2}, [])
    values, problems = links.read_search({"search": "nucleus", "beam": "99", "alpha": "x", "nbest": "0"})
    assert values == {} and len(problems) == 4 and "between 2 and 8" in problems[1]
    n_layers = {"cross": 2, "enc_self": 3, "dec_self": 2}
    assert links.read_view({"att": "enc_self", "layer": "2", "head": "mean", "hide": "1"}, n_layers, 4) == (
        {"family": "enc_self", "layer": 2, "head": None, "hide": True}, [])
    values, problems = links.read_view({"att": "cross", "layer": "2", "head": "4"}, n_layers, 4)
    assert values == {"family": "cross"} and "layers 0 to 1" in problems[0] and "heads 0 to 3" in problems[1]
    assert links.read_text({"text": "a\x00b" + "c" * 2000})[0] == "ab" + "c" * (links.MAX_TEXT - 2)
    assert links.search_params("greedy") == {"search": "greedy", "beam": None, "alpha": None, "nbest": None,
                                             "temperature": None, "top_k": None, "top_p": None, "seed": None}
    assert links.view_params("cross", 1, None, False) == {"att": "cross", "layer": "1", "head": "mean", "hide": None}

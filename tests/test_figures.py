"""Figure builders and the attention arithmetic behind the pages (no streamlit)."""

import io
import json

import numpy as np
import pytest
import torch

from tests.app_fixtures import PAIRS, make_checkpoint
from transformer.checkpoint import load_checkpoint
from transformer.decoding import SearchSettings
from transformer.translate import TranslationError, Translator
from ui import attention, figures
from ui.attention import encoder_attention_steps
from ui.translation import MAX_WORDS, translate


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny"))


@pytest.fixture(scope="module")
def translator(checkpoint):
    return Translator(checkpoint)


def test_heatmap_is_one_trace_with_fixed_scale_and_unique_labels():
    w = np.random.default_rng(0).dirichlet(np.ones(3), size=2)  # (2, 3), rows sum to 1
    fig = figures.attention_heatmap(w, ["▁le", "▁le"], ["a", "b", "c"])
    (trace,) = fig.data
    assert trace.type == "heatmap" and (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert list(trace.y) == [0, 1] and list(fig.layout.yaxis.ticktext) == ["▁le", "▁le"]  # repeats stay rows
    assert np.allclose(np.asarray(trace.z), w) and trace.customdata[1][2][:2].tolist() == ["▁le", "c"]
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top
    with pytest.raises(ValueError):
        figures.attention_heatmap(w, ["x"], ["a", "b", "c"])


def test_heatmap_leaves_room_for_long_tokens_and_few_rows():
    short = figures.attention_heatmap(np.full((2, 3), 1 / 3), ["a", "b"], ["x", "y", "z"], title="t")
    long = figures.attention_heatmap(np.full((2, 3), 1 / 3), ["a", "b"], ["x", "▁congregation", "z"], title="t")
    assert long.layout.margin.t > short.layout.margin.t  # rotated column labels do not run into the title
    assert long.layout.height - long.layout.margin.t >= 180  # two rows are not squeezed into slivers


def test_beam_tree_escapes_token_labels():
    steps = [{"nodes": [{"parent": 0, "label": "</s>", "score": -0.1, "status": "finished", "slot": -1}]}]
    nodes = figures.beam_tree(steps).data[1]
    assert list(nodes.text) == ["&lt;s&gt;", "&lt;/s&gt;"]  # raw, plotly would read them as HTML tags


def test_metric_curves_without_values_say_so():
    fig = figures.metric_curves([{"step": 1, "train_loss": 2.0}], ["dev_bleu"])
    assert not fig.data and fig.layout.annotations[0].text == "no values yet"


def test_model_view_has_one_trace_per_head_naming_it():
    maps = np.full((2, 3, 4, 5), 0.2)
    fig = figures.model_view(maps)
    assert len(fig.data) == 6
    assert list(np.asarray(fig.data[5].customdata)[0, 0]) == [1, 2, "0", "0"]  # layer 1, head 2, positions
    labelled = figures.model_view(maps, ["q0", "q1", "q2", "<s>"], list("abcde"))
    assert list(np.asarray(labelled.data[5].customdata)[3, 4]) == [1, 2, "&lt;s&gt;", "e"]
    with pytest.raises(ValueError):
        figures.model_view(maps, ["q"], list("abcde"))


def test_beam_tree_links_children_to_their_parent_slot():
    steps = [{"nodes": [{"parent": 0, "label": "a", "score": -0.1, "status": "live", "slot": 0},
                        {"parent": 0, "label": "b", "score": -0.5, "status": "live", "slot": 1}]},
             {"nodes": [{"parent": 1, "label": "c", "score": -0.6, "status": "finished", "slot": -1}]}]
    edges, nodes = figures.beam_tree(steps).data
    assert list(nodes.x) == [0, 1, 1, 2]
    assert list(edges.y[6:8]) == [1.0, 0.0]  # c hangs under b (y 1), placed at rank 0 of step 2


def test_attention_views_shapes_rows_and_labels(translator):
    src = translator.prepare(PAIRS[3][0]).ids
    att = translator.attention_maps(src, [5, 6, 2])
    L, H = 2, 4
    enc_self, dec_self, cross = (attention.stacked(att, f) for f in ("enc_self", "dec_self", "cross"))
    assert enc_self.shape == (L, H, len(src), len(src))
    assert cross.shape == (L, H, 3, len(src)) and dec_self.shape == (L, H, 3, 3)
    assert np.allclose(cross.sum(-1), 1, atol=1e-5) and np.allclose(dec_self.sum(-1), 1, atol=1e-5)
    assert np.allclose(np.triu(dec_self, 1), 0)  # causal
    # decoder rows are the emitted tokens; decoder self-attention columns what the decoder read
    assert attention.labels(att, "cross") == (att.target_pieces, att.source_pieces)
    assert attention.labels(att, "dec_self") == (att.target_pieces, att.target_input_pieces)
    assert att.target_input_pieces[0] == "<s>" and att.target_pieces[-1] == "</s>"
    m, rows, cols = attention.matrix(att, "cross", 1, None, hide_special=True)
    assert m.shape == (len(rows), len(cols)) == (2, len(src) - 1) and "</s>" not in rows + cols
    assert np.allclose(m, cross[1].mean(0)[:2, :-1])
    notes = attention.row_notes(att, "dec_self", hide_special=True)
    assert notes == [f"<br>query read: {figures.escape(p)}" for p in att.target_input_pieces[:2]]
    m, rows, cols = attention.matrix(att, "dec_self", 0, 3, hide_special=True)
    assert m.shape == (2, 2) and cols == att.target_input_pieces[1:] and np.allclose(m, dec_self[0, 3][:2, 1:])
    assert attention.row_notes(att, "enc_self") is None
    grid, rows, cols = attention.every_head(att, "cross", hide_special=True)  # what the model view draws
    assert grid.shape == (L, H, 2, len(src) - 1) and np.allclose(grid, cross[:, :, :2, :-1])
    assert "</s>" not in rows + cols
    npz = np.load(io.BytesIO(attention.to_npz(att)))
    assert npz["cross"].shape == cross.shape and list(npz["target_pieces"]) == att.target_pieces
    exported = json.loads(attention.to_json(att))
    assert np.asarray(exported["dec_self"]).shape == dec_self.shape
    assert exported["target_input_pieces"] == att.target_input_pieces


def test_hand_computed_attention_matches_the_model(checkpoint):
    src = checkpoint.tokenizer.encode_source(PAIRS[6][0])
    for layer in (0, 1):
        s = encoder_attention_steps(checkpoint.model, src, layer, head=2, query=3)
        assert np.allclose(s.weights, s.model_weights, atol=1e-6)
        assert np.isclose(s.weights.sum(), 1) and s.output.shape == s.q.shape


def test_translate_gives_probabilities_attention_and_nbest(translator):
    torch.manual_seed(0)
    greedy = translate(translator, PAIRS[0][0], SearchSettings())
    assert len(greedy.target_pieces) == len(greedy.token_probs) and all(0 < p <= 1 for p in greedy.token_probs)
    assert attention.stacked(greedy.attention, "cross").shape[2] == len(greedy.target_pieces)
    beam = translate(translator, PAIRS[0][0], SearchSettings(beam_size=3, nbest=3))
    assert 1 <= 1 + len(beam.alternatives) <= 3
    with pytest.raises(TranslationError, match="Type a sentence"):
        translate(translator, "   ", SearchSettings())
    with pytest.raises(TranslationError, match=f"more than {MAX_WORDS} words"):
        translate(translator, "the " * (MAX_WORDS + 1), SearchSettings())

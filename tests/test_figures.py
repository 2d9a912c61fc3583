"""Figure builders and the attention arithmetic behind the pages (no streamlit)."""

import numpy as np
import pytest
import torch

from tests.app_fixtures import PAIRS, make_checkpoint
from transformer.checkpoint import load_checkpoint
from transformer.decoding import SearchSettings
from ui import figures
from ui.attention import compute_attention, encoder_attention_steps
from ui.translation import translate


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return load_checkpoint(make_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny"))


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


def test_model_view_has_one_trace_per_head_naming_it():
    maps = np.full((2, 3, 4, 5), 0.2)
    fig = figures.model_view(maps)
    assert len(fig.data) == 6
    assert list(np.asarray(fig.data[5].customdata)[0, 0]) == [1, 2]  # layer 1, head 2


def test_beam_tree_links_children_to_their_parent_slot():
    steps = [{"nodes": [{"parent": 0, "label": "a", "score": -0.1, "status": "live", "slot": 0},
                        {"parent": 0, "label": "b", "score": -0.5, "status": "live", "slot": 1}]},
             {"nodes": [{"parent": 1, "label": "c", "score": -0.6, "status": "finished", "slot": -1}]}]
    edges, nodes = figures.beam_tree(steps).data
    assert list(nodes.x) == [0, 1, 1, 2]
    assert list(edges.y[6:8]) == [1.0, 0.0]  # c hangs under b (y 1), placed at rank 0 of step 2


def test_attention_set_shapes_and_rows(checkpoint):
    tok = checkpoint.tokenizer
    src = tok.encode_source(PAIRS[3][0])
    att = compute_attention(checkpoint.model, tok, src, [5, 6, 2])
    L, H = 2, 4
    assert att.enc_self.shape == (L, H, len(src), len(src))
    assert att.cross.shape == (L, H, 4, len(src)) and att.dec_self.shape == (L, H, 4, 4)
    assert np.allclose(att.cross.sum(-1), 1, atol=1e-5)
    assert np.allclose(np.triu(att.dec_self, 1), 0)  # causal
    m, rows, cols = att.matrix("cross", 1, None, hide_special=True)
    assert m.shape == (len(rows), len(cols)) and "<s>" not in rows and "</s>" not in cols
    assert np.load(__import__("io").BytesIO(att.to_npz()))["cross"].shape == att.cross.shape


def test_hand_computed_attention_matches_the_model(checkpoint):
    src = checkpoint.tokenizer.encode_source(PAIRS[6][0])
    for layer in (0, 1):
        s = encoder_attention_steps(checkpoint.model, src, layer, head=2, query=3)
        assert np.allclose(s.weights, s.model_weights, atol=1e-6)
        assert np.isclose(s.weights.sum(), 1) and s.output.shape == s.q.shape


def test_translate_gives_probabilities_and_nbest(checkpoint):
    torch.manual_seed(0)
    greedy = translate(checkpoint, PAIRS[0][0], SearchSettings())
    assert len(greedy.best.pieces) == len(greedy.best.probs) and all(0 < p <= 1 for p in greedy.best.probs)
    assert greedy.attention.cross.shape[2] == len(greedy.best.pieces) + 1
    beam = translate(checkpoint, PAIRS[0][0], SearchSettings(beam_size=3, nbest=3))
    assert 1 <= len(beam.nbest) <= 3
    with pytest.raises(ValueError, match="Type a sentence"):
        translate(checkpoint, "   ", SearchSettings())

"""Figure builders and the attention arithmetic behind the pages (no streamlit)."""

import csv
import io
import json

import numpy as np
import pytest
import torch

from tests.app_fixtures import PAIRS, make_checkpoint
from tests.chart_reading import Drawn
from transformer.bidi import piece_labels
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import TranslationError, Translator
from transformer.model.checkpoint import load_checkpoint
from ui.learn import positional_figures
from ui.learn.attention_steps import encoder_attention_steps
from ui.shared.attention import families
from ui.shared.models.translation_gate import MAX_CHARS, MAX_SOURCE_TOKENS, follow_prefix, translate
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

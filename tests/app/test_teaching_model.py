"""The app's teaching-model views: gold links on the heatmap, per-head AER, the lexicon, random test sentences,
and the Train page's alignment charts. Runs the shipped teaching model (checkpoints/en-fr-teaching)."""

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import SHIPPED, app, opened
from tests.chart_reading import chart_titled, charts, curve_panels, curve_points, curves_of, map_values, outlined_cells
from transformer.data.corpora.teaching import align, build_teaching_corpus, vocabulary
from transformer.data.spec import CorpusSpec
from transformer.decoding.translate import Translator
from transformer.explain import AlignedExample, cross_attention_aer, link_cells, piece_words, sentence_aer
from transformer.model.checkpoint import load_checkpoint
from ui.shared.models.catalog import describe, find_models
from ui.shared.text.plain import plain
from ui.translate.teaching_panels import contraction_hint, expand_contractions, gold_links

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SENTENCE = "The young man buys a green bicycle."
# the grammar version of the shipped model's corpus (1 for a model trained before versions, which records none)
GRAMMAR = CorpusSpec.from_dict(json.loads((ROOT / "checkpoints" / "en-fr-teaching" / "metadata.json").read_text())
                               ["corpus"]).grammar


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def translate_page(at, text=SENTENCE, **params):
    at.query_params.update({"model": "en-fr-teaching", "text": text, **params})  # a link opens the page
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception, at.exception
    return at


def test_the_picker_says_what_each_shipped_model_is_for(at):
    summaries = {c.key: c.summary for c in find_models()}
    assert summaries["en-fr-teaching"].startswith("English → French: everyday sentences")
    assert summaries["en-fr-bible"].startswith("English → French: Bible verses")
    assert summaries["en-fr-bible-debian"] == "English → French: a mix: Bible verses + modern software text"
    translate_page(at)
    assert any(c.value == plain(summaries["en-fr-teaching"]) for c in at.sidebar.caption)  # shown as text
    shipped = load_checkpoint(ROOT / "checkpoints" / "en-fr-teaching")
    facts = describe(shipped.config, shipped.metadata, shipped.tokenizer)  # the Home page's table
    assert facts["best alignment head (test AER)"] == "layer 1, head 3: 18.0%"
    assert facts["test exact-match sentences"] == "96.2%"


def test_gold_links_mark_the_cells_of_the_heatmap_and_the_aer_matches_the_package(at):
    translate_page(at, att="cross", layer="1", head="0")
    result = at.session_state["tr_result"]
    gold = align(SENTENCE)
    assert result.text == gold.tgt  # the model translates this sentence of the grammar exactly
    heatmap = charts(at)[0]
    att = result.attention
    cells = link_cells(gold.links, piece_words(att.source_pieces), piece_words(att.target_pieces))
    assert outlined_cells(heatmap, "gold link") == sorted(cells)
    # every target word has a gold link, so every word's rows carry a marker
    assert {r for r, _ in cells} == {i for i, w in enumerate(piece_words(att.target_pieces)) if w is not None}
    expected = sentence_aer(att.cross, att.source_pieces, att.target_pieces, gold.links)
    text = next(m.value for m in at.markdown if m.value.startswith("**Alignment error rate**"))
    assert f"**{100 * expected.heads[1][0]:.0f}%**" in text
    assert "AER %, test split" not in [c.title for c in charts(at)]  # closed: not scored on the page's first run
    at.session_state["tr_aer_split_open"] = True  # what a click on the expander sends
    at.run()
    sentence_chart = chart_titled(at, "AER %, this sentence")
    sentence_grid = map_values(sentence_chart)
    assert np.allclose(sentence_grid[:, :-1], 100 * np.array(expected.heads))
    assert np.allclose(sentence_grid[:, -1], 100 * np.array(expected.layer_mean))
    assert sentence_chart.labels("x")[-1] == "mean" and sentence_chart.labels("y") == ["0", "1"]
    best_head = np.unravel_index(np.argmin(sentence_grid[:, :-1]), sentence_grid[:, :-1].shape)
    assert outlined_cells(sentence_chart, "best") == [tuple(int(i) for i in best_head)]  # the best head outlined
    split_chart = chart_titled(at, "AER %, test split")
    split_grid = map_values(split_chart)
    translator = Translator(ROOT / "checkpoints" / "en-fr-teaching")
    examples = [AlignedExample(p.src, p.tgt, p.links, p.possible) for p in build_teaching_corpus(0, GRAMMAR).test]
    split = cross_attention_aer(translator.model, translator.tokenizer, examples)
    assert np.allclose(split_grid, 100 * np.column_stack([split.heads, split.layer_mean]))
    assert outlined_cells(split_chart, "best") == [split.best[:2]]
    best = next(m.value for m in at.markdown if m.value.startswith("Best head on the test split"))
    assert f"layer {split.best[0]}, head {split.best[1]}, AER {100 * split.best[2]:.1f}% over 500 sentences" in best
    at.radio(key="tr_family").set_value("enc_self").run()
    assert charts(at)[0].title.startswith("encoder self-attention")
    assert outlined_cells(charts(at)[0], "gold link") == []  # gold links belong to cross-attention only


def test_sentences_outside_the_grammar_or_translated_differently_say_why_there_are_no_links(at):
    translate_page(at, text="Colourless green ideas sleep furiously.")
    assert any("outside the teaching grammar" in i.value for i in at.info)
    assert charts(at) and all(outlined_cells(c, "gold link") == [] for c in charts(at) if "rect" in c.marks())


def test_random_sentence_comes_from_the_test_split_and_the_lexicon_is_listed(at):
    translate_page(at)
    assert "bicycle → vélo" not in "\n".join(m.value for m in at.markdown)  # closed: the lexicon is not built
    at.session_state["words_known_open"] = True  # what a click on the expander sends
    at.button(key="tr_text_random").click().run()
    assert not at.exception
    test_sources = {p.src for p in build_teaching_corpus(0, GRAMMAR).test}
    assert at.session_state["tr_text"] in test_sources and at.session_state["tr_text"] != SENTENCE
    assert at.session_state["tr_result"].source == at.session_state["tr_text"]
    listed = "\n".join(m.value for m in at.markdown)
    for category, pairs in vocabulary(GRAMMAR).items():  # the words of the grammar the model was trained on
        assert f"**{category}** ({len(pairs)})" in listed
    assert "bicycle → vélo" in listed


def test_the_words_are_searchable(at):
    translate_page(at)
    at.session_state["words_known_open"] = True
    at.run()
    at.text_input(key="words_known_search").set_value("chat").run()
    listed = "\n".join(m.value for m in at.markdown)
    assert "cat → chat" in listed and "bicycle → vélo" not in listed
    at.text_input(key="words_known_search").set_value("zzzq").run()
    assert any("No word of the teaching grammar contains “zzzq”" in i.value for i in at.info)


def test_a_sentence_outside_the_grammar_gets_the_nearest_one_it_has(at):
    translate_page(at, text="The yong man buy a green bicycle")
    assert any("outside the teaching grammar" in i.value for i in at.info)
    hint = next(m.value for m in at.markdown if m.value.startswith("Nearest sentence the grammar has:"))
    assert hint == "Nearest sentence the grammar has: **The young man buys a green bicycle.**"
    at.button(key="tr_text_nearest").click().run()
    assert at.session_state["tr_text"] == "The young man buys a green bicycle."
    assert not any("outside the teaching grammar" in i.value for i in at.info)


def test_train_page_plots_alignment_error_rates_of_a_teaching_run(at, tmp_path):
    root = tmp_path / "runs" / "teaching"
    root.mkdir(parents=True)
    status = {"state": "finished", "pid": os.getpid(), "step": 500, "max_steps": 500, "updated": time.time()}
    (root / "status.json").write_text(json.dumps(status))
    records = [{"step": 250, "train_loss": 2.0, "lr": 1e-3, "tokens_per_s": 5000.0, "elapsed": 60.0},
               {"step": 250, "elapsed": 61.0, "dev_loss": 1.9, "dev_bleu": 15.0, "dev_chrf": 43.0, "dev_exact": 1.0,
                "dev_aer_best": 44.6, "dev_aer_best_head": "layer 1 head 0", "dev_aer_layer0": 60.0,
                "dev_aer_layer1": 50.0},
               {"step": 500, "elapsed": 130.0, "dev_loss": 0.2, "dev_bleu": 87.0, "dev_chrf": 94.0, "dev_exact": 69.0,
                "dev_aer_best": 24.5, "dev_aer_best_head": "layer 1 head 3", "dev_aer_layer0": 40.0,
                "dev_aer_layer1": 30.0}]
    (root / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    at.run()
    at.switch_page("pages/3_Train.py").run()
    assert not at.exception, at.exception
    aer_chart = chart_titled(at, "dev alignment error rate %")
    assert aer_chart.view("line")["encoding"]["y"]["title"] == "AER % (lower is better)"
    aer = aer_chart.data("line")
    assert list(dict.fromkeys(aer["series"])) == ["best head", "layer 0 (mean of heads)", "layer 1 (mean of heads)"]
    best = aer[aer["series"] == "best head"]
    assert best["y"].tolist() == [44.6, 24.5] and best["x"].tolist() == [250, 500]
    exact = chart_titled(at, "dev exact-match sentences %").data("line")
    assert exact["y"].tolist() == [1.0, 69.0]
    curves = curves_of(at)
    assert curve_panels(curves) == ["loss", "dev BLEU / chrF", "learning rate"]
    assert curve_points(curves, "dev_bleu") == [(250, 15.0), (500, 87.0)]
    assert curve_points(curves, "train_loss") == [(250, 2.0)] and curve_points(curves, "lr") == [(250, 1e-3)]


def test_training_probes_get_gold_cells_only_when_the_output_is_the_grammars_french():
    from transformer.data.tokenizer import Tokenizer
    from transformer.explain import format_links
    from transformer.runs import ProbeRecord
    from ui.shared.models.teaching_model import probe_gold_cells

    gold = align(SENTENCE)
    tokenizer = Tokenizer.load(ROOT / "checkpoints" / "en-fr-teaching" / "tokenizer.json")
    src = tokenizer.source_pieces(tokenizer.encode_source(gold.src))
    tgt = tokenizer.target_pieces(tokenizer.encode_target(gold.tgt)[1:])
    record = ProbeRecord(gold.src, gold.tgt, src, tgt, tgt, format_links(gold.links))
    cells = probe_gold_cells(record)
    assert cells == link_cells(gold.links, piece_words(src), piece_words(tgt)) and len(cells) >= len(gold.links)
    wrong = ProbeRecord(gold.src, "Le jeune homme achète un vélo.", src, tgt, tgt, format_links(gold.links))
    assert probe_gold_cells(wrong) == [] and probe_gold_cells(ProbeRecord(gold.src, gold.tgt, src, tgt, tgt)) == []


def test_outside_the_grammar_the_message_points_at_the_word_list_and_contractions_get_a_hint():
    _, why = gold_links("The spaceship lands.", None)
    assert "“Words the teaching model knows” at the top of this page" in why and "below" not in why
    assert expand_contractions("My sister doesn't eat bread. I'm sure we've won't") == \
        "My sister does not eat bread. I am sure we have will not"
    assert "does not eat" in contraction_hint("My sister doesn't eat bread.") and not contraction_hint(SENTENCE)
    dropped = SimpleNamespace(text="Ma sœur mange du pain.")  # what the shipped model writes: the negation is gone
    _, why = gold_links("My sister doesn't eat bread.", dropped)
    assert "write “My sister does not eat bread\\.”" in why


def test_the_translate_page_warns_about_a_contraction(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/1_Translate.py", model="en-fr-teaching", text="My sister doesn't eat bread.")
    assert any("write “My sister does not eat bread" in w.value for w in at.warning)

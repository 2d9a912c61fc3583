"""The Dataset page: the teaching test split as a table with links to one sentence, slices and the
projector; its pure pieces (links, filters, figures) and where its cache lives."""

import time
import urllib.parse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.chart_reading import Drawn, charts, map_values
from transformer.bidi import RLI
from transformer.charts.render import spec
from transformer.decoding.translate import find_checkpoint
from ui.dataset.background import cache_dir
from ui.dataset.per_slice_figures import slice_bars, slice_heads
from ui.dataset.projector_figures import CONTEXT_CHARS, around, projector_scatter
from ui.dataset.sentence_table import filtered, sentence_url

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "cache"))
    return AppTest.from_file(APP, default_timeout=120)


def dataset_page(at, **params):
    at.query_params.update(params)
    at.switch_page("pages/7_Dataset.py").run()
    for _ in range(240):  # the table is computed in a thread; the page polls it
        assert not at.exception, at.exception
        if "ds_job" in at.session_state and not at.session_state["ds_job"].running:
            break
        time.sleep(0.5)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")
def test_the_page_lists_the_teaching_test_split_with_links_to_each_sentence(at, tmp_path):
    dataset_page(at, model="en-fr-teaching", split="test", limit="10")
    result = at.session_state["ds_job"].result
    assert result is not None and len(result.table) == 10
    assert [i.value for i in at.info] == ["The first 10 of 500 sentences"]
    assert [m.label for m in at.metric][:3] == ["Sentences", "BLEU (corpus)", "chrF (corpus)"]
    assert at.metric[1].value == f"{result.corpus_scores['bleu']:.2f}"
    sentences = at.dataframe[1].value  # the slices' table first; worst chrF first
    assert list(sentences["source"]) == list(result.table.sort_values("chrf", kind="stable")["source"])
    first = sentences["source"].iloc[0]
    assert sentences["Translate"].iloc[0] == "Translate?" + urllib.parse.urlencode({"model": "en-fr-teaching",
                                                                               "text": first})
    query = urllib.parse.urlencode({"model": "en-fr-teaching", "text": first})
    opened = [m.value for m in at.markdown if m.value.startswith("[Translate](")]
    assert opened == [" · ".join(f"[{label}]({path}?{query})" for label, path in (
        ("Translate", "Translate"), ("Step by step", "Step_by_step"), ("Explain heads", "Explain_heads")))]
    slices = at.dataframe[0].value
    assert "plain" in list(slices["slice"]) and slices["sentences"].sum() >= 10
    assert list(tmp_path.glob("cache/datasets/dataset-*.safetensors")), "cached under EXPLORER_CACHE"
    at.selectbox(key="ds_sort").set_value("sentence").run()
    assert list(at.dataframe[1].value["source"]) == list(result.table["source"])
    at.text_input(key="ds_contains").set_value(first.split()[1]).run()
    assert first in list(at.dataframe[1].value["source"])
    assert at.query_params["split"] == "test" and at.query_params["limit"] == "10"
    # the projector is computed and drawn only once its expander is opened
    assert len(charts(at)) == 2 and not [c for c in charts(at) if "PCA" in c.title]  # the slices' two charts
    at.session_state["ds_projector_open"] = True
    at.run()
    (projector,) = [c for c in charts(at) if "PCA" in c.title]
    assert projector.title.endswith("tokens of 10 sentences, final encoder states (PCA)")
    n_tokens = int(projector.title.split(" tokens")[0].replace(",", ""))
    assert projector.marks() == ["circle"] and len(projector.data("circle")) == n_tokens  # a point per token
    assert {"token", "sentence", "position", "context"} <= {
        t["field"] for t in projector.view("circle")["encoding"]["tooltip"]}


@pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")
def test_a_wrong_split_in_the_link_is_said_and_the_test_split_shown(at):
    at.query_params.update(model="en-fr-teaching", split="train", limit="7")
    at.switch_page("pages/7_Dataset.py").run()  # the link is read on the page's first run
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("train" in w and "not offered here" in w for w in warnings), warnings
    assert any("Limit" in w and "is not one of 10" in w for w in warnings), warnings
    assert at.session_state["ds_split"] == "test"


def test_sentence_links_carry_the_model_and_the_text_and_refuse_what_a_link_cannot_carry():
    url = sentence_url("Step by step", "en-fr-bible", "In the beginning & the end", class_on=True)
    path, query = url.split("?")
    assert path == "Step_by_step"
    assert urllib.parse.parse_qs(query) == {"model": ["en-fr-bible"], "text": ["In the beginning & the end"],
                                            "class": ["1"]}
    assert sentence_url("Translate", None, "x" * 1001) is None


def test_the_filters_keep_only_the_rows_asked_for_sorted_worst_first():
    table = pd.DataFrame({"sentence": [0, 1, 2, 3], "source": ["A cat.", "A dog.", "The cat.", "Birds."],
                          "reference": ["Un chat.", "Un chien.", "Le chat.", "Oiseaux."],
                          "translation": ["Un chat.", "Un chat.", "Le chat.", "Des oiseaux."],
                          "chrf": [100.0, 40.0, 100.0, 70.0], "exact": [True, False, True, False],
                          "aer": [0.0, 50.0, np.nan, 20.0]})
    assert list(filtered(table, contains="CHAT")["sentence"]) == [0, 1, 2]  # "Un chat." is the 2nd's translation
    assert list(filtered(table, only_wrong=True, sort="chrf")["sentence"]) == [1, 3]
    assert list(filtered(table, max_chrf=80)["sentence"]) == [1, 3]
    assert list(filtered(table, sort="aer")["sentence"]) == [1, 3, 0, 2]  # worst first, none last
    assert list(filtered(table, rows=pd.Series([False, True, True, False]))["sentence"]) == [1, 2]


def test_the_figures_draw_one_bar_per_slice_one_row_per_slice_and_the_token_in_its_sentence():
    metrics = pd.DataFrame({"slice": ["plain", "negation"], "sentences": [7, 3], "chrf": [99.0, 80.5]})
    bars = Drawn.of(slice_bars(metrics, "chrf", "chrF"))
    data = bars.data("bar")
    assert data["slice"].tolist() == ["plain", "negation"] and data["value"].tolist() == [99.0, 80.5]
    assert data["sentences"].tolist() == [7, 3] and bars.view("bar")["encoding"]["x"]["sort"] == ["plain", "negation"]
    assert "sentences" in [t["field"] for t in bars.view("bar")["encoding"]["tooltip"]]
    heads = Drawn.of(slice_heads(np.array([[0.1, 0.2], [0.3, 0.4]]), ["a", "b"], ["0.0", "0.1"], "s"))
    assert map_values(heads).tolist() == [[0.1, 0.2], [0.3, 0.4]]
    assert heads.labels("y") == ["a", "b"] and heads.labels("x") == ["0.0", "0.1"]  # heads as categories
    points = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [0.0, 1.0, 0.5], "sentence": [0, 0, 1], "position": [0, 1, 0],
                           "token": ["▁The", "▁cat", "▁الكلب"], "context": ["[▁The] ▁cat", "▁The [▁cat]", "[▁الكلب]"],
                           "slice": ["plain", "plain", "negation"]})
    by_slice = Drawn.of(projector_scatter(points, "slice", "t"))
    assert by_slice.view("circle")["encoding"]["color"]["scale"]["domain"] == ["plain", "negation"]
    shown = by_slice.data("circle")
    assert shown.iloc[1][["token", "sentence", "position", "context"]].tolist() == ["▁cat", 0, 1, "▁The [▁cat]"]
    assert shown["token"][2].startswith(RLI) and shown["context"][2].startswith(RLI)  # right to left in the tooltip
    long = " ".join(["▁a"] * 100 + ["[▁x]"] + ["▁b"] * 100)  # a long sentence: the part around its token
    cut = around(long, "▁x")
    assert "[▁x]" in cut and len(cut) <= CONTEXT_CHARS + 2 and cut.startswith("…") and cut.endswith("…")
    by_position = Drawn.of(projector_scatter(points, "position", "t"))
    colour = by_position.view("circle")["encoding"]["color"]
    assert (colour["field"], colour["type"]) == ("position", "quantitative")  # a sequential scale
    assert by_position.data("circle")["position"].tolist() == [0, 1, 0]
    many = pd.concat([points] * 2_000, ignore_index=True)  # 6,000 points: over Altair's 5,000 rows
    assert len(spec(projector_scatter(many, "slice", "t"))["datasets"].popitem()[1]) == 6_000  # its SVG download


def test_the_cache_lives_outside_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("EXPLORER_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "attention-explorer" / "datasets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert not cache_dir().resolve().is_relative_to(ROOT)
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" / "datasets"


def test_a_corpus_path_outside_the_data_folders_is_never_read(tmp_path, monkeypatch):
    from tests.app_fixtures import make_checkpoint
    from tests.bad_input.test_hostile_models import with_metadata

    with_metadata(make_checkpoint(tmp_path / "checkpoints" / "tiny"),
                  corpus={"kind": "tsv", "src": "en", "tgt": "fr", "path": "/etc/passwd"})
    for name, value in {"EXPLORER_CHECKPOINTS": tmp_path / "checkpoints", "EXPLORER_RUNS": tmp_path / "runs",
                        "EXPLORER_DATA": tmp_path / "data", "EXPLORER_CACHE": tmp_path / "cache"}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("EXPLORER_ANY_TSV_PATH", raising=False)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(model="tiny")
    at.switch_page("pages/7_Dataset.py").run()
    assert not at.exception, at.exception
    assert any("not one this server reads" in w.value for w in at.warning), [w.value for w in at.warning]
    assert "ds_job" not in at.session_state


@pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")
def test_class_mode_draws_the_table_whole_and_arabic_reads_right_to_left(at):
    dataset_page(at, model="en-ar-bible", split="test", limit="10", **{"class": "1"})
    assert not at.dataframe  # class mode: st.table, every row on the page
    sentences = at.table[1].value
    assert len(sentences) == 10 and all(t.startswith(RLI) for t in sentences["translation"] if t)
    assert "Translate" not in sentences  # no link column in a static table: the links are under it
    assert any(m.value.startswith("[Translate](Translate?") and "class=1" in m.value for m in at.markdown)


@pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")
def test_an_uploaded_tsv_is_tabulated_and_a_bad_one_is_said_line_by_line(at):
    at.query_params.update(model="en-fr-teaching")
    at.switch_page("pages/7_Dataset.py").run()
    at.selectbox(key="ds_split").set_value("upload").run()
    assert "split" not in at.query_params  # an upload is not part of a link
    at.file_uploader(key="ds_upload").set_value(("bad.tsv", b"I see.\tJe vois.\njust one column\n",
                                                 "text/tab-separated-values")).run()
    warnings = [w.value for w in at.warning]
    assert any("line 2 is not" in w for w in warnings), warnings
    assert not at.dataframe  # nothing tabulated
    at.file_uploader(key="ds_upload").set_value(("mine.tsv", "\ufeffThe man sees the dog.\tL'homme voit le chien.\n"
                                                 "I see you.\tJe te vois.\n".encode(), "text/plain"))
    dataset_page(at)
    result = at.session_state["ds_job"].result
    assert list(result.table["source"]) == ["The man sees the dog.", "I see you."]
    assert result.split.description == "mine.tsv (uploaded)"
    assert len(at.dataframe[1].value) == 2  # slices by length first, then the sentences


@pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")
def test_stop_keeps_the_rows_done_and_go_on_finishes_the_split(at):
    at.query_params.update(model="en-fr-teaching", split="test", limit="200")
    at.switch_page("pages/7_Dataset.py").run()
    assert not at.exception, at.exception
    job = at.session_state["ds_job"]
    assert job.running, "200 sentences take seconds: the table is still being computed"
    for _ in range(600):  # the first chunk's rows, so that the page has a table to show
        if job.done or not job.running:
            break
        time.sleep(0.1)
    at.button(key="ds_stop").click().run()
    job.thread.join(timeout=60)
    assert not job.running, "the table did not stop within 60 s"
    at.run()
    assert not at.exception, at.exception
    done = len(job.result.table)
    assert not job.result.complete and done < 200
    assert f"Stopped on request after {done:,} of 200 sentences" in " ".join(i.value for i in at.info)
    assert at.metric[0].value == f"{done:,}"
    at.button(key="ds_more").click().run()  # "Go on from there": from the cached rows
    job = at.session_state["ds_job"]
    job.thread.join(timeout=120)
    assert job.result is not None and job.result.complete, job.error


@pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")
def test_a_table_stopped_before_its_first_rows_says_so_and_offers_to_go_on(at, monkeypatch):
    import ui.dataset.background as background

    real = background.dataset_table

    def stopped_at_once(*args, stop, **kwargs):
        stop.set()
        return real(*args, stop=stop, **kwargs)

    monkeypatch.setattr(background, "dataset_table", stopped_at_once)
    at.query_params.update(model="en-fr-teaching", split="test", limit="20")  # a job no other test has finished
    at.switch_page("pages/7_Dataset.py").run()
    job = at.session_state["ds_job"]
    job.thread.join(timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert [i.value.replace("\\", "") for i in at.info] == [  # shown as plain text: Markdown escaped
        "Stopped on request after 0 of 20 sentences; run it again to go on from there. (The rows so far are cached.)"]
    assert not at.metric and at.button(key="ds_more").label == "Go on from there"

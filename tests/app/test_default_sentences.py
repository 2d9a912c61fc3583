"""Issue 23, part A (AppTest): class-ready defaults and honest views on the shipped models.

The default sentence follows the model on every page, Explain heads keeps its sentence across views, Compare models
compares like with like, ties in head importance are said, the step page's messages and scores are honest, and the
views a person sets up are kept in the link.
"""

import json
import re
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import PAIRS, make_checkpoint, write_tsv
from tests.chart_reading import charts, colour_scale
from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from transformer.decoding.translate import Translator
from transformer.explain import HeadImportance
from transformer.model.checkpoint import load_checkpoint
from ui.explain import importance_ties
from ui.shared.models.catalog import find_models

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CHECKPOINTS = ROOT / "checkpoints"
BIBLE_DEFAULT = "In the beginning God created the heaven and the earth."
SENTENCE_PAGES = {"pages/2_Step_by_step.py": "step_text", "pages/4_Learn.py": "learn_sentence",
                  "pages/6_Explain_heads.py": "ex_text", "pages/1_Translate.py": "tr_text"}


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(CHECKPOINTS))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    return AppTest.from_file(APP, default_timeout=120)


def opened(at, page, **params):
    at.query_params.update(params)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def pick_model(at, name):
    at.sidebar.selectbox(key="_model_select").set_value(str(CHECKPOINTS / name)).run()
    assert not at.exception, at.exception


def in_grammar(text: str) -> bool:
    return align(normalize_text(text)) is not None


@pytest.mark.parametrize("page", list(SENTENCE_PAGES))
def test_the_teaching_model_opens_every_page_on_a_sentence_of_its_grammar(at, page):
    key = SENTENCE_PAGES[page]
    opened(at, page, model="en-fr-teaching")
    text = at.text_input(key=key).value
    assert text != BIBLE_DEFAULT and in_grammar(text), text


def test_switching_model_changes_the_default_sentence_but_never_a_typed_one(at):
    opened(at, "pages/2_Step_by_step.py", model="en-fr-bible")
    bible = at.text_input(key="step_text").value
    assert not in_grammar(bible)
    pick_model(at, "en-fr-teaching")
    teaching = at.text_input(key="step_text").value
    assert teaching != bible and in_grammar(teaching)
    assert at.query_params["text"] == teaching
    at.text_input(key="step_text").input("The old woman reads a book.").run()
    pick_model(at, "en-fr-bible")
    assert at.text_input(key="step_text").value == "The old woman reads a book."


def test_explain_heads_keeps_the_typed_sentence_and_its_link_across_views(at):
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching")
    typed = "The young man buys a green bicycle."
    at.text_input(key="ex_text").input(typed).run()
    for view in ("stats", "ablate", "importance", "ablate"):
        at.radio(key="ex_view").set_value(view).run()
        assert not at.exception, at.exception
    assert at.text_input(key="ex_text").value == typed
    assert at.query_params["text"] == typed


def test_switch_it_off_in_head_importance_lands_on_the_current_sentence(at):
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching")
    typed = "The young man buys a green bicycle."
    at.text_input(key="ex_text").input(typed).run()
    at.radio(key="ex_view").set_value("importance").run()
    at.session_state["ex_off"] = [("cross", 1, 2)]  # what "Switch it off" (head_views._open_in_ablation) sets,
    at.session_state["ex_view"] = "ablate"  # without computing every head's importance first
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key="ex_text").value == typed and at.query_params["text"] == typed


def _walk(node) -> list:
    """Every element under node, in the order the page shows them."""
    out = []
    for child in getattr(node, "children", {}).values():
        out += [child, *_walk(child)]
    return out


def test_compare_models_defaults_to_the_same_language_pair_and_keeps_the_partner_in_the_link(at):
    opened(at, "pages/6_Explain_heads.py", model="en-fr-bible", view="compare")
    box = at.selectbox(key="ex_other")
    partner = next(c for c in find_models() if c.path == box.value)
    assert partner.languages == ("en", "fr") and at.query_params["partner"] == partner.key
    box.set_value(str(CHECKPOINTS / "en-ar-bible")).run()
    assert at.query_params["partner"] == "en-ar-bible"
    assert len(charts(at)) == 2  # the two maps, no difference of French rows and Arabic rows
    shown = _walk(at.main)  # issue 37 item 13: the pickers stand above the maps they control
    picker = next(i for i, e in enumerate(shown) if e.type == "radio" and getattr(e, "key", None) == "ex_cmp_family")
    drawn = {id(e) for e in at.get("vega_lite_chart")}
    assert picker < min(i for i, e in enumerate(shown) if id(e) in drawn)
    assert any("writes French, the other Arabic" in i.value for i in at.info)
    shared = dict(at.query_params)
    again = AppTest.from_file(APP, default_timeout=120)  # the link opens the same comparison
    again.query_params.update(shared)
    again.switch_page("pages/6_Explain_heads.py").run()
    assert not again.exception and again.selectbox(key="ex_other").value == str(CHECKPOINTS / "en-ar-bible")


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    (root / "data").mkdir()  # inside checkpoints/: a folder the pages may read a metadata's corpus from
    tsv = write_tsv(root / "data" / "pairs.tsv", copies=4)
    for name, seed in (("tiny", 0), ("tiny-b", 1)):  # the same vocabulary, other weights: another output
        path = make_checkpoint(root / name, seed=seed)
        metadata = json.loads((path / "metadata.json").read_text())
        metadata["corpus"] = {"kind": "tsv", "src": "en", "tgt": "fr", "path": str(tsv), "dev_fraction": 0.1,
                              "test_fraction": 0.1}  # a corpus the app can load: a dev sample for importance
        (path / "metadata.json").write_text(json.dumps(metadata))
    return root


def test_a_difference_map_only_where_both_maps_have_the_same_tokens(tiny_pair, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tiny_pair))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = opened(AppTest.from_file(APP, default_timeout=60), "pages/6_Explain_heads.py", model="tiny", view="compare",
                text=PAIRS[3][0])
    mine, other = at.session_state["ex_result"], Translator(load_checkpoint(tiny_pair / "tiny-b")).translate(
        PAIRS[3][0])
    assert mine.target_pieces != other.target_pieces
    assert len(charts(at)) == 2 and any("the two outputs are different tokens" in i.value for i in at.info)
    at.radio(key="ex_cmp_family").set_value("enc_self").run()  # the same source pieces: rows mean the same
    maps = charts(at)
    assert len(maps) == 3 and colour_scale(maps[2])["domainMid"] == 0 and not at.info


def constructed_importance() -> HeadImportance:
    """Two layers of two heads per family; by BLEU five heads tie at 0, the log-likelihood tells them apart."""
    ll = {"enc_self": torch.tensor([[0.5, 0.1], [0.3, 0.0]]), "dec_self": torch.tensor([[0.2, 0.4], [0.05, 0.6]]),
          "cross": torch.tensor([[0.9, 0.7], [0.8, 0.01]])}
    bleu = {"enc_self": torch.tensor([[0.0, 0.0], [2.0, 0.0]]), "dec_self": torch.tensor([[0.0, 1.0], [-1.0, 3.0]]),
            "cross": torch.tensor([[5.0, 4.0], [0.0, 6.0]])}
    return HeadImportance(ll, bleu, -2.0, 20.0, sentences=8, bleu_sentences=8)


def test_a_bleu_ranking_breaks_ties_by_log_likelihood_and_says_so():
    result = constructed_importance()
    ranked = result.ranked("bleu")
    assert [v for _, v in ranked] == [6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, -1]
    zero = [head for head, v in ranked if v == 0]  # ordered by the drop in log-likelihood: 0.8, 0.5, 0.2, 0.1, 0.0
    assert zero == [("cross", 1, 0), ("enc_self", 0, 0), ("dec_self", 0, 0), ("enc_self", 0, 1), ("enc_self", 1, 1)]
    assert result.ties("bleu") == [(6, 11, 0.0)] and result.ties() == []
    assert result.tie_at(8, "bleu") == (6, 11, 0.0) and result.tie_at(6, "bleu") is None
    assert result.tie_at(11, "bleu") is None
    kept = result.keep_top(8, "bleu")  # the two of the five tied heads with the largest log-likelihood drop
    assert {("cross", 1, 0), ("enc_self", 0, 0)}.isdisjoint(kept.heads_off) and ("dec_self", 0, 0) in kept.heads_off
    assert importance_ties.ranking_note(result, "bleu", 5) is None  # the first five do not tie
    assert "heads 7 to 11 of 12 tie at +0.00 BLEU" in importance_ties.ranking_note(result, "bleu", 8)
    note = importance_ties.keep_note(result, 8, "bleu")
    assert note.startswith("The top 8 keeps 2 of the 5 heads that tie at +0.00 BLEU (ranks 7 to 11)")
    assert importance_ties.keep_note(result, 6, "bleu") is None
    assert importance_ties.keep_note(result, 8, "log_likelihood") is None


def test_head_importance_by_bleu_says_when_heads_tie(tiny_pair, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tiny_pair))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = opened(AppTest.from_file(APP, default_timeout=60), "pages/6_Explain_heads.py", model="tiny",
                view="importance")
    at.select_slider(key="ex_imp_n").set_value(8)
    at.select_slider(key="ex_imp_bleu").set_value(8).run()
    at.button(key="ex_imp_start").click().run()
    job = at.session_state["ex_imp_job"]
    job.thread.join(timeout=120)
    assert job.result is not None, job.error
    at.run()
    at.radio(key="ex_imp_by").set_value("bleu").run()
    assert not at.exception, at.exception
    runs = job.result.ties("bleu")
    assert runs  # random weights: most heads leave BLEU where it was
    tied = {i for first, end, _ in runs for i in range(first, end)}
    listed = [m.value for m in at.markdown if m.value[:2] in {f"{i}." for i in range(1, 6)}]
    assert len(listed) == 5 and [("(tie)" in line) for line in listed] == [i in tied for i in range(5)]
    notes = [i.value for i in at.info]
    assert (importance_ties.ranking_note(job.result, "bleu", 5) in notes) == any(first < 5 for first, _, _ in runs)
    first, end, _ = runs[0]
    at.slider(key="ex_imp_k").set_value(first + 1).run()
    note = importance_ties.keep_note(job.result, first + 1, "bleu")
    assert note is not None and note in [i.value for i in at.info]


def test_step_by_step_run_to_end_lists_the_n_best_and_explains_their_scores(at):
    opened(at, "pages/2_Step_by_step.py", model="en-fr-bible", search="beam", beam="4", nbest="3")
    for _ in range(3):  # the Hypothesis box is drawn, but the user never picks one
        at.button(key="step_next").click().run()
    at.button(key="step_run_to_end").click().run()
    assert not at.exception, at.exception
    assert not [i.value for i in at.info if "has left the beam" in i.value]
    session = at.session_state["step_session"]
    assert session.done and len(session.finished) > 3  # more finished than asked for: only 3 are listed
    (radio,) = [r for r in at.radio if r.label == "Open a hypothesis to see its attention"]
    labels = radio.options
    assert len(labels) == 3
    for label, hyp in zip(labels, session.result().hypotheses):
        found = re.search(r"log-probability (\S+) / penalty (\S+) = normalised score (\S+)\)", label)
        logp, penalty, total = map(float, found.groups())
        assert logp == round(hyp.score, 3) and total == round(hyp.normalized_score, 3)
        assert total == pytest.approx(logp / penalty, abs=2e-3) and logp != total
    assert any("length penalty" in c.value and "step panel" in c.value for c in at.caption)


def test_n_best_scores_share_one_precision(at):
    opened(at, "pages/1_Translate.py", model="en-fr-bible", search="beam", beam="4", nbest="3")
    nbest = at.dataframe[-1].value  # the n-best table (the probability table is HTML)
    assert len(nbest) == 3 and all(re.fullmatch(r"-\d+\.\d{3}", s) for s in nbest["normalised score"])


@pytest.mark.parametrize("page", list(SENTENCE_PAGES))
def test_an_over_long_text_is_refused_without_backticks_and_stays_out_of_the_link(at, page):
    key = SENTENCE_PAGES[page]
    opened(at, page, model="en-fr-teaching", text="The young man buys a green bicycle.")
    at.text_input(key=key).input("The cat sleeps. " * 70).run()  # 1,120 characters
    assert not at.exception, at.exception
    said = [e.value.replace("\\", "") for e in [*at.info, *at.warning]]  # as read: Markdown escapes undone
    said = [s for s in said if "1,000" in s]
    assert said and not any("`" in s for s in said), said
    assert at.query_params["text"] == "The young man buys a green bicycle."


def test_learn_keeps_layer_head_and_query_in_the_link(at):
    opened(at, "pages/4_Learn.py", model="en-fr-teaching")
    at.selectbox(key="learn_layer").set_value(1).run()
    at.selectbox(key="learn_head").set_value(3).run()
    at.session_state["learn_query"] = 2
    at.run()
    assert (at.query_params["layer"], at.query_params["head"], at.query_params["query"]) == ("1", "3", "2")
    shared = dict(at.query_params)
    again = opened(AppTest.from_file(APP, default_timeout=120), "pages/4_Learn.py", **shared)
    assert (again.selectbox(key="learn_layer").value, again.selectbox(key="learn_head").value) == (1, 3)
    assert again.session_state["learn_query"] == 2
    again.session_state["learn_tables_open"] = True  # the tables' expander, opened
    again.run()
    table = again.dataframe[1].value
    assert again.dataframe[0].value.index[0].startswith("q (") and len(table) > 2
    bad = opened(AppTest.from_file(APP, default_timeout=120), "pages/4_Learn.py", model="en-fr-teaching", head="9")
    assert any("Head '9' in the link does not exist" in w.value.replace("\\", "") for w in bad.warning)


def test_a_typed_reference_is_kept_in_the_link(at):
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching", view="search",
           text="The young man buys a green bicycle.")
    # not the grammar's own reference (that one fills the box by itself and goes without the link)
    at.text_input(key="ex_ref").input("Un jeune homme achète un vélo vert.").run()
    assert at.query_params["ref"] == "Un jeune homme achète un vélo vert."
    again = opened(AppTest.from_file(APP, default_timeout=120), "pages/6_Explain_heads.py", **dict(at.query_params))
    assert again.text_input(key="ex_ref").value == "Un jeune homme achète un vélo vert."
    rows = again.dataframe[0].value
    assert rows["output"].tolist()[2] == "reference (teacher-forced)"


def test_ablation_maps_open_on_the_head_switched_off_and_say_it_still_computes_its_weights(tiny_pair, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tiny_pair))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = opened(AppTest.from_file(APP, default_timeout=60), "pages/6_Explain_heads.py", model="tiny", view="ablate",
                text=PAIRS[3][0])
    at.multiselect(key="ex_off").set_value([("cross", 1, 2)]).run()
    assert not at.exception, at.exception
    assert (at.radio(key="ex_ab_family").value, at.session_state["ex_ab_layer"], at.selectbox(key="ex_ab_head").value
            ) == ("cross", 1, 2)
    base, changed = charts(at)
    assert "head 2" in base.title and "head 2" in changed.title and changed.subtitle == "(this head is off)"
    assert not base.subtitle  # the trained model's head is on
    assert any("still computes its attention weights" in c.value and "output is removed" in c.value
               for c in at.caption)
    at.selectbox(key="ex_ab_head").set_value(0).run()  # the user's own pick stays while the heads off do not change
    assert at.selectbox(key="ex_ab_head").value == 0
    at.multiselect(key="ex_off").set_value([("cross", 1, 2), ("enc_self", 0, 1)]).run()
    assert (at.radio(key="ex_ab_family").value, at.session_state["ex_ab_layer"], at.selectbox(key="ex_ab_head").value
            ) == ("enc_self", 0, 1)

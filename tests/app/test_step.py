"""Decode step by step (AppTest): Next, Back and Run to end, the hypothesis the page follows, the n-best list
and the names of its scores."""

import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import PAIRS, SHIPPED, app, opened, page, selectbox
from tests.chart_reading import charts
from tests.conftest import SPECIALS
from transformer.decoding.search import SearchSettings, search
from transformer.explain import views
from ui.shared.models.translation_gate import follow_prefix


def test_step_page_advances_goes_back_and_reaches_the_one_shot_result(at):
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    assert at.session_state["step_session"].n_steps == 2 and not at.exception
    assert [c.title for c in charts(at)] == ["top 5 next tokens", "cross-attention per head",
                                             "self-attention per head"]  # candidates, cross row, self row
    at.button(key="step_back").click().run()
    assert at.session_state["step_session"].n_steps == 1
    at.button(key="step_run_to_end").click().run()
    assert not at.exception
    session = at.session_state["step_session"]
    checkpoint_model = session.model

    one_shot = search(checkpoint_model, torch.tensor([session.src_ids]), SearchSettings(), specials=SPECIALS)[0].best
    assert session.result().best.tokens == one_shot.tokens
    assert any(m.value.startswith("**Result:**") for m in at.markdown)
    at.radio(key="step_method").set_value("beam").run()
    at.button(key="step_run_to_end").click().run()
    assert not at.exception and any(s.value == "Beam tree" for s in at.subheader)


def test_step_page_follows_a_picked_hypothesis_by_its_prefix(at):
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[9][0])
    at.radio(key="step_method").set_value("beam").run()
    at.slider(key="step_beam").set_value(4).run()
    for _ in range(3):
        at.button(key="step_next").click().run()
    followed = 0
    for _ in range(4):
        box = selectbox(at, "Hypothesis")
        last = len(box.options) - 1
        box.set_value(last).run()
        picked = at.session_state["step_hyp"]
        at.button(key="step_next").click().run()
        assert not at.exception
        now = at.session_state["step_hyp"]
        if any("has left the beam" in i.value for i in at.info):
            assert tuple(now) == tuple(at.session_state["step_session"].current.live[0].prefix)
            continue
        assert tuple(now[:len(picked)]) == tuple(picked) and len(now) == len(picked) + 1
        box = selectbox(at, "Hypothesis")
        rank = [tuple(h.prefix) for h in at.session_state["step_session"].current.live].index(tuple(now))
        read = next(m.value for m in at.markdown if "the decoder read" in m.value).split("**")[1]
        read = re.sub(r"\\(.)", r"\1", read).replace("\u2060", "")  # as shown: Markdown escapes undone
        assert box.options[box.value] == f"{rank}: {read}"  # the box shows the followed one, at its new rank
        followed += 1
    assert followed


def test_step_by_step_run_to_end_lists_the_n_best_and_explains_their_scores(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
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


TOTAL, NORMALISED = "log-probability", "normalised score"  # the sum of the tokens' log-probs; that over the penalty


def _step_page_words(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption]
                     + [o for r in at.radio for o in r.options])


def test_greedy_step_by_step_shows_no_length_penalty(monkeypatch, tmp_path, tiny_and_other):
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/2_Step_by_step.py", text="the cat sleeps .")
    at.button(key="step_run_to_end").click().run()
    words = _step_page_words(at)
    assert at.session_state["step_session"].done and "Result:" in words
    assert "α" not in words and "penalty" not in words and "score" not in words
    assert re.search(rf"{TOTAL} -\d+\.\d{{3}}", words)


def test_beam_names_the_total_and_the_normalised_score_the_same_everywhere(monkeypatch, tmp_path, tiny_and_other):
    at = opened(app(monkeypatch, tmp_path, tiny_and_other), "pages/2_Step_by_step.py", text="the cat sleeps .",
                search="beam", beam="3", nbest="2")
    at.button(key="step_next").click().run()
    assert re.search(rf"\({TOTAL} -?\d+\.\d{{3}}\)", _step_page_words(at))  # the step panel
    at.button(key="step_run_to_end").click().run()
    (labels,) = [r.options for r in at.radio if r.label == "Open a hypothesis to see its attention"]
    assert all(re.search(rf"\({TOTAL} \S+ / penalty \S+ = {NORMALISED} \S+\)$", label) for label in labels), labels
    words = re.sub(NORMALISED, "", _step_page_words(at), flags=re.IGNORECASE)
    assert not re.search(r"log-prob\b|\bscore\b", words), re.findall(r".{60}(?:log-prob\b|\bscore\b).{20}", words)
    session = at.session_state["step_session"]
    svg = views.beam_tree(session.history, lambda ids: [str(i) for i in ids], session.finished[0].tokens).document()
    assert f"{TOTAL} of the hypothesis" in svg and "score" not in svg.replace("data-summary", "")


def test_follow_prefix_follows_a_hypothesis_by_identity():
    assert follow_prefix((1, 5, 7), [(1, 5, 8, 2), (1, 4, 7, 9), (1, 5, 7, 3)]) == 2  # after Next: its extension
    assert follow_prefix((1, 5, 7, 3), [(1, 4, 7), (1, 5, 7)]) == 1  # after Back: its ancestor
    assert follow_prefix((1, 5, 7), [(1, 5, 8, 2), (1, 4, 7, 9)]) is None  # it left the beam
    assert follow_prefix(None, [(1,)]) is None

"""The candidate bars of a decoding step (ui.step.candidate_bars and ui.step.next_token), read back from the
chart's spec and data."""

import random

import pytest
from streamlit.testing.v1 import AppTest  # noqa: F401  (the app tests below run pages)

from tests.app_fixtures import PAIRS, page
from tests.chart_reading import Drawn, chart_titled
from ui.shared.state import links
from ui.shared.state.search import read_sampling, sampling_params
from ui.step import candidate_bars


def bars_of(drawn: Drawn, series: str = "model"):
    """One series' bars, top down."""
    data = drawn.data("bar")
    return data[data["series"] == series].sort_values("slot")


def outline_widths(drawn: Drawn) -> list[float]:
    """Each bar's outline width, as its strokeWidth condition gives it (chosen: the outline, else 0)."""
    width = drawn.view("bar")["encoding"]["strokeWidth"]
    assert width["condition"]["test"] == "datum.chosen"
    return [width["condition"]["value"] if c else width["value"] for c in bars_of(drawn)["chosen"]]


def test_bars_print_each_probability_mark_the_chosen_and_keep_one_order():
    ids, labels, probs = [7, 3, 9, 5, 4], ["▁le", "<s>", "▁la", "▁les", "▁l'"], [0.1, 0.5, 0.1, 0.25, 0.05]
    bars = candidate_bars.ordered(ids, labels, probs, chosen={9})
    assert bars.ids == [3, 5, 7, 9, 4]  # by probability, the tie (0.1) by id
    drawn = Drawn.of(candidate_bars.candidates_chart(bars, rows=6))
    model = bars_of(drawn)
    assert drawn.marks() == ["bar", "text"] and set(drawn.data("bar")["series"]) == {"model"}
    assert model["value"].tolist() == [0.5, 0.25, 0.1, 0.1, 0.05]
    assert model["text"].tolist() == ["0.500", "0.250", "0.100", "0.100", "0.050"]
    assert drawn.view("text")["encoding"]["text"]["field"] == "text"  # the numbers written beside the bars
    ticks = drawn.labels("y", "bar")
    assert ticks[3] == candidate_bars.MARK + "▁la" and ticks[0] == "<s>"  # Vega draws text: no escaping
    assert sum(t.startswith(candidate_bars.MARK) for t in ticks) == 1
    widths = outline_widths(drawn)
    assert widths[3] > 0 and sum(w > 0 for w in widths) == 1
    assert drawn.view("bar")["mark"]["stroke"] == candidate_bars.CHOSEN
    y = drawn.view("bar")["encoding"]["y"]  # six slots, first on top, whatever the step brings
    assert y["scale"]["domain"] == list(range(6)) and len(ticks) == 6 and ticks[5] == ""
    assert drawn.view("bar")["encoding"]["x"]["scale"]["domain"] == [0, 1]  # a fixed 0..1 axis
    shuffled = list(range(5))
    random.Random(0).shuffle(shuffled)
    again = candidate_bars.ordered([ids[i] for i in shuffled], [labels[i] for i in shuffled],
                                   [probs[i] for i in shuffled], chosen={9})
    assert candidate_bars.candidates_chart(again, rows=6).to_dict() == drawn.spec


def test_sampling_bars_show_the_model_after_temperature_and_the_drawn_from_distribution():
    bars = candidate_bars.ordered([4, 5, 6], ["a", "b", "c"], [0.6, 0.3, 0.1], {5}, tempered=[0.7, 0.25, 0.05],
                              sampled=[0.74, 0.26, 0.0])
    drawn = Drawn.of(candidate_bars.candidates_chart(bars, kept=2))
    colour = drawn.view("bar")["encoding"]["color"]
    assert colour["scale"]["domain"] == ["model", "temperature", "drawn from (2 tokens)"]
    assert colour["scale"]["range"] == [candidate_bars.MODEL, candidate_bars.TEMPERED, candidate_bars.SAMPLED]
    assert drawn.view("bar")["encoding"]["yOffset"]["field"] == "series"  # three bars a token
    assert bars_of(drawn, "drawn from (2 tokens)")["text"].tolist() == ["0.740", "0.260", "0.000"]
    assert colour["legend"] is not None  # the legend names the three
    assert candidate_bars.number(0.00031) == "3e-04" and candidate_bars.number(0.0005) == "0.001"
    assert drawn.labels("y", "bar")[1] == candidate_bars.MARK + "b"


def test_sampling_links_are_checked():
    values, problems = read_sampling({"temperature": "0.8", "top_k": "50", "top_p": "0.9", "seed": "1"})
    assert values == {"temperature": 0.8, "top_k": 50, "top_p": 0.9, "seed": 1} and not problems
    values, problems = read_sampling({"temperature": "9", "top_k": "x", "top_p": "0", "seed": "-2"})
    assert values == {} and len(problems) == 4 and "temperature '9'" in problems[0]
    params = sampling_params({"temperature": 0.8, "top_k": 50, "top_p": 0.9, "seed": 1})
    assert params["search"] == "sample" and params["beam"] is None and params["top_p"] == "0.9"
    greedy = links.search_params("greedy")
    assert all(greedy[name] is None for name in ("temperature", "top_k", "top_p", "seed"))
    assert links.read_search({"search": "sample"})[0] == {"method": "sample"}


def test_step_page_samples_marks_the_drawn_token_and_draw_again_keeps_the_step(at):  # noqa: F811
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.radio(key="step_method").set_value("sample").run()
    at.slider(key="step_temperature").set_value(1.5).run()
    for _ in range(2):
        at.button(key="step_next").click().run()
    assert not at.exception, at.exception
    session = at.session_state["step_session"]
    assert session.settings.do_sample and session.settings.temperature == 1.5 and session.n_steps == 2
    bars = chart_titled(at, "next token")
    assert bars.view("bar")["encoding"]["color"]["scale"]["domain"][:2] == ["model", "temperature"]
    drawn = session.current.nodes[0].token
    ticks = bars.labels("y", "bar")
    assert sum(t.startswith(candidate_bars.MARK) for t in ticks) == 1
    assert ticks.index(next(t for t in ticks if t.startswith(candidate_bars.MARK))) == \
        sorted(range(len(session.current.live[0].candidates.tokens)),
               key=lambda i: -session.current.live[0].candidates.probs[i]).index(
            session.current.live[0].candidates.tokens.index(drawn))
    seed = at.session_state["step_seed"]
    at.button(key="step_draw_again").click().run()
    assert not at.exception
    redrawn = at.session_state["step_session"]
    assert redrawn.settings.seed == seed + 1 and redrawn.n_steps == 2  # the new draw, at the same step


@pytest.mark.parametrize("text", ["0", "nan"])
def test_bad_temperature_in_a_link_is_refused_in_words(text):
    values, problems = read_sampling({"temperature": text})
    assert values == {} and problems

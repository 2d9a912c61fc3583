"""Links (ui.shared.state.links): each parameter read and checked; a bad one is said and the page falls back
to its default."""

import pytest

from tests.app_fixtures import PAIRS
from tests.chart_reading import charts


@pytest.mark.parametrize("params, message", [
    ({"model": "../../etc"}, "not on this server"), ({"layer": "9"}, "layers 0 to 1"),
    ({"head": "-3"}, "heads 0 to 3"), ({"att": "<script>"}, "Unknown attention"), ({"beam": "x"}, "Beam size"),
])
def test_a_bad_link_says_so_and_falls_back(at, params, message):
    at.query_params.update({"text": PAIRS[1][0], "search": "beam", **params})
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception
    assert any(message in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["model_path"].endswith("tiny") and charts(at)  # the default model, translated


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

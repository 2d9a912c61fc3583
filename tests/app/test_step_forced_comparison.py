"""The step page's side by side of the model's own translation and a forced one: the charts' numbers
read back from their spec and data, and the page drawing them for a session with a forced prefix only."""

import dataclasses

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest  # noqa: F401  (the app tests below run pages)

from tests.app_fixtures import PAIRS, at, checkpoints, page  # noqa: F401  (fixtures)
from tests.chart_reading import Drawn, chart_titled, charts, map_values  # noqa: F401  (fixtures)
from tests.explain.test_forced_comparison import one_word, translator  # noqa: F401  (fixtures)
from transformer.charts import theme
from transformer.decoding.session import DecodingSession
from transformer.explain.forced_comparison import compare_forced
from ui.step.candidate_bars import FORCED, FORCED_MARK
from ui.step.forced_comparison import MIN_SCALE, PIECE_NOTES, SIDE_BY_SIDE_PIECES, cross_chart, difference_chart


def dividers(drawn: Drawn) -> list[tuple[int, str]]:
    """The dashed lines across a map: (the row they stand above, their colour)."""
    rules = [i for i, mark in enumerate(drawn.marks()) if mark == "rule"]
    return [(int(drawn.data("rule", n)["row"][0]), drawn.view("rule", n)["mark"]["color"]) for n in range(len(rules))]


def test_each_sides_map_is_its_cross_attention_with_a_line_under_the_forced_rows(translator):  # noqa: F811
    both = compare_forced(translator, "the house is big", "la maison")
    sources = list(both.source_pieces)
    drawn = Drawn.of(cross_chart(both.forced, sources, 1, None, title="forced"))
    z = map_values(drawn)
    assert np.allclose(z, both.forced.cross[1].mean(0).numpy(), atol=1e-6)  # the mean of the heads
    assert dividers(drawn) == [(2, FORCED)]  # violet, under the 2 forced rows
    cells = drawn.data("rect")
    notes = cells[cells["col"] == 0].sort_values("row")["note"].tolist()  # a tooltip line per row
    assert notes[:2] == [PIECE_NOTES[True]] * 2 and notes[2:] == [PIECE_NOTES[False]] * (len(notes) - 2)
    marked = [FORCED_MARK in t for t in drawn.labels("y")]  # the forced rows' labels, as the page's text
    assert marked == [True, True] + [False] * (len(both.forced.pieces) - 2)
    own = Drawn.of(cross_chart(both.own, sources, 0, 3, title="own"))
    assert np.allclose(map_values(own), both.own.cross[0, 3].numpy()) and not dividers(own)


def test_the_difference_map_is_own_minus_forced_on_a_scale_centred_at_zero(one_word):  # noqa: F811
    both = next(c for c in one_word if c.difference is not None and c.rows > 2)
    drawn = Drawn.of(difference_chart(both, 1, 0))
    z = map_values(drawn)
    assert np.allclose(z, (both.own.cross[1, 0] - both.forced.cross[1, 0]).numpy(), atol=1e-6)
    top = max(float(np.abs(z).max()), MIN_SCALE)
    scale = drawn.view("rect", 1)["encoding"]["color"]["scale"]  # red: more weight in the model's own output
    assert (scale["domain"], scale["domainMid"]) == ([-top, top], 0)
    assert (scale["scheme"], scale["reverse"]) == (theme.DIVERGING, True)
    assert drawn.title == "own − forced, layer 1, head 0"
    assert dividers(drawn) == [(1, "black")]  # row 0 read the start token in both
    ticks = drawn.labels("y")  # "own→forced" where the pieces differ: row 0 always (forced)
    assert len(ticks) == both.rows and "→" in ticks[0]
    assert all(("→" in t) == (o != f) for t, o, f in zip(ticks, both.own.pieces, both.forced.pieces))
    assert [FORCED_MARK in t for t in ticks] == list(both.forced.forced[:both.rows])
    assert difference_chart(dataclasses.replace(both, difference=None), 0, None) is None


def test_no_blank_difference_map_when_the_forced_prefix_is_the_models_own(translator):  # noqa: F811
    own = translator.translate("the house is big").token_ids
    same = compare_forced(translator, "the house is big", own[:2])
    assert same.same and same.difference.abs().max() < 1e-6
    assert difference_chart(same, 1, None) is None  # the note says the difference is 0


def test_outputs_of_different_lengths_get_a_map_of_the_rows_both_have(one_word):  # noqa: F811
    both = next(c for c in one_word if len(c.own.token_ids) != len(c.forced.token_ids) and c.rows > 1)
    rows = min(len(both.own.token_ids), len(both.forced.token_ids))
    z = map_values(Drawn.of(difference_chart(both, 0, None)))
    assert z.shape == (rows, len(both.source_pieces))
    assert np.allclose(z, (both.own.cross_map(0)[:rows] - both.forced.cross_map(0)[:rows]).numpy(), atol=1e-6)


def _forced_session(app, prefix):
    old = app.session_state["step_session"]
    app.session_state["step_session"] = DecodingSession(old.model, old.src_ids, old.settings, specials=old.specials,
                                                       prefix=prefix)


def test_the_step_page_shows_the_side_by_side_for_a_forced_session_only(at):  # noqa: F811
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.button(key="step_run_to_end").click().run()
    titles = lambda: [c.title for c in charts(at)]  # noqa: E731
    assert not at.exception and not any(t.startswith(("own", "forced")) for t in titles())
    own = at.session_state["step_session"].result().best.tokens
    forced_id = next(t for t in range(4, 40) if t != own[0])
    _forced_session(at, [forced_id])  # as the page's "force a word" makes it (the same request: the page keeps it)
    at.run()
    assert not at.exception, at.exception
    assert "The model's own translation and the forced one" in [s.value for s in at.subheader]
    both = at.session_state["step_fc_result"][1]
    assert both.prefix == (forced_id,) and both.own.token_ids == tuple(own)
    assert [t for t in titles() if t.startswith(("own", "forced"))][:2] == ["own: layer 1, mean",
                                                                             "forced: layer 1, mean"]
    shown = [m.value for m in at.markdown]
    own_line = shown[shown.index(f"**Own** · log-probability **{both.own.score:.3f}**") + 1]
    forced_line = shown[shown.index(f"**Forced** · log-probability **{both.forced.score:.3f}**") + 1]
    assert forced_line.count(":violet-background[") == 1 and ":violet-background[" not in own_line  # forced marked
    assert forced_line.startswith(":violet-background[✎ ")  # the mark of the page's other lines
    at.selectbox(key="step_fc_head").set_value(2).run()
    forced_map = chart_titled(at, "forced: layer 1, head 2")
    assert np.allclose(map_values(forced_map), both.forced.cross[1, 2].numpy(), atol=1e-6)
    assert any(both.note[:30] in c.value.replace("\\", "") for c in at.caption)
    assert at.session_state["step_fc_result"][1] is both  # computed once for the same request
    with pytest.raises(AssertionError):
        torch.testing.assert_close(both.own.cross, both.forced.cross)  # the maps differ


@pytest.mark.parametrize("class_on", [False, True])
def test_a_long_source_or_class_mode_draws_the_two_maps_at_the_pages_width(at, class_on):  # noqa: F811
    """Half a page thinned a long source's labels to a few (or class mode's large ones): the maps one under the
    other keep as many source labels as the difference map under them, or more."""
    long = " ".join(source.rstrip(" .") for source, _ in PAIRS[:8]) + " ."  # over SIDE_BY_SIDE_PIECES pieces
    page(at, "pages/2_Step_by_step.py")
    if class_on:
        at.session_state["class_mode"] = True
    at.text_input(key="step_text").input(long).run()
    at.button(key="step_run_to_end").click().run()
    own = at.session_state["step_session"].result().best.tokens
    _forced_session(at, [next(t for t in range(4, 40) if t != own[0])])
    at.run()
    assert not at.exception, at.exception
    both = at.session_state["step_fc_result"][1]
    assert len(both.source_pieces) > SIDE_BY_SIDE_PIECES and both.difference is not None

    def laid_out(prefix):
        """The width a map is laid out for (its sizes' page, less the axes: theme.config) and how far its source
        labels turn (steeper for half a page)."""
        drawn = chart_titled(at, prefix)
        angle = drawn.view("rect")["encoding"]["x"]["axis"]["labelAngle"]
        return drawn.spec["config"]["view"]["continuousWidth"], angle

    assert laid_out("own:") == laid_out("forced:") == laid_out("own −")  # the difference map: always the page's
    assert laid_out("own:")[0] == (theme.CLASS if class_on else theme.NORMAL).page - 120
    assert chart_titled(at, "own:").labels("x") == chart_titled(at, "own −").labels("x")  # the same source labels

"""The views on the app's pages (AppTest, no browser): token lines under the Translate explorer and for a decoding
step, a beam tree node opened, Eq. 1 as a picture on Learn and Explain heads, the head views in the report."""

from __future__ import annotations

import re

from tests.app_fixtures import PAIRS, at, checkpoints, page  # noqa: F401  (pytest fixtures and the page opener)
from transformer.decoding.translate import Translator
from transformer.explain import StatisticsAccumulator
from transformer.model.checkpoint import load_checkpoint
from ui.explain import html_report


def iframes(app) -> list[str]:
    """The HTML of every st.iframe on the page."""
    found = []
    for el in app.get("iframe"):
        proto = el.proto
        found.append(getattr(proto, "srcdoc", "") or getattr(proto, "src", ""))
    return found


def test_translate_shows_the_explorers_family_as_token_lines(at):  # noqa: F811
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[3][0]).run()
    (lines,) = [h for h in iframes(at) if '<svg class="hv"' in h]
    translation = at.session_state["tr_result"]
    assert lines.count('class="tq"') == len(translation.target_pieces)  # cross: target queries, source keys
    assert lines.count('class="tk"') == len(translation.source_pieces)
    at.selectbox(key="tr_head").set_value(2).run()
    (lines,) = [h for h in iframes(at) if '<svg class="hv"' in h]
    shown = re.findall(r'<g class="hd" data-head="(\d)"[^>]*?(style="display:none")?>', lines)
    assert {h for h, hidden in shown if not hidden} == {"2"}  # the explorer's head alone is on


def test_step_page_draws_the_current_query_and_opens_a_clicked_node(at):  # noqa: F811
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.radio(key="step_method").set_value("beam").run()
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    (step_lines,) = [h for h in iframes(at) if "data-focus" in h]
    session = at.session_state["step_session"]
    assert set(re.findall(r'data-q="(\d+)"', step_lines)) == {str(len(session.current.live[0].prefix) - 1)}
    at.session_state["step_tree_open"] = "1:0"  # what a click on step 2's best node sends
    at.run()
    assert not at.exception
    assert any(m.value.startswith("**Step 2, rank 0**") for m in at.markdown)
    opened = [h for h in iframes(at) if "data-focus" in h and h != step_lines]
    assert opened and opened[-1].count('class="tq"') == 2  # the node's hypothesis: two output pieces


def test_learn_and_explain_draw_eq1_before_the_tables(at):  # noqa: F811
    page(at, "pages/4_Learn.py")
    (picture,) = [h for h in iframes(at) if '<svg class="eq"' in h]
    assert picture.count('class="w') >= 3 and '"reveal":"all"' in picture
    assert [e.label for e in at.expander if "tables" in e.label] == ["The same numbers as tables"]
    at.switch_page("pages/6_Explain_heads.py").run()
    at.radio(key="ex_view").set_value("cell").run()
    at.session_state["ex_cell_cell"] = (1, 0)
    at.run()
    assert not at.exception
    (picture,) = [h for h in iframes(at) if '<svg class="eq"' in h]
    assert '"key":0' in picture  # the clicked key is highlighted


def test_the_report_has_a_head_view_per_family(checkpoints):  # noqa: F811
    translator = Translator(load_checkpoint(checkpoints / "tiny"))
    translation = translator.translate(PAIRS[3][0], attention=True)
    accumulator = StatisticsAccumulator()
    att = translation.attention
    accumulator.add({f: getattr(att, f) for f in ("enc_self", "dec_self", "cross")},
                    {"enc_self": att.source_pieces, "cross": att.source_pieces, "dec_self": att.target_input_pieces})
    html = html_report.sentence_report(translation, model="tiny", stats=accumulator.result())
    assert html.count('<svg class="hv"') == 3 and html.count("<script>(function(root)") == 3

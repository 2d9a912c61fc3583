"""Right-to-left text: direction, isolates, joined Arabic pieces, and where the app's figures and pages use them."""

import html
import re

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, PAIRS, app, make_checkpoint, opened
from tests.chart_reading import Drawn, charts
from transformer.bidi import PDI, RLI, RLM, ZWJ, is_rtl, isolate, piece_labels
from transformer.charts.heatmap import heatmap
from ui.explain.html_report import sentence_report
from ui.shared.text.plain import rtl_html
from ui.step import candidate_bars
from ui.translate.probability_table import probability_table


def test_direction_follows_the_majority_of_strong_letters():
    assert is_rtl("في البدء خلق الله السموات والارض.")
    assert is_rtl("שלום")
    assert not is_rtl("In the beginning God created the heaven.")
    assert not is_rtl("")
    assert not is_rtl("123 . ,")
    assert is_rtl("الله God الارض")  # 8 Arabic letters, 3 Latin
    assert not is_rtl("Genesis الله")


def test_isolate_wraps_only_right_to_left_text():
    assert isolate("خلق الله.") == f"{RLI}خلق الله.{PDI}"
    assert isolate("the cat") == "the cat"
    assert isolate("") == ""


def test_pieces_of_one_word_are_joined_at_the_cut():
    # "▁ال" + "له": lam joins to the next letter, so both sides of the cut get a joiner; "▁" starts a new word.
    labels = piece_labels(["▁ال", "له", "▁خلق", "."])
    assert labels == [f"{RLM}▁ال{ZWJ}", f"{RLM}{ZWJ}له", f"{RLM}▁خلق", "."]


def test_no_joiner_after_a_letter_that_joins_only_backwards_or_before_a_new_word():
    # alef (U+0627) and waw never connect to the following letter; hamza connects to nothing.
    assert piece_labels(["▁ما", "ء"]) == [f"{RLM}▁ما", f"{RLM}ء"]
    assert piece_labels(["▁سو", "ف"]) == [f"{RLM}▁سو", f"{RLM}ف"]
    assert piece_labels(["▁بي", "▁ت"]) == [f"{RLM}▁بي", f"{RLM}▁ت"]
    assert piece_labels(["▁بي", "ء"]) == [f"{RLM}▁بي", f"{RLM}ء"]


def test_latin_special_and_marked_pieces():
    assert piece_labels(["▁the", "▁cat", "s", "</s>"]) == ["▁the", "▁cat", "s", "</s>"]
    # a harakah (a mark) after the last letter does not stop the join; a duplicate's zero-width space stays last
    labels = piece_labels(["▁بَ", "يت\u200b"])
    assert labels == [f"{RLM}▁بَ{ZWJ}", f"{RLM}{ZWJ}يت\u200b"]
    assert piece_labels([]) == []


def test_heatmap_labels_and_tooltip_show_arabic_pieces_marked_and_joined():

    rows = ["▁ال", "له", "</s>"]
    drawn = Drawn.of(heatmap(np.full((3, 2), 0.5), rows, ["▁God", "</s>"]))
    assert drawn.labels("y") == [f"{RLM}▁ال{ZWJ}", f"{RLM}{ZWJ}له", "</s>"]  # Vega draws text: no escaping
    assert drawn.labels("x") == ["▁God", "</s>"]
    cells = drawn.data("rect")
    assert cells[(cells["row"] == 1) & (cells["col"] == 0)]["row_label"].tolist() == [f"{RLM}{ZWJ}له"]


def test_candidates_are_alternatives_not_a_word():
    drawn = Drawn.of(candidate_bars.candidates_chart(candidate_bars.ordered([5, 6], ["▁ال", "له"], [0.6, 0.3],
                                                                             chosen=())))
    assert drawn.labels("y", "bar")[:2] == [f"{RLM}▁ال", f"{RLM}له"]
    assert drawn.data("bar")["token"].tolist() == [f"{RLM}▁ال", f"{RLM}له"]  # the tooltip's too


def test_rtl_html_escapes_and_lays_out_right_to_left():
    assert rtl_html("the cat") is None
    html = rtl_html("في البدء خلق <b>x</b> [y](e.com) *الله*", "h3")
    opening = 'dir="rtl" class="rtl-text" style="text-align: right">'
    assert html == f'<h3 {opening}في البدء خلق &lt;b&gt;x&lt;/b&gt; [y](e.com) *الله*</h3>'
    assert rtl_html("خلق\n\nالله") == f"<div {opening}خلق الله</div>"  # no blank line that would end the block


def test_translate_page_shows_an_arabic_translation_right_to_left(tmp_path, monkeypatch):

    from tests.app_fixtures import PAIRS
    from tests.chart_reading import charts

    make_checkpoint(tmp_path / "ckpts" / "en-ar", tgt="ar")
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "ckpts"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("pages/1_Translate.py").run()
    at.text_input(key="tr_text").input(PAIRS[0][0]).run()
    assert not at.exception, at.exception
    translation = at.session_state["tr_result"]
    assert is_rtl(translation.text)
    assert [m.value for m in at.markdown if "rtl-text" in m.value] == [rtl_html(translation.text, "h3")]
    (table,) = [m.value for m in at.markdown if "prob-table" in m.value]  # laid out right to left: first piece right
    assert 'dir="rtl"' in table
    assert re.findall(r"<th><bdi>(.*?)</bdi></th>", table) == [html.escape(p)
                                                               for p in piece_labels(translation.target_pieces)]
    rows = charts(at)[0].labels("y")  # cross-attention rows: the Arabic pieces
    assert all(label.startswith(RLM) for label, p in zip(rows, translation.target_pieces) if is_rtl(p))


def test_explain_heads_isolates_an_arabic_translation_and_the_report_too(monkeypatch, tmp_path, tiny_en_ar):
    at = app(monkeypatch, tmp_path, tiny_en_ar)
    opened(at, "pages/6_Explain_heads.py", model="tiny-ar", text=PAIRS[0][0])
    translation = at.session_state["ex_result"]
    (line,) = [m.value for m in at.markdown if m.value.startswith("**Translation:**")]
    assert RLI in line and line.endswith(PDI)  # one right-to-left run: its full stop stays on its left
    report = sentence_report(translation, model="tiny-ar")
    assert f'<b>Translation:</b> <bdi dir="rtl">{translation.text}</bdi>' in report.replace("&#x27;", "'")
    assert report.count('<bdi dir="rtl">') >= 1 + len(translation.target_pieces) - 1  # pieces isolated too


def test_the_probability_table_joins_arabic_pieces_as_the_heatmap_does(monkeypatch, tmp_path, tiny_en_ar):
    at = app(monkeypatch, tmp_path, tiny_en_ar)
    opened(at, "pages/1_Translate.py", model="tiny-ar", text=PAIRS[0][0])
    translation = at.session_state["tr_result"]
    (table,) = [m.value for m in at.markdown if "prob-table" in m.value]
    assert 'dir="rtl"' in table  # the first piece on the right
    heatmap_rows = charts(at)[0].labels("y")
    for label in piece_labels(translation.target_pieces):  # the heatmap's labels, joiners and marks included
        assert f"<th><bdi>{label.replace('<', '&lt;').replace('>', '&gt;')}</bdi></th>" in table
    assert piece_labels(translation.target_pieces) == heatmap_rows  # Vega draws text: no escaping
    joined = probability_table(["▁ال", "له", "▁لي"], [0.5, 0.5, 0.5], rtl=True)
    assert f"<th><bdi>\u200f▁ال{ZWJ}</bdi></th><th><bdi>\u200f{ZWJ}له</bdi></th>" in joined


def test_arabic_piece_lines_isolate_every_piece_and_read_from_the_right():
    from transformer.bidi import FSI, PDI, RLI
    from ui.shared.text.plain import piece_line
    from ui.translate.probability_table import probability_table

    pieces = ["▁الله", "▁قال", ".", "</s>"]
    line = piece_line(pieces, [False, True, False, False])
    assert line.startswith(RLI) and line.endswith(PDI)  # the line reads right to left: "</s>" ends it, on the left
    inner = line[1:-1].split(" ")
    assert all(part.count(FSI) == 1 for part in inner) and len(inner) == 4  # every piece kept apart
    assert inner[1].startswith(":orange-background[" + FSI)
    assert inner[3] == FSI + "\\<\\/s\\>" + PDI  # "</s>" whole, not "<s/>"
    assert piece_line(["▁the", "</s>"]) == f"{FSI}▁the{PDI} {FSI}\\<\\/s\\>{PDI}"  # left to right: no line isolate
    assert piece_line([]) == "∅"
    assert "<th><bdi>&lt;/s&gt;</bdi></th>" in probability_table(pieces, [0.5] * 4, rtl=True)

"""Issue 23, part B: class-ready defaults and honest views. AppTest and figure tests, one or more per item (the item
number in each test's comment); the browser-only checks are in tests/test_class_mode_e2e.py."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, PAIRS, make_checkpoint
from tests.chart_reading import Drawn, charts, curves_of
from transformer.bidi import PDI, RLI, ZWJ, piece_labels
from transformer.charts import theme, training_curves
from transformer.charts.heatmap import heatmap
from transformer.charts.render import to_svg
from transformer.data.corpora.teaching import align
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.model.checkpoint import load_checkpoint
from transformer.runs import RunFiles, append_metrics, write_status
from ui.explain import head_maps
from ui.explain.html_report import sentence_report
from ui.shared.models import catalog
from ui.shared.state import class_mode
from ui.teaching import guide_documents
from ui.train import metric_curves
from ui.translate.probability_table import probability_table, rows
from ui.translate.teaching_panels import contraction_hint, expand_contractions, gold_links

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "checkpoints"
GRAMMAR = "The young man buys a green bicycle."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(root / "tiny")
    make_checkpoint(root / "tiny-ar", seed=1, tgt="ar")
    return root


# ----------------------------------------------------------------------------- 3. Resume runs to the run's end


def test_resume_offers_the_runs_own_max_steps(monkeypatch, tmp_path, tiny):  # item 3
    at = app(monkeypatch, tmp_path, tiny)
    root = tmp_path / "runs" / "stopped-run"
    make_checkpoint(RunFiles(root).checkpoint("latest"))
    write_status(RunFiles(root), "stopped", step=370, max_steps=1500)
    opened(at, "pages/3_Train.py")
    (more,) = [n for n in at.number_input if n.label == "Resume until step"]
    assert more.value == 1500  # not 740, twice the current step
    columns = list(at.columns)  # issue 37 item 21: after Stop, Resume stands in the first of the three columns
    i = next(k for k, c in enumerate(columns) if any(n.label == "Resume until step" for n in c.number_input))
    assert [b.label for b in columns[i + 2].button] == ["Open in the explorer"]
    write_status(RunFiles(root), "finished", step=1500, max_steps=1500)  # at its end: as many steps again
    at.run()
    (more,) = [n for n in at.number_input if n.label == "Resume until step"]
    assert more.value == 3000


# ----------------------------------------------------------------------------- 5. Arabic isolated and joined


def test_explain_heads_isolates_an_arabic_translation_and_the_report_too(monkeypatch, tmp_path, tiny):  # item 5
    at = app(monkeypatch, tmp_path, tiny)
    opened(at, "pages/6_Explain_heads.py", model="tiny-ar", text=PAIRS[0][0])
    translation = at.session_state["ex_result"]
    (line,) = [m.value for m in at.markdown if m.value.startswith("**Translation:**")]
    assert RLI in line and line.endswith(PDI)  # one right-to-left run: its full stop stays on its left
    report = sentence_report(translation, model="tiny-ar")
    assert f'<b>Translation:</b> <bdi dir="rtl">{translation.text}</bdi>' in report.replace("&#x27;", "'")
    assert report.count('<bdi dir="rtl">') >= 1 + len(translation.target_pieces) - 1  # pieces isolated too


def test_the_probability_table_joins_arabic_pieces_as_the_heatmap_does(monkeypatch, tmp_path, tiny):  # item 5
    at = app(monkeypatch, tmp_path, tiny)
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


# ----------------------------------------------------------------------------- 6. the guide's links


def test_the_guides_links_open_documents_in_the_app(monkeypatch, tmp_path):  # item 6
    docs = guide_documents.documents()
    text = docs[guide_documents.GUIDE].path.read_text(encoding="utf-8")
    rewritten = guide_documents.in_app_links(text, docs[guide_documents.GUIDE], docs)
    assert "[model card](?doc=card-en-fr-teaching)" in rewritten and "[the corpus](?doc=teaching-corpus)" in rewritten
    app_page = r"(?:Translate|Step_by_step|Learn|Explain_heads)\?model="  # a link into the app (issue 37 item 4)
    assert not re.search(rf"\]\((?!https?:|\?doc=|#|{app_page})[^)]*\)", rewritten)  # none to a repository path
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/5_Teaching_guide.py", doc="card-en-fr-teaching")
    shown = "\n".join(m.value for m in at.markdown)
    assert shown.count("# en-fr-teaching") == 1 and "(?doc=teaching-corpus)" in shown  # the card, its own link too
    assert at.query_params["doc"] == "card-en-fr-teaching"


def test_an_unknown_document_falls_back_to_the_guide(monkeypatch, tmp_path):  # item 6
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/5_Teaching_guide.py", doc="../README")
    assert any("is not one this page shows" in w.value for w in at.warning)
    assert any(m.value.startswith("# Teaching with the Attention Explorer") for m in at.markdown)


# ----------------------------------------------------------------------------- 8. greedy, beam, reference


def test_search_view_says_when_greedy_and_beam_agree_and_fills_the_grammars_reference(monkeypatch, tmp_path):  # 8
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/6_Explain_heads.py", model="en-fr-teaching", text=GRAMMAR, view="search")
    assert at.text_input(key="ex_ref").value == align(GRAMMAR).tgt  # a train sentence: the grammar's French
    table = at.dataframe[0].value
    assert "None" not in table.astype(str).to_numpy().ravel().tolist()
    assert table["log-probability"].iloc[-1] == "—" and re.fullmatch(r"-\d+\.\d{3}", table["log-probability"][0])
    assert any("write the same output" in s.value for s in at.success)  # greedy and beam 4 agree here
    assert not any("dashed line" in c.value for c in at.caption)
    assert all(" − " not in drawn.title for drawn in charts(at))  # no all-grey difference map
    at.selectbox(key="ex_search_b").set_value("reference").run()  # the model is exact: the reference agrees too
    assert not at.exception and any("write the same output" in s.value for s in at.success)


# ----------------------------------------------------------------------------- 9. outside the grammar


def test_outside_the_grammar_the_message_points_at_the_word_list_and_contractions_get_a_hint():  # item 9
    _, why = gold_links("The spaceship lands.", None)
    assert "“Words the teaching model knows” at the top of this page" in why and "below" not in why
    assert expand_contractions("My sister doesn't eat bread. I'm sure we've won't") == \
        "My sister does not eat bread. I am sure we have will not"
    assert "does not eat" in contraction_hint("My sister doesn't eat bread.") and not contraction_hint(GRAMMAR)
    dropped = SimpleNamespace(text="Ma sœur mange du pain.")  # what the shipped model writes: the negation is gone
    _, why = gold_links("My sister doesn't eat bread.", dropped)
    assert "write “My sister does not eat bread\\.”" in why


def test_the_translate_page_warns_about_a_contraction(monkeypatch, tmp_path):  # item 9
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/1_Translate.py", model="en-fr-teaching", text="My sister doesn't eat bread.")
    assert any("write “My sister does not eat bread" in w.value for w in at.warning)


# ----------------------------------------------------------------------------- 12. long sentences


def test_a_long_translation_wraps_its_probability_table_and_keeps_labels_readable(monkeypatch, tmp_path, tiny):  # 12
    pieces = [f"▁w{i}" for i in range(57)] + ["</s>"]
    wrapped = rows(pieces, [0.5] * 58)
    assert [len(r) for r in wrapped] == [10] * 5 + [8] and wrapped[-1][-1][:2] == (58, "</s>")
    assert "<th><bdi>&lt;/s&gt;</bdi></th>" in probability_table(pieces, [0.5] * 58)
    drawn = Drawn.of(heatmap(np.full((3, 90), 1 / 90), ["a", "b", "c"], [f"▁w{i}" for i in range(90)]))
    axis = drawn.view("rect")["encoding"]["x"]["axis"]
    assert axis.get("labelFontSize", drawn.spec["config"]["axis"]["labelFontSize"]) >= 10  # never the 7 px of old
    assert drawn.spec["config"]["axis"]["labelOverlap"] == "greedy"  # labels that would overlap are left out
    at = app(monkeypatch, tmp_path, tiny)
    opened(at, "pages/1_Translate.py", model="tiny", text=" ".join(s for s, _ in PAIRS[:8]))
    assert not any(df.proto.id.endswith("tr_probs") for df in at.dataframe)  # no horizontally scrolled grid
    (table,) = [m.value for m in at.markdown if "prob-table" in m.value]
    assert table.count("<tr>") == 3 * -(-len(at.session_state["tr_result"].target_pieces) // 10)


# ----------------------------------------------------------------------------- 13. the first screen


def _guide_first_screen() -> tuple[str, str]:
    text = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    match = re.search(r"starts with \*(.+?)\*\s+and writes \(greedy search, the default\) \*(.+?)\*,", text, flags=re.S)
    assert match, "the guide says what the app's first screen shows"
    return " ".join(match.group(1).split()), " ".join(match.group(2).split())


def test_a_newcomers_first_translation_is_right_and_the_guide_quotes_it(monkeypatch, tmp_path):  # item 13
    at = app(monkeypatch, tmp_path, SHIPPED)
    at.run()
    assert Path(at.session_state["model_path"]).name == catalog.APP_MODEL == "en-fr-teaching"
    opened(at, "pages/1_Translate.py")
    sentence, output = _guide_first_screen()
    translation = at.session_state["tr_result"]
    assert at.text_input(key="tr_text").value == sentence and at.radio(key="tr_method").value == "greedy"
    assert translation.text == output == align(sentence).tgt  # the grammar's French: a right translation


def test_the_guides_modern_sentence_quotes_greedy_outputs():  # item 13: the app's default search is greedy
    text = " ".join((ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8").split())
    quoted = re.search(r"greedy search, the app's default: \"(.+?)\" against \"(.+?)\"\)", text)
    assert quoted
    for name, expected in zip(("en-fr-bible-debian", "en-fr-bible"), quoted.groups()):
        translator = Translator(load_checkpoint(SHIPPED / name))
        assert translator.translate("The file could not be opened.", SearchSettings()).text == expected


# ----------------------------------------------------------------------------- 14. charts


def test_one_point_gives_sane_axes_distinct_colours_and_human_names():  # item 14
    one = training_curves.training_curves([{"step": 25, "train_loss": 7.822314}]).to_dict()["vconcat"][0]["layer"][0]
    assert one["encoding"]["x"]["scale"]["domain"] == [24, 26] and one["encoding"]["x"]["axis"]["format"] == "~d"
    lo, hi = one["encoding"]["y"]["scale"]["domain"]
    assert lo < 7.822314 < hi and hi - lo > 1 and one["encoding"]["y"]["axis"]["format"] == ",~f"  # no "1e+2"
    records = [{"step": 25, "train_loss": 7.822314, "lr": 1e-4}, {"step": 25, "dev_loss": 7.9}]
    loss, rate = training_curves.training_curves(records).to_dict()["vconcat"]
    lines = loss["layer"][0]["encoding"]
    assert lines["color"]["scale"]["domain"] == ["train loss", "dev loss"]
    blue, orange = lines["color"]["scale"]["range"]
    assert blue != orange
    assert {blue, orange} == {training_curves.COLORS["train_loss"], training_curves.COLORS["dev_loss"]}
    assert rate["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["learning rate"]
    curve = Drawn.of(metric_curves.metric_curves([{"step": 25, "tokens_per_s": 812.5}], ["tokens_per_s"]))
    x = curve.view("line")["encoding"]["x"]
    assert x["scale"]["domain"] == [24, 26] and (x["axis"]["format"], x["axis"]["tickMinStep"]) == ("~d", 1)
    assert curve.data("line")["series"].tolist() == ["tokens / s"]
    assert metric_curves.metric_name("dev_aer_layer1") == "layer 1 (mean of heads)"


def test_the_train_page_shows_human_legend_names(monkeypatch, tmp_path, tiny):  # item 14
    at = app(monkeypatch, tmp_path, tiny)
    root = tmp_path / "runs" / "one-point"
    root.mkdir(parents=True)
    append_metrics(RunFiles(root).metrics, {"step": 25, "train_loss": 7.822314, "lr": 1e-4, "tokens_per_s": 900.0})
    write_status(RunFiles(root), "stopped", step=25, max_steps=100)
    opened(at, "pages/3_Train.py")
    view = curves_of(at)
    names = set(view[1][next(iter(view[1]))]["name"])
    assert names == {"train loss", "learning rate"}


def test_the_snapshots_chart_names_its_step_in_the_title_and_moves_by_a_slider_of_steps():  # item 14
    frames = [(s, np.full((2, 3), 1 / 3), ["▁a", "▁b"], ["▁x", "▁y", "▁z"]) for s in (25, 50, 60)]
    drawn = Drawn.of(head_maps.training_animation(frames, title="cross", query_name="q", key_name="k"))
    (slider,) = [p for p in drawn.params() if "bind" in p]  # an input of its own, under the map (no Play to sit on)
    assert slider["bind"] == {"input": "range", "min": 25, "max": 60, "step": 5, "name": "step "}
    assert slider["value"] == 60  # the newest snapshot first
    title = drawn.spec["title"]["text"]["expr"]  # the shown snapshot's step, in the title (left, off the toolbar)
    assert title.startswith('"cross: step " + [25, 50, 60][') and drawn.spec["title"]["subtitle"]
    svg = to_svg(drawn.spec)
    assert "cross: step 60" in svg and "▁a" in svg


# ----------------------------------------------------------------------------- 17. what ships


def test_readme_home_and_examples_say_what_ships(monkeypatch, tmp_path):  # item 17
    shipped = [p for p in SHIPPED.iterdir() if (p / "config.json").is_file()]
    numbers = {3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    assert f"{numbers[len(shipped)]} trained models ship" in (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    at = app(monkeypatch, tmp_path, SHIPPED)
    at.run()
    intro = at.markdown[0].value
    assert "translating English to French, Arabic and Italian" in intro, intro
    opened(at, "pages/1_Translate.py", model="en-fr-bible-debian")
    examples = at.selectbox(key="tr_example").options
    assert "The file could not be opened." in examples  # modern sentences ...
    assert any("God" in e or "LORD" in e for e in examples[:4])  # ... and verses, in turn


# ----------------------------------------------------------------------------- 18. class mode


def test_class_mode_is_kept_in_the_link_and_enlarges_the_charts(monkeypatch, tmp_path, tiny):  # item 18
    at = app(monkeypatch, tmp_path, tiny)
    opened(at, "pages/1_Translate.py", text=PAIRS[0][0], search="beam", beam="3", nbest="2", **{"class": "1"})
    assert at.toggle(key=class_mode.TOGGLE).value and at.query_params["class"] == "1"
    assert charts(at)[0].spec["config"]["axis"]["labelFontSize"] >= class_mode.LABEL_PX  # both axes' labels
    assert not at.dataframe and at.table  # the n-best list drawn whole, not in a scrolling grid
    at.switch_page("pages/4_Learn.py").run()
    assert at.toggle(key=class_mode.TOGGLE).value and at.query_params["class"] == "1"  # across pages
    at.toggle(key=class_mode.TOGGLE).set_value(False).run()
    assert "class" not in at.query_params
    assert charts(at)[0].spec["config"]["axis"]["labelFontSize"] == theme.NORMAL.label != class_mode.LABEL_PX


def test_class_sizes_thin_column_labels_that_would_overlap_and_size_cell_text():  # item 18
    big = Drawn.of(heatmap(np.full((2, 60), 1 / 60), ["a", "b"], [f"▁w{i}" for i in range(60)], sizes=theme.CLASS))
    assert big.spec["config"]["axis"]["labelFontSize"] == class_mode.LABEL_PX
    assert big.spec["config"]["axis"]["labelOverlap"] == "greedy"  # Vega leaves out the labels that would overlap
    assert big.view("rect")["encoding"]["x"]["axis"]["labelAngle"] == -90  # 60 columns: turned upright
    from ui.shared.attention import gold_alignment

    grid = Drawn.of(gold_alignment.aer_grid([[0.1, 0.2]], [0.15], title="AER", sizes=theme.CLASS))
    assert grid.view("text")["mark"]["fontSize"] == theme.CLASS.cell >= class_mode.LABEL_PX

"""Class mode in AppTest: the switch is kept in the link and across pages, enlarges the charts' labels and draws the
n-best list whole. Its sizes on the charts and views: tests/charts/test_class_mode.py; as Chromium draws them at a
projector's 1280x720: tests/browser/test_class_mode.py."""

from tests.app_fixtures import PAIRS, app, opened
from tests.chart_reading import charts
from transformer.charts import theme
from ui.shared.state import class_mode


def test_class_mode_is_kept_in_the_link_and_enlarges_the_charts(monkeypatch, tmp_path, tiny_en_ar):
    at = app(monkeypatch, tmp_path, tiny_en_ar)
    opened(at, "pages/1_Translate.py", text=PAIRS[0][0], search="beam", beam="3", nbest="2", **{"class": "1"})
    assert at.toggle(key=class_mode.TOGGLE).value and at.query_params["class"] == "1"
    assert charts(at)[0].spec["config"]["axis"]["labelFontSize"] >= class_mode.LABEL_PX  # both axes' labels
    assert not at.dataframe and at.table  # the n-best list drawn whole, not in a scrolling grid
    at.switch_page("pages/4_Learn.py").run()
    assert at.toggle(key=class_mode.TOGGLE).value and at.query_params["class"] == "1"  # across pages
    at.toggle(key=class_mode.TOGGLE).set_value(False).run()
    assert "class" not in at.query_params
    assert charts(at)[0].spec["config"]["axis"]["labelFontSize"] == theme.NORMAL.label != class_mode.LABEL_PX

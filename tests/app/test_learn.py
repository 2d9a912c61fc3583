"""The Learn page (AppTest): attention rebuilt by hand, padding and its mask, the tables built only once
opened, the view kept in the link."""

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, SHIPPED, app, opened, page, selectbox
from tests.chart_reading import charts


def test_learn_tables_are_built_only_while_their_expander_is_open(at):
    page(at, "pages/4_Learn.py")
    assert not at.dataframe and [e.label for e in at.expander if "tables" in e.label] == ["The same numbers as tables"]
    at.session_state["learn_tables_open"] = True
    at.run()
    qk, scores, output = (df.value for df in at.dataframe)  # Q and K, the scores through the softmax, the output
    assert qk.index[0].startswith("q (") and "softmax" in scores.columns and output.index.tolist() == ["output"]
    at.session_state["learn_tables_open"] = False
    at.run()
    assert not at.dataframe and not at.exception


def test_learn_page_rebuilds_attention_by_hand(at):
    page(at, "pages/4_Learn.py")
    assert len(charts(at)) == 4  # PE heatmap, sinusoids, two masks
    assert not at.dataframe  # the tables' expander is closed: nothing built, no data grid for the browser to load
    at.session_state["learn_tables_open"] = True  # what a click on the expander sends
    at.selectbox(key="learn_layer").set_value(1).run()
    assert len(at.dataframe) == 3  # Q and K, the scores through the softmax, the output
    table = at.dataframe[1].value
    assert np.allclose(table["softmax"], table["model's weight"], atol=1e-5) and not at.warning


def test_learn_pads_the_sentence_and_masks_the_padding(at):
    page(at, "pages/4_Learn.py")
    at.session_state["learn_tables_open"] = True
    at.slider(key="learn_pad_to").set_value(at.slider(key="learn_pad_to").value).run()
    table = at.dataframe[1].value
    n_pad = (table["key"] == "<pad>").sum()
    assert n_pad == 3 and table["may attend"].dtype == bool
    assert table["may attend"].tolist() == [True] * (len(table) - 3) + [False] * 3
    assert np.isneginf(table["after mask"].iloc[-3:]).all() and (table["softmax"].iloc[-3:] == 0).all()
    assert np.allclose(table["softmax"], table["model's weight"], atol=1e-5) and not at.warning
    at.text_input(key="learn_sentence").input("the king speaks to the people .").run()
    box = selectbox(at, "Query token")
    assert box.options[0] == "0: ▁the" and box.options[2] == "2: ▁speaks"


def test_learn_keeps_layer_head_and_query_in_the_link(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
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

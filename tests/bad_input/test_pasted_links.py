"""Links a user may paste: numbers keep their digits, unknown and over-long
parameters are dropped at once and quoted short, and a link's values are judged against what the page shows."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, PAIRS, at, checkpoints  # noqa: F401 (fixtures)
from ui.shared.state import links
from ui.shared.state.search import read_sampling, sampling_params

PAGES = {"translate": "pages/1_Translate.py", "step": "pages/2_Step_by_step.py", "explain": "pages/6_Explain_heads.py"}


def opened(app, page: str, **params):
    app.query_params.update(params)  # a link opens the page
    app.switch_page(page).run()
    assert not app.exception, app.exception
    return app


# ----------------------------------------------------------------------------- 6. integers stay integers


def test_a_link_writes_whole_numbers_as_digits_and_reads_them_back():
    values = {"temperature": 0.85, "top_k": 50, "top_p": 0.9, "seed": 1234567}
    params = sampling_params(values)
    assert params["seed"] == "1234567" and params["top_k"] == "50" and params["temperature"] == "0.85"
    assert read_sampling(params) == (values, [])
    assert [links.as_param(v) for v in (4294967295, 1.0, 0.1, True, "a b", 2.5e-7)] == [
        "4294967295", "1", "0.1", "1", "a b", "2.5e-07"]


@pytest.mark.parametrize("name", list(PAGES))
def test_a_sampling_link_keeps_its_seed_on_every_page(at, name):  # noqa: F811
    opened(at, PAGES[name], text=PAIRS[0][0], search="sample", seed="1234567")
    assert at.query_params["seed"] == "1234567" and at.query_params["search"] == "sample"
    assert not [w for w in at.warning if "seed" in w.value]


# ----------------------------------------------------------------------------- 13. messages that tell the truth


def test_a_link_comparing_the_model_with_itself_does_not_call_it_missing(at):  # noqa: F811
    opened(at, PAGES["explain"], model="tiny", text=PAIRS[0][0], view="compare", partner="tiny")
    assert not [w for w in at.warning if "not on this server" in w.value]
    assert any("with itself" in i.value for i in at.info)
    assert at.query_params["partner"] == "tiny-ar"  # the one other model, now in the link


def test_a_head_in_a_link_with_a_layer_level_lens_is_ignored_with_a_note(at):  # noqa: F811
    opened(at, PAGES["translate"], text=PAIRS[0][0], lens="alti", head="1")
    warnings = [w.value.replace("\\", "") for w in at.warning]  # as shown: markdown escapes taken out
    assert not [w for w in warnings if "heads 0 to 0" in w]
    assert [w for w in warnings if "Head '1' in the link is ignored" in w and "one map per layer" in w]
    assert not [box for box in at.selectbox if box.key == "tr_head"]  # no head picker: the lens's one map
    other = opened(AppTest.from_file(APP, default_timeout=60), PAGES["translate"], text=PAIRS[0][0], lens="norm",
                   head="3")  # a lens that keeps the heads keeps the link's head
    assert other.selectbox(key="tr_head").value == 3 and not [w for w in other.warning if "Head" in w.value]


# ----------------------------------------------------------------------------- 12. unknown and over-long values


def test_a_thousand_unknown_parameters_leave_the_address_in_one_message(at, monkeypatch):  # noqa: F811
    from streamlit.runtime.state.query_params import QueryParams

    sent = []
    original = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg", lambda self: (sent.append(1), original(self)))
    opened(at, PAGES["translate"], text=PAIRS[0][0], **{f"p{i}": str(i) for i in range(999)})  # streamlit: <= 1000
    assert not [name for name in at.query_params if name.startswith("p")]
    assert at.query_params["text"] == PAIRS[0][0]
    assert len(sent) < 20  # one for the unknown ones, then the page's own few (was one per parameter: 1,000+)


def test_warnings_quote_a_long_value_shortened(at):  # noqa: F811
    huge = "9" * 5000
    opened(at, PAGES["translate"], text=PAIRS[0][0], search="sample", seed=huge, beam=huge, layer=huge, lens=huge)
    warnings = [w.value for w in at.warning if "link" in w.value]
    assert len(warnings) >= 4 and max(map(len, warnings)) < 200
    assert links.quoted(huge) == repr("9" * (links.QUOTED_CHARS - 1) + "…")


def test_the_longest_link_the_app_writes_stays_far_below_what_the_server_accepts():
    from urllib.parse import urlencode

    longest = "😀" * links.MAX_TEXT  # four UTF-8 bytes a character, each written as %XX
    assert links.linkable(longest) == longest and links.linkable(longest + "a") is None
    every_text = {name: links.linkable(longest) for name in ("text", "ref", "clean", "other")}
    assert len(urlencode(every_text)) < 64 * 1024  # the server answers 400 past about 100 KB, before the app runs


# ----------------------------------------------------------------------------- 3. model cards draw no image


def test_a_documents_images_become_placeholders_that_name_their_address():
    from ui.teaching.guide_documents import without_images

    card = ('![t](http://host/track.png) ![a [b] c](https://x.example/z.png "title") ![](//cdn/p.gif)\n'
            "![ref][logo] ![logo] ![x][]\n\n[logo]: http://evil/logo.png\n[x]: <https://e/x.png> \"t\"\n"
            "a [link](http://ok.example) stays")
    shown = without_images(card)
    assert "![" not in shown and "[link](http://ok.example)" in shown
    for text, address in (("t", "http://host/track.png"), ("a [b] c", "https://x.example/z.png"),
                          ("ref", "http://evil/logo.png"), ("logo", "http://evil/logo.png"), ("x", "https://e/x.png")):
        assert f"*[image {text}: `{address}`]*" in shown
    assert "*[image: `//cdn/p.gif`]*" in shown

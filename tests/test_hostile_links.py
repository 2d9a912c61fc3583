"""Links a user may paste (issue 41 items 6, 12 and 13): numbers keep their digits, unknown and over-long
parameters are dropped at once and quoted short, and a link's values are judged against what the page shows."""

from __future__ import annotations

import pytest

from tests.app_fixtures import PAIRS
from tests.test_app import at, checkpoints  # noqa: F401 (fixtures)
from ui.shared import links
from ui.shared.sampling import read_sampling, sampling_params

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

"""Real browser: the Attribution, Logit lens and Patching views of Explain heads draw their charts with no
exception. Shares the server of tests/test_e2e.py (skipped there, and so here, without chromium)."""

import urllib.parse

import pytest
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.app_fixtures import PAIRS
from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    PLOT,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import find_checkpoint

pytestmark = pytest.mark.e2e
SENTENCE = "The woman gave her father water."  # "woman" -> "man": the same number of pieces


@pytest.mark.parametrize(("view", "charts", "text"), [("attribution", 1, "IG gap at"),
                                                      ("lens", 1, "DecoderLens"),
                                                      ("patching", 4, "difference to restore")])
def test_each_view_draws_its_charts(server, page, view, charts, text):  # noqa: F811
    sentence = SENTENCE if find_checkpoint() else PAIRS[3][0]  # the shipped model, or the tiny one
    page.goto(f"{server}/Explain_heads?view={view}&text={urllib.parse.quote_plus(sentence)}")
    expect(page.get_by_text(text).first).to_be_visible(timeout=120_000)  # the first page also loads the model
    expect(page.locator(PLOT)).to_have_count(charts, timeout=60_000)
    assert page.locator(EXCEPTION).count() == 0

"""Real browser: a link with lens= opens that lens, and the Lens switch writes its choice back into the address
bar. Shares the server of tests/test_e2e.py (skipped there, and so here, without chromium)."""

import re

import pytest
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    HEATMAP,
    PLOT,
    _sentence,
    browser_context_args,
    browser_type_launch_args,
    server,
)

pytestmark = pytest.mark.e2e


def test_a_lens_link_opens_the_lens_and_the_switch_updates_the_link(server, page):  # noqa: F811
    page.goto(server + "/Translate?lens=alti&text=" + _sentence().replace(" ", "+"))
    page.locator(PLOT).first.locator(HEATMAP).first.wait_for(timeout=90_000)
    expect(page.get_by_text("ALTI+ (Ferrando et al., 2022)")).to_be_visible(timeout=30_000)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Lens").click()
    page.get_by_role("option", name="value zeroing (Mohebbi)").click()
    expect(page).to_have_url(re.compile(r"lens=value_zeroing"), timeout=30_000)
    expect(page.get_by_text("Value zeroing (Mohebbi et al., 2023)")).to_be_visible(timeout=30_000)
    assert page.locator(EXCEPTION).count() == 0

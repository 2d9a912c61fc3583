"""Real browser: the Dataset page on the teaching test split shows the table and the projector, and a sentence's
link opens it on Translate."""

import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from tests.browser.browsing import EXCEPTION, PLOT
from transformer.decoding.translate import find_checkpoint

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(find_checkpoint() is None, reason="no shipped teaching model")]


def test_the_dataset_page_shows_the_table_and_the_projector_and_opens_a_sentence(server, page):
    page.goto(f"{server}/Dataset?model=en-fr-teaching&split=test&limit=10")
    expect(page.get_by_role("heading", name="Projector")).to_be_visible(timeout=180_000)  # after the computation
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(2, timeout=60_000)  # slices, sentences
    expect(page.get_by_text("The first 10 of 500 sentences")).to_be_visible()
    charts = page.locator(PLOT)
    expect(charts).to_have_count(2, timeout=60_000)  # the slices' bars and heads; the projector waits to be opened
    page.get_by_text("Every token's final state in 2-D (PCA)").click()
    expect(charts).to_have_count(3, timeout=60_000)
    projector = charts.last
    projector.scroll_into_view_if_needed()
    expect(projector.locator(".mark-symbol path, canvas").first).to_be_attached(timeout=60_000)  # its points
    expect(projector.locator(".role-title-text")).to_contain_text("tokens of 10 sentences, final encoder states (PCA)")
    assert page.locator(EXCEPTION).count() == 0
    link = page.get_by_role("link", name="Translate", exact=True).last  # under "Open one sentence"
    href = link.get_attribute("href")
    sentence = urllib.parse.parse_qs(href.split("?", 1)[1])["text"][0]
    if link.get_attribute("target") == "_blank":
        with page.context.expect_page() as opened:
            link.click()
        page = opened.value
    else:
        link.click()
    page.wait_for_url(re.compile(r"/Translate\?"), timeout=60_000)
    expect(page.get_by_role("heading", name="Translate & Attention").first).to_be_visible(timeout=60_000)
    expect(page.get_by_label(re.compile("English sentence"))).to_have_value(sentence, timeout=60_000)
    assert page.locator(EXCEPTION).count() == 0

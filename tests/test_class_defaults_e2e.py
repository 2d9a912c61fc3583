"""Real browser, issue 23 part A: what only a browser shows. The Learn page's Eq. 1 table shows every row (the
<pad> keys' -inf included) without scrolling inside the table, and Explain heads keeps a typed sentence in its box
and in the address bar across its views. Shares the server of tests/test_e2e.py (shipped models)."""

import re
import urllib.parse

import pytest
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    PLOT,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import find_checkpoint

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(find_checkpoint() is None, reason="needs the shipped models")]
TYPED = "The old woman reads a book."


def test_the_eq1_table_shows_its_pad_rows_without_scrolling_inside_it(server, page, tmp_path):  # noqa: F811
    page.goto(server + "/Learn?model=en-fr-teaching")
    tables = page.get_by_text("The same numbers as tables")  # the Eq. 1 picture comes first, the tables one click away
    tables.wait_for(timeout=240_000)  # the teaching corpus is built first (30 s on a loaded 2-core machine)
    tables.click()
    table = page.locator('[data-testid="stDataFrame"]').filter(has_text="-inf")
    table.wait_for(timeout=60_000)
    table.scroll_into_view_if_needed()
    inner = table.locator(".dvn-scroller").evaluate("s => [s.scrollHeight, s.clientHeight]")
    assert inner[0] <= inner[1] + 1, f"the table scrolls inside: {inner}"
    assert table.get_by_text("-inf").count() == 3  # the three <pad> keys of the default padding, all drawn
    rows = table.locator('[data-testid^="glide-cell-1-"]').count()  # the grid's cells of the key column
    box = table.bounding_box()
    assert rows >= 4 and box["height"] >= 30 * (rows + 1)  # tall enough for the header and every row
    expect(page.get_by_text("its score becomes -inf before the softmax")).to_be_visible()
    assert page.locator(EXCEPTION).count() == 0
    page.screenshot(path=str(tmp_path / "learn-eq1.png"))


def test_explain_heads_keeps_the_typed_sentence_in_the_box_and_the_address_bar(server, page):  # noqa: F811
    page.goto(server + "/Explain_heads?model=en-fr-teaching&view=ablate")
    box = page.get_by_label("Sentence (press Enter)")
    box.wait_for(timeout=180_000)
    assert box.input_value() != TYPED
    box.fill(TYPED)
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]text=" + re.escape(urllib.parse.quote_plus(TYPED))), timeout=30_000)
    page.get_by_text("Head statistics", exact=True).click()
    expect(page.get_by_text("Dev sentences", exact=True)).to_be_visible(timeout=60_000)
    page.locator(PLOT).first.wait_for(timeout=120_000)  # the run ends: Streamlit forgets the boxes it did not draw
    page.wait_for_timeout(1000)
    page.get_by_text("Switch heads off", exact=True).click()
    expect(box).to_have_value(TYPED, timeout=30_000)
    assert urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["text"] == [TYPED]
    assert page.locator(EXCEPTION).count() == 0

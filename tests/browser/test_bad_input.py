"""Bad input in a real browser: a model card with remote images makes the browser fetch nothing, and a link with a
thousand unknown parameters opens its page with them dropped from the address.

A server of its own (tests/browser/browsing.py's app_server), over a folder whose model carries a crafted
MODEL_CARD.md."""

from __future__ import annotations

import os
import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from tests.app_fixtures import PAIRS, make_checkpoint
from tests.browser.browsing import EXCEPTION, app_server

pytestmark = pytest.mark.e2e
CARD = """# A crafted card

Inline ![tracker](http://tracker.example/pixel.png "t"), bare ![](//cdn.example/p.gif), nested
![a [b] c](https://nested.example/z.png), by reference ![logo][l] and ![l], raw <img src="http://raw.example/i.png">.

[l]: <https://ref.example/logo.png> "logo"
"""


@pytest.fixture(scope="module")
def crafted_server(tmp_path_factory):
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    make_checkpoint(checkpoints / "tiny")
    (checkpoints / "tiny" / "MODEL_CARD.md").write_text(CARD, encoding="utf-8")
    env = {**os.environ, "EXPLORER_CHECKPOINTS": str(checkpoints), "PYTHONUNBUFFERED": "1",
           "EXPLORER_RUNS": str(tmp_path_factory.mktemp("runs"))}
    with app_server(env, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


def test_a_model_card_with_remote_images_makes_the_browser_fetch_nothing(crafted_server, page):
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(crafted_server + "/Teaching_guide?doc=card-tiny")
    expect(page.get_by_role("heading", name="A crafted card")).to_be_visible(timeout=60_000)
    for address in ("http://tracker.example/pixel.png", "//cdn.example/p.gif", "https://nested.example/z.png",
                    "https://ref.example/logo.png"):
        expect(page.get_by_text(address).first).to_be_visible()  # the placeholder names it
    page.wait_for_timeout(1000)
    assert page.locator(EXCEPTION).count() == 0
    assert page.locator('[data-testid="stMarkdownContainer"] img').count() == 0
    assert [u for u in requested if not u.startswith(crafted_server) and not u.startswith("data:")] == []


def test_a_thousand_unknown_parameters_are_dropped_from_the_address_at_once(crafted_server, page):
    unknown = "&".join(f"p{i}={i}" for i in range(999))  # streamlit reads at most 1,000 parameters
    page.goto(f"{crafted_server}/Translate?text={urllib.parse.quote(PAIRS[0][0])}&{unknown}")
    expect(page.locator('[data-testid="stMarkdownContainer"] h3').first).to_be_visible(timeout=60_000)
    expect(page).not_to_have_url(re.compile(r"[?&]p(0|998)="), timeout=10_000)
    assert "text=" in page.url and page.locator(EXCEPTION).count() == 0

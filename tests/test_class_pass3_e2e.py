"""Issue 37 (class-ready, third pass) in a real browser at 1280x720: what only a browser shows. Shares the server
of tests/test_e2e.py (skipped there, and so here, without chromium); the AppTest checks: tests/test_class_pass3.py."""

import re
import urllib.parse

import pytest
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    SENTENCE,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import find_checkpoint

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(find_checkpoint() is None, reason="needs the shipped models")]
PROJECTOR = {"width": 1280, "height": 720}


@pytest.fixture
def projector(browser):
    context = browser.new_context(viewport=PROJECTOR)
    yield context.new_page()
    context.close()


def _step(page, n: int) -> None:
    expect(page.get_by_text(re.compile(rf"^Step {n}\.")).first).to_be_visible(timeout=60_000)


def test_beam_result_is_the_trees_winner_after_pressing_next_to_the_end(server, projector):  # noqa: F811  item 1
    page = projector
    query = {"model": "en-fr-bible", "text": SENTENCE, "search": "beam", "beam": "5", "alpha": "0.6", "nbest": "3"}
    page.goto(f"{server}/Step_by_step?" + urllib.parse.urlencode(query))
    _step(page, 0)
    n = 0
    while page.get_by_role("button", name="Next").is_enabled():
        page.get_by_role("button", name="Next").click()
        n += 1
        _step(page, n)
        page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState"
                               " === 'notRunning'", timeout=60_000)  # the whole run drawn: the list and Result
        page.wait_for_timeout(300)
        radios = page.locator('[data-testid="stRadio"]').filter(has_text="Open a hypothesis")
        if radios.count():
            checked = radios.locator("input:checked")
            options = radios.locator('[role="radiogroup"] label')
            result = page.locator("p", has_text=re.compile(r"^Result:")).first.inner_text()
            picked = options.nth(radios.locator("input").evaluate_all(
                "inputs => inputs.findIndex(i => i.checked)")).inner_text()
            assert checked.count() == 1 and options.first.locator("input").is_checked()  # the best, none picked
            assert result.removeprefix("Result:").strip() in picked, (n, result, picked)
        assert n < 40
    labels = page.locator('[data-testid="stRadio"]').filter(has_text="Open a hypothesis").locator(
        '[role="radiogroup"] label')
    scores = [float(re.search(r"score (-?\d+\.\d+)\)", t).group(1)) for t in labels.all_inner_texts()]
    assert scores == sorted(scores, reverse=True)
    best = labels.first.inner_text().split(" (log-prob")[0]
    result = page.locator("p", has_text=re.compile(r"^Result:")).first.inner_text()
    assert result.removeprefix("Result:").strip() == best.strip()
    assert page.locator(EXCEPTION).count() == 0


def test_a_guide_step_link_opens_its_model_and_sentence_on_this_server(server, projector):  # noqa: F811  item 4
    page = projector
    page.goto(server + "/Teaching_guide")
    link = page.locator("a", has_text=re.compile(r"^Translate & Attention with")).first
    link.wait_for(timeout=60_000)
    assert link.get_attribute("href").startswith("Translate?model=en-fr-bible&text=")  # relative: this server
    if link.get_attribute("target") == "_blank":
        with page.context.expect_page() as opened:
            link.click()
        shown = opened.value
    else:
        link.click()
        shown = page
    shown.wait_for_url(re.compile(r"/Translate\?.*model=en-fr-bible"), timeout=60_000)
    box = shown.get_by_label(re.compile("English sentence"))
    expect(box).to_have_value(SENTENCE, timeout=120_000)
    expect(shown.get_by_text(re.compile(r"Dieu dit")).first).to_be_attached(timeout=120_000)  # its translation
    assert shown.locator(EXCEPTION).count() == 0

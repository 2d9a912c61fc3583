"""Decode step by step in a real browser: "femme" forced into "The man is here." on the teaching model is found in the
output, the step line, the candidate bars (violet), the beam tree and the link, and the link restores it; a forced
step reads at 1280x720 without overlapping labels; after Next to the end, beam search's Result is the tree's winner.
The page logic in AppTest: tests/app/test_step_forcing.py."""

import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from tests.browser.browsing import EXCEPTION, PLOT, SENTENCE
from tests.label_boxes import clipped, measure, overlapping
from transformer.decoding.translate import find_checkpoint
from ui.shared.state import class_mode

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(find_checkpoint() is None, reason="needs the shipped teaching model")]
IDLE = "document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState === 'notRunning'"


def _settled(page, step: int) -> None:
    expect(page.get_by_text(re.compile(rf"^Step {step}\.")).first).to_be_visible(timeout=120_000)
    page.wait_for_function(IDLE, timeout=120_000)
    page.wait_for_timeout(300)


def _forced_in_page(page) -> None:
    """The forced words in the output line (after the mark, on violet), the candidate list, the tree and the link."""
    output = page.locator("p", has_text=re.compile(r"^Step 2\. Output so far:")).first
    expect(output).to_contain_text("✎ La femme")
    assert "femme" in output.locator("span", has_text="✎").first.inner_text()  # the violet span holds it
    assert "prefix=La+femme" in page.url or "prefix=La%20femme" in page.url
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["prefix"] == ["La femme"]
    forced = page.locator("svg.bt g.node.forced")
    expect(forced).to_have_count(2)
    assert [t.strip() for t in forced.locator("text.label").all_text_contents()] == ["▁La", "▁femme"]
    assert page.locator("svg.bt g.node:not(.forced)").count() >= 1  # the root <s> at least
    expect(page.get_by_text("✎ marks the forced token")).to_be_visible()
    tick = page.locator(".role-axis-label text", has_text="✎").first  # the candidate bars' forced label, violet
    assert tick.evaluate("e => getComputedStyle(e).fill") == "rgb(123, 63, 160)"
    read = page.locator("p", has_text=re.compile(r"^At step 2 the decoder read")).first
    assert "La" in read.locator("span", has_text="✎").first.inner_text()  # the forced piece it read, marked


def test_force_femme_into_the_man_is_here_and_find_it_in_the_output_the_tree_and_the_link(server, page):
    query = {"model": "en-fr-teaching", "text": "The man is here.", "search": "beam", "beam": "3"}
    page.goto(f"{server}/Step_by_step?" + urllib.parse.urlencode(query))
    page.get_by_role("button", name="Next").click()
    _settled(page, 1)
    box = page.get_by_role("textbox", name="…or type a word")
    box.fill("La femme")
    box.press("Enter")
    page.wait_for_function(IDLE, timeout=60_000)
    page.get_by_role("button", name="Force", exact=True).click()
    _settled(page, 2)
    _forced_in_page(page)
    assert page.locator(EXCEPTION).count() == 0
    link = page.url
    page.get_by_role("button", name="Run to end").click()
    expect(page.locator("p", has_text=re.compile(r"^Result:")).first).to_contain_text("✎ La femme", timeout=120_000)
    page.goto(link)  # the link opens the page after the forcing: "the model after we made it say femme"
    _settled(page, 2)
    _forced_in_page(page)
    for step in (3, 4):
        page.get_by_role("button", name="Next").click()
        _settled(page, step)
    node = page.locator('svg.bt g.node[data-step="2"][data-rank="1"]')  # step 3's second node: not the beam's best
    piece = node.locator("text.label").text_content()
    node.click()
    page.get_by_role("button", name="Continue from here").click()
    _settled(page, 3)
    expect(page.locator("svg.bt g.node.forced")).to_have_count(3)
    assert page.locator("svg.bt g.node.forced text.label").last.text_content() == piece
    prefix = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["prefix"][0]
    assert prefix.startswith("La femme") and len(prefix) > len("La femme")
    assert page.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("mode", ["class", "normal"])
def test_a_forced_step_reads_at_1280_by_720_without_overlapping_labels(server, browser, mode):
    """The forced page as a projector shows it: the ✎ label and the violet ring fit, the force panel's buttons whole."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        query = {"model": "en-fr-teaching", "text": "The man is here.", "search": "beam", "beam": "3",
                 "prefix": "La femme", **({"class": "1"} if mode == "class" else {})}
        page.goto(f"{server}/Step_by_step?" + urllib.parse.urlencode(query))
        _settled(page, 2)
        for chart in range(3):  # the candidate bars and the two per-head maps, drawn (a loaded machine is slow)
            page.locator(PLOT).nth(chart).locator("svg text").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)  # the views' scripts
        groups = measure(page)
        assert groups and all(group.labels for group in groups)
        for group in groups:
            assert overlapping(group.labels) == [] and clipped(group) == [], mode
            if mode == "class":
                assert [label.text for label in group.labels if label.font < class_mode.LABEL_PX - 0.5] == []
        for name in ("Continue with this", "Force"):
            button = page.get_by_role("button", name=name, exact=True)
            assert button.evaluate("b => [b, ...b.querySelectorAll('*')].every(e => e.scrollWidth <= e.clientWidth + 1)"
                                   ), (mode, name)  # not cut short (an ellipsis)
        assert page.locator(EXCEPTION).count() == 0
    finally:
        context.close()


def _step(page, n: int) -> None:
    expect(page.get_by_text(re.compile(rf"^Step {n}\.")).first).to_be_visible(timeout=60_000)


def test_beam_result_is_the_trees_winner_after_pressing_next_to_the_end(server, projector):
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

"""The other pages in a real browser: Home, Decode step by step and the Teacher's guide open without an error, the
Train page gives a run a fresh name and shows its new state, and the guide's links (model card, corpus notes, a step's
link into the app) open on this server. UPDATE_SCREENSHOT=1 saves docs/tour-*.png (docs/tour.md); CLASS_SHOTS=DIR
keeps the guide's pictures."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.browsing import (
    EXCEPTION,
    PLOT,
    SENTENCE,
    VEGA_SVG,
    class_shot,
    needs_shipped_models,
    screenshot,
    select_box,
    sentence,
)

pytestmark = pytest.mark.e2e


def test_the_guides_model_card_and_corpus_links_open_in_the_app(server, projector, tmp_path):
    page = projector
    for name, heading in (("model card", "en-fr-teaching"), ("the corpus", "teaching corpus")):
        page.goto(server + "/Teaching_guide")
        expect(page.get_by_role("heading", name="Teaching with the Attention Explorer")).to_be_visible(
            timeout=60_000)
        link = page.locator("a", has_text=re.compile(f"^{name}$")).first
        target = link.get_attribute("target")
        if target == "_blank":  # Streamlit opens Markdown links in a new tab: that tab must show the document
            with page.context.expect_page() as opened:
                link.click()
            shown = opened.value
        else:
            link.click()
            shown = page
        expect(shown.get_by_role("heading", name=re.compile(heading, re.IGNORECASE)).first).to_be_visible(
            timeout=60_000)
        assert shown.get_by_text("Page not found").count() == 0 and shown.locator(EXCEPTION).count() == 0
        class_shot(shown, f"guide-{name.replace(' ', '-')}", tmp_path)
        if shown is not page:
            shown.close()


def test_train_page_gives_a_fresh_name_and_shows_the_runs_new_state(server, page, tmp_path):
    page.goto(server + "/Train")
    expect(page.get_by_role("heading", name="Train")).to_be_visible(timeout=60_000)
    page.get_by_text("Tokens per batch").wait_for(timeout=30_000)
    screenshot(page, "tour-train", tmp_path, until=page.get_by_role("button", name="Start training"))
    page.get_by_text("TSV file", exact=True).click()
    path = page.get_by_label("…or a TSV path on this machine")
    path.fill(str(tmp_path / "missing.tsv"))
    path.press("Enter")
    name = page.get_by_label("Run name")
    name.fill("e2e-missing-corpus")
    name.press("Enter")
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Start training").click()
    expect(name).not_to_have_value("e2e-missing-corpus", timeout=30_000)
    expect(name).to_have_value(re.compile(r"run-\d{8}-\d{6}"))
    run = select_box(page, "Run")
    expect(run).to_have_value(re.compile(r"e2e-missing-corpus \((failed|crashed)\)"), timeout=90_000)
    assert page.locator(EXCEPTION).count() == 0


def test_tour_of_the_other_pages(server, page, tmp_path):
    """Home, Decode step by step and the teacher's guide open without an error (and give docs/tour.md's pictures)."""
    page.goto(server + "/")
    expect(page.get_by_role("heading", name="Attention Explorer")).to_be_visible(timeout=60_000)
    page.get_by_text("d_model").first.wait_for(timeout=30_000)
    screenshot(page, "tour-home", tmp_path, until=page.get_by_text("Learn how attention works"))
    page.goto(server + "/Step_by_step?search=beam&beam=3&text=" + sentence().replace(" ", "+"))
    next_button = page.get_by_role("button", name="Next")
    for _ in range(4):
        next_button.click()
        page.wait_for_timeout(700)
    expect(page.get_by_text("Step 4.")).to_be_visible(timeout=30_000)
    page.get_by_role("heading", name="Beam tree").wait_for(timeout=30_000)
    bars = page.locator(PLOT).first  # the candidate bars: one per candidate, the chosen one outlined
    bars.locator(".mark-rect path, .mark-bar path, .role-mark path").first.wait_for(timeout=30_000)
    expect(bars.locator(".role-axis-label text", has_text="▶").first).to_be_visible()
    expect(page.locator(VEGA_SVG)).to_have_count(3)  # candidates, cross-attention and self-attention rows
    page.wait_for_timeout(1500)  # the views' layout, for the picture only
    screenshot(page, "tour-step", tmp_path)
    page.goto(server + "/Teaching_guide")
    expect(page.get_by_role("heading", name="Teaching with the Attention Explorer")).to_be_visible(timeout=60_000)
    assert page.locator(EXCEPTION).count() == 0


@needs_shipped_models
def test_a_guide_step_link_opens_its_model_and_sentence_on_this_server(server, projector):
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

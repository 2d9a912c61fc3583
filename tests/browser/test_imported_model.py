"""Every page in Chromium on an imported model of opus-mt's full size (random weights), as `transformer-import`
leaves it in checkpoints/: d_model 512, 6 + 6 layers, 8 heads, d_ff 2048, a 59,514-piece vocabulary (74M
parameters). Random weights repeat tokens: the test checks that each page opens without an exception box and
that the model view lays out its 48 cross-attention heads at a readable size, not the translations.

The model is built once for the module in a tmp folder (about a minute on two cores); the whole file keeps under
~3 minutes there.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) writes the Marian folder")
from playwright.sync_api import expect

from tests.browser.browsing import EXCEPTION, HEATMAP, PLOT, app_server
from tests.marian_fixtures import write_marian_folder
from transformer.model import hf

pytestmark = pytest.mark.e2e
NAME = "opus-mt-en-fr"
SENTENCE = "The children play football in the garden while my brother works at the hospital every evening."
FULL_SIZE = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
                 encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app over a checkpoints/ folder that holds only the imported full-size model."""
    words = tuple(w.strip(".") for w in SENTENCE.split())  # whole pieces, as opus-mt's vocabulary has them
    folder = write_marian_folder(tmp_path_factory.mktemp("hf") / NAME, vocab_size=59_514, source_words=words,
                                 **FULL_SIZE)
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    hf.import_marian(str(folder), checkpoints / NAME)
    env = {**os.environ, "EXPLORER_CHECKPOINTS": str(checkpoints), "PYTHONUNBUFFERED": "1",
           "EXPLORER_RUNS": str(tmp_path_factory.mktemp("runs"))}
    with app_server(env, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


def text_link() -> str:
    return "text=" + SENTENCE.replace(" ", "+")


def test_every_page_opens_on_the_full_size_model(server, page, tmp_path):
    page.goto(server + "/")
    expect(page.get_by_role("heading", name="Attention Explorer")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("6 encoder + 6 decoder")).to_be_visible(timeout=60_000)  # the model is loaded
    expect(page.get_by_text("one vocabulary of 59,514 pieces").first).to_be_visible()
    assert page.locator(EXCEPTION).count() == 0

    page.goto(server + "/Translate?" + text_link())
    expect(page.get_by_role("heading", name="Translation", exact=True)).to_be_visible(timeout=60_000)
    page.locator(PLOT).first.locator(HEATMAP).first.wait_for(timeout=30_000)
    page.get_by_text("Model view: every layer and head").click()
    grid = page.locator(PLOT).nth(1)
    grid.locator(HEATMAP).first.wait_for(timeout=60_000)
    cells = grid.locator(".mark-rect[class*='view_']")  # a small map's cells (the grid is always SVG)
    expect(cells).to_have_count(48, timeout=30_000)  # 6 layers x 8 heads of one family
    sizes = [cells.nth(i).bounding_box() for i in (0, 47)]
    assert all(box["width"] >= 60 and box["height"] >= 60 for box in sizes), sizes  # a head stays readable
    page.screenshot(path=str(tmp_path / "model-view.png"), full_page=True)
    assert page.locator(EXCEPTION).count() == 0

    page.goto(server + "/Step_by_step?" + text_link())
    expect(page.get_by_text("feed <pad>")).to_be_visible(timeout=60_000)
    for step in (1, 2):
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_text(f"Step {step}.")).to_be_visible(timeout=60_000)
    assert page.locator(EXCEPTION).count() == 0

    for path, heading in (("/Train", "Train"), ("/Learn", "Learn: how attention works"),
                          ("/Teaching_guide", "Teaching with the Attention Explorer")):
        page.goto(server + path)
        expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=60_000)
        assert page.locator(EXCEPTION).count() == 0, path

    page.goto(server + "/Explain_heads?view=stats")
    expect(page.get_by_text("records no training corpus")).to_be_visible(timeout=60_000)
    page.goto(server + "/Explain_heads?view=ablate&" + text_link())
    expect(page.get_by_text("Translation:")).to_be_visible(timeout=60_000)
    page.wait_for_timeout(2000)  # the rest of the view after the translation
    page.screenshot(path=str(tmp_path / "ablate.png"), full_page=True)

    page.goto(server + "/Dataset?split=teaching-test&limit=10")
    expect(page.get_by_role("heading", name="Dataset")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("records no training corpus")).to_be_visible(timeout=60_000)
    page.wait_for_timeout(2000)
    assert page.locator(EXCEPTION).count() == 0
    assert page.locator(EXCEPTION).count() == 0

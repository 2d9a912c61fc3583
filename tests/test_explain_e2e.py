"""Real browser: clicking a heatmap cell on the Explain heads page opens its arithmetic, and the HTML report
opens without the app. Shares the server of tests/test_e2e.py (skipped there, and so here, without chromium)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.app_fixtures import make_checkpoint
from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    HEATMAP,
    PLOT,
    _in_view,
    _sentence,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import Translator
from transformer.model.checkpoint import load_checkpoint
from ui.explain.html_report import sentence_report

pytestmark = pytest.mark.e2e


def _shot(page, name: str, tmp_path: Path) -> None:
    """EXPLAIN_SHOTS=DIR keeps the pictures for a look."""
    folder = Path(os.environ.get("EXPLAIN_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def test_clicking_a_cell_opens_its_arithmetic(server, page, tmp_path):  # noqa: F811
    page.goto(server + "/Explain_heads?view=cell&text=" + _sentence().replace(" ", "+"))
    plot = page.locator(PLOT).first
    plot.locator(HEATMAP).first.wait_for(timeout=60_000)
    expect(page.get_by_text("Click a cell of the map")).to_be_visible()
    grid = _in_view(plot.locator(".nsewdrag, rect.area").first)
    x, y = grid["x"] + grid["width"] * 0.02, grid["y"] + grid["height"] * 0.02  # inside the top-left cell
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    expect(page.get_by_text("(row 0) → key")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("the model's weight")).to_be_visible()
    softmax = page.locator('[data-testid="stMetricValue"]').nth(1).inner_text()
    model = page.locator('[data-testid="stMetricValue"]').nth(2).inner_text()
    assert softmax == model
    assert page.locator(EXCEPTION).count() == 0
    _shot(page, "explain-cell", tmp_path)
    page.get_by_text("Head importance", exact=True).click()
    expect(page.get_by_role("button", name="Compute head importance")).to_be_visible(timeout=30_000)
    assert page.locator(EXCEPTION).count() == 0


def test_the_html_report_opens_in_the_browser_and_shows_its_charts(page, tmp_path):
    translator = Translator(load_checkpoint(make_checkpoint(tmp_path / "tiny")))
    report = tmp_path / "report.html"
    report.write_text(sentence_report(translator.translate("the cat sleeps .", attention=True), model="tiny"),
                      encoding="utf-8")
    page.goto(report.as_uri())
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    expect(page.locator(".js-plotly-plot")).to_have_count(3 * 2 * 4)
    assert page.locator(".js-plotly-plot .heatmaplayer image").count() == 3 * 2 * 4
    expect(page.get_by_role("heading", name="the cat sleeps .")).to_be_visible()
    _shot(page, "explain-report", tmp_path)

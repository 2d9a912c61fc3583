"""Real browser: clicking a heatmap cell on the Explain heads page opens its arithmetic, the snapshots of a run
move under their slider in the browser, and the HTML report opens without the app (and without the network).
Shares the server of tests/test_e2e.py (skipped there, and so here, without chromium)."""

import os
from pathlib import Path

import pytest
import torch
from playwright.sync_api import expect  # noqa: E402, I001  (after test_e2e's skip)

from tests.app_fixtures import make_checkpoint
from tests.test_e2e import (  # noqa: F401, F811  (pytest fixtures)
    EXCEPTION,
    HEATMAP,
    PLOT,
    _in_view,
    _loopback_only,
    _sentence,
    app_server,
    browser_context_args,
    browser_type_launch_args,
    server,
)
from transformer.decoding.translate import Translator, find_checkpoint
from transformer.explain import FAMILIES
from transformer.model.checkpoint import load_checkpoint
from transformer.runs import ProbeRecord, RunFiles, append_metrics, write_probes, write_status
from ui.explain.html_report import sentence_report

pytestmark = pytest.mark.e2e
TITLE = ".role-title-text text"  # a Vega chart's title, as SVG text
CELLS = ".mark-rect.role-mark path"  # a heatmap's cells (not its legend's gradient)


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
    cell = _in_view(plot.locator(HEATMAP).first)  # the top-left cell: row 0, column 0
    x, y = cell["x"] + cell["width"] / 2, cell["y"] + cell["height"] / 2
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    expect(page.get_by_text("(row 0) → key")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("(column 0).")).to_be_visible()
    expect(page.get_by_text("the model's weight")).to_be_visible()
    softmax = page.locator('[data-testid="stMetricValue"]').nth(1).inner_text()
    model = page.locator('[data-testid="stMetricValue"]').nth(2).inner_text()
    assert softmax == model
    assert page.locator(EXCEPTION).count() == 0
    _shot(page, "explain-cell", tmp_path)
    page.get_by_text("Head importance", exact=True).click()
    expect(page.get_by_role("button", name="Compute head importance")).to_be_visible(timeout=30_000)
    assert page.locator(EXCEPTION).count() == 0


@pytest.fixture(scope="module")
def trained_server(tmp_path_factory):
    """The app with one run of three probe snapshots whose translation grows (so do the maps' rows)."""
    runs = tmp_path_factory.mktemp("runs")
    run = RunFiles(runs / "demo")
    run.root.mkdir()
    pieces = ["▁le", "▁chat", "▁dort", "</s>"]
    for step, n in ((100, 2), (200, 3), (300, 4)):
        record = ProbeRecord("the cat sleeps", " ".join(pieces[: n - 1]), ["▁the", "▁cat", "▁sleeps", "</s>"],
                             pieces[:n], ["<s>", *pieces[: n - 1]])
        shapes = {"enc_self": (4, 4), "dec_self": (n, n), "cross": (n, 4)}  # (queries, keys)
        write_probes(run, step, [record], [{f: torch.full((2, 4, *shapes[f]), 1 / shapes[f][1]) for f in FAMILIES}])
        append_metrics(run.metrics, {"step": step, "train_loss": 3.0 - step / 200})
    write_status(run, "finished", step=300, max_steps=300)
    env = {**os.environ, "EXPLORER_RUNS": str(runs), "PYTHONUNBUFFERED": "1"}
    if find_checkpoint() is None:
        checkpoints = tmp_path_factory.mktemp("checkpoints")
        make_checkpoint(checkpoints / "tiny")
        env["EXPLORER_CHECKPOINTS"] = str(checkpoints)
    with app_server(env, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


def test_the_snapshots_move_under_their_slider_in_the_browser(trained_server, page):
    page.goto(trained_server + "/Explain_heads?view=training")
    page.locator(PLOT).first.locator(HEATMAP).first.wait_for(timeout=120_000)
    page.get_by_text("Scrub through every snapshot in the browser").click()
    snapshots = page.locator(PLOT).last
    title = snapshots.locator(TITLE)
    expect(title).to_have_text("cross-attention (decoder → encoder), layer 1, mean of heads: step 300",
                               timeout=60_000)
    rows = snapshots.locator(".role-axis-label text")
    slider = snapshots.locator("input[type=range]")
    expect(slider).to_have_value("300")
    assert snapshots.locator(CELLS).count() == 4 * 4  # the newest snapshot: four rows of four keys
    slider.fill("100")  # no round trip to the server: Vega filters the snapshot and relabels the rows
    expect(title).to_have_text("cross-attention (decoder → encoder), layer 1, mean of heads: step 100")
    expect(snapshots.locator(CELLS)).to_have_count(2 * 4)
    expect(rows.filter(has_text="▁dort")).to_have_count(0)
    slider.fill("200")
    expect(snapshots.locator(CELLS)).to_have_count(3 * 4)
    assert page.locator(EXCEPTION).count() == 0


def test_the_html_report_opens_in_the_browser_and_shows_its_charts(page, tmp_path):
    translator = Translator(load_checkpoint(make_checkpoint(tmp_path / "tiny")))
    report = tmp_path / "report.html"
    report.write_text(sentence_report(translator.translate("the cat sleeps .", attention=True), model="tiny"),
                      encoding="utf-8")
    outside = _loopback_only(page)
    page.goto(report.as_uri())
    charts = page.locator(".map svg")
    expect(charts.first).to_be_visible(timeout=30_000)
    expect(charts).to_have_count(3 * 2 * 4)
    assert page.locator(f".map {CELLS}").count() > 3 * 2 * 4  # every map's cells, drawn as they were saved
    assert page.locator(f".map {CELLS} title").first.text_content().endswith(("0", "1", "2", "3", "4", "5",
                                                                                      "6", "7", "8", "9"))
    box = charts.first.bounding_box()
    assert box["width"] > 200 and box["height"] > 100  # laid out at their size, not squashed
    expect(page.get_by_role("heading", name="the cat sleeps .")).to_be_visible()
    assert outside == []  # nothing fetched: the report works offline
    _shot(page, "explain-report", tmp_path)

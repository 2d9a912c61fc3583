"""The Explain heads page in a real browser: a heatmap cell clicked opens its arithmetic, a run's snapshots move under
their slider, the HTML report opens without the app (and without the network), a typed sentence stays in the box and
the address bar across views, the Attribution, Logit lens and Patching views draw their charts, and a typed foil is
said in every chart with readable labels (tests/label_boxes.py) and kept in the address bar."""

import os
import re
import urllib.parse
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pytest
import torch
from playwright.sync_api import expect

from tests.app_fixtures import PAIRS, make_checkpoint
from tests.browser.browsing import (
    EXCEPTION,
    HEATMAP,
    PLOT,
    app_server,
    in_view,
    loopback_only,
    needs_shipped_models,
    sentence,
)
from tests.label_boxes import clipped, measure, overlapping
from transformer.decoding.translate import Translator, find_checkpoint
from transformer.explain import FAMILIES
from transformer.model.checkpoint import load_checkpoint
from transformer.runs import ProbeRecord, RunFiles, append_metrics, write_probes, write_status
from ui.explain.html_report import sentence_report
from ui.shared.state import class_mode

pytestmark = pytest.mark.e2e
TITLE = ".role-title-text text"  # a Vega chart's title, as SVG text
CELLS = ".mark-rect.role-mark path"  # a heatmap's cells (not its legend's gradient)
TYPED = "The old woman reads a book."
SWAPPABLE = "The woman gave her father water."  # "woman" -> "man": the same number of pieces
FOIL_TEACHING = "model=en-fr-teaching&text=The+man+is+here."  # L'homme: why ▁L' rather than ▁La?
FOIL_ARABIC = "model=en-ar-bible&text=And+he+said+to+the+woman.&foil_word=" + quote("الارض")
FOIL_LINKS = {"attribution": f"{FOIL_TEACHING}&foil_word=La", "patching": f"{FOIL_TEACHING}&foil_word=La",
              "attribution-ar": f"{FOIL_ARABIC}&pos=1", "patching-ar": FOIL_ARABIC}


def _shot(page, name: str, tmp_path: Path) -> None:
    """EXPLAIN_SHOTS=DIR keeps the pictures for a look."""
    folder = Path(os.environ.get("EXPLAIN_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def test_clicking_a_cell_opens_its_arithmetic(server, page, tmp_path):
    page.goto(server + "/Explain_heads?view=cell&text=" + sentence().replace(" ", "+"))
    plot = page.locator(PLOT).first
    plot.locator(HEATMAP).first.wait_for(timeout=60_000)
    expect(page.get_by_text("Click a cell of the map")).to_be_visible()
    cell = in_view(plot.locator(HEATMAP).first)  # the top-left cell: row 0, column 0
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
    outside = loopback_only(page)
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


@needs_shipped_models
def test_explain_heads_keeps_the_typed_sentence_in_the_box_and_the_address_bar(server, page):
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


@pytest.mark.parametrize(("view", "charts", "text"), [("attribution", 1, "IG gap at"),
                                                      ("lens", 1, "DecoderLens"),
                                                      ("patching", 4, "difference to restore")])
def test_each_view_draws_its_charts(server, page, view, charts, text):
    sentence = SWAPPABLE if find_checkpoint() else PAIRS[3][0]  # the shipped model, or the tiny one
    page.goto(f"{server}/Explain_heads?view={view}&text={urllib.parse.quote_plus(sentence)}")
    expect(page.get_by_text(text).first).to_be_visible(timeout=120_000)  # the first page also loads the model
    expect(page.locator(PLOT)).to_have_count(charts, timeout=60_000)
    assert page.locator(EXCEPTION).count() == 0


def _opened(browser, link: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(link)
    page.locator(PLOT).first.wait_for(timeout=180_000)
    page.wait_for_timeout(3000)  # the charts' layout pass
    assert page.locator(EXCEPTION).count() == 0
    return context, page


@needs_shipped_models
@pytest.mark.parametrize("mode", ["class", "normal"])
@pytest.mark.parametrize("name", list(FOIL_LINKS))
def test_a_linked_typed_foil_is_said_in_every_chart_with_readable_labels(server, browser, name, mode):
    view = name.removesuffix("-ar")
    context, page = _opened(browser, f"{server}/Explain_heads?view={view}&{FOIL_LINKS[name]}"
                            + ("&class=1" if mode == "class" else ""))
    try:
        titles = page.locator(f"{PLOT} :is(.role-title-text, .role-title-subtitle) text").evaluate_all(
            "els => els.map(e => e.textContent)")  # SVG text: no innerText
        contrasts = [t for t in titles if re.search(r"log p\(.+\) ?− log p\(.+\)", t)]  # lines joined
        assert len(contrasts) == (1 if view == "attribution" else 4), titles  # the bars; the four patching maps
        for group in measure(page):
            assert overlapping(group.labels) == [] and clipped(group) == [], (name, mode)
            if mode == "class":
                assert [label.text for label in group.labels if label.font < class_mode.LABEL_PX - 0.5] == []
    finally:
        context.close()


@needs_shipped_models
def test_a_word_typed_as_the_foil_is_drawn_and_kept_in_the_address_bar(server, browser):
    context, page = _opened(browser, f"{server}/Explain_heads?view=attribution&{FOIL_TEACHING}")
    try:
        box = page.get_by_role("textbox", name="…or type a word")
        box.fill("femmes")
        box.press("Enter")
        page.wait_for_function("() => location.search.includes('foil_word=femmes')", timeout=60_000)
        page.locator(f"{PLOT} .role-title-text text", has_text="− log p(▁femmes)").wait_for(timeout=60_000)
        assert parse_qs(urlparse(page.url).query)["foil_word"] == ["femmes"]
        assert page.get_by_text("Explained:").count() == 1 and page.locator(EXCEPTION).count() == 0
    finally:
        context.close()

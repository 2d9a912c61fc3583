"""Thousands of checkpoints and run folders: the model picker, Home and the Train page list a page
at a time, newest run first, and read only the folders they list, however many there are. Counted, not timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import APP, make_checkpoint
from ui.shared.models import catalog
from ui.shared.models.catalog import APP_MODEL, PAGE_SIZE
from ui.shared.training import jobs


def fake_checkpoint(path: Path) -> None:
    """What the listing looks at (config and weights present): never loaded here."""
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"")


def fill(root: Path, n: int) -> tuple[Path, Path]:
    """checkpoints/ with the app's model and n fake ones; runs/ with n runs, each with a best checkpoint."""
    checkpoints, runs = root / "checkpoints", root / "runs"
    make_checkpoint(checkpoints / APP_MODEL)
    for i in range(n):
        fake_checkpoint(checkpoints / f"model-{i:05d}")
        run = runs / f"run-{i:05d}"
        fake_checkpoint(run / "checkpoints" / "best")
        (run / "status.json").write_text(json.dumps({"state": "finished", "step": i}))
    return checkpoints, runs


@pytest.fixture
def counted(monkeypatch):
    """How many model folders (metadata) and run folders (status) were read."""
    reads = {"models": 0, "runs": 0}
    read_metadata, run_info = catalog.read_metadata, jobs.run_info

    def metadata(path):
        reads["models"] += 1
        return read_metadata(path)

    def info(root):
        reads["runs"] += 1
        return run_info(root)

    monkeypatch.setattr(catalog, "read_metadata", metadata)
    monkeypatch.setattr(jobs, "run_info", info)
    return reads


@pytest.mark.parametrize("n", [150, 600])
def test_listing_reads_a_page_of_folders_whatever_their_number(tmp_path, monkeypatch, counted, n):
    checkpoints, runs = fill(tmp_path, n)
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(runs))
    first = catalog.find_models()
    assert len(first) == PAGE_SIZE and first[0].key == APP_MODEL and counted["models"] == PAGE_SIZE
    assert [c.key for c in catalog.find_models(None)][:PAGE_SIZE] == [c.key for c in first]  # a page of the same list
    assert len(catalog.find_models(None)) == 1 + 2 * n
    newest = runs / f"run-{n // 2:05d}"
    newest.touch()  # the newest run is listed first
    listed = jobs.list_runs(runs)
    assert len(listed) == PAGE_SIZE and listed[0].root == newest
    counted["runs"] = 0
    jobs.list_runs(runs)
    assert counted["runs"] == PAGE_SIZE
    assert catalog.find_model(f"run/run-{n - 1:05d}/best").key == f"run/run-{n - 1:05d}/best"  # by key, not listed
    assert catalog.find_model(f"model-{n - 1:05d}").key == f"model-{n - 1:05d}"
    assert [catalog.find_model(k) for k in ("../x", "run/../best", "run/x/other", "run/run-00000/../..")] == [None] * 4


@pytest.mark.parametrize("page_path", ["app.py", "pages/1_Translate.py", "pages/3_Train.py"])
def test_pages_open_reading_a_page_of_folders(tmp_path, monkeypatch, counted, page_path):
    checkpoints, runs = fill(tmp_path, 600)
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(runs))
    at = AppTest.from_file(APP, default_timeout=60)
    if page_path != "app.py":
        at.run()
        counted.update(models=0, runs=0)  # one run of the page itself
        at.switch_page(page_path)
    at.run()
    assert not at.exception, at.exception
    assert counted["models"] <= 3 * (PAGE_SIZE + 1)  # the picker's page (+1: are there more?), Start from's
    assert counted["runs"] <= 2 * (PAGE_SIZE + 1)
    if page_path == "pages/3_Train.py":
        run_box = lambda: next(s for s in at.selectbox if s.label == "Run")  # noqa: E731
        assert len(run_box().options) == PAGE_SIZE and run_box().options[0].startswith("run-00599")
        at.button(key="train_more").click().run()
        assert len(run_box().options) == 2 * PAGE_SIZE


def test_a_link_to_a_model_beyond_the_first_page_opens_it(tmp_path, monkeypatch):
    checkpoints, runs = fill(tmp_path, 100)
    make_checkpoint(runs / "run-00000" / "checkpoints" / "latest")  # an old run: far down the list
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("EXPLORER_RUNS", str(runs))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["model"] = "run/run-00000/latest"
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception and not [w for w in at.warning if "not on this server" in w.value]
    assert at.session_state["model_path"] == str(runs / "run-00000" / "checkpoints" / "latest")

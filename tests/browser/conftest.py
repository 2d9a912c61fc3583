"""The browser tests' fixtures: Debian's chromium for pytest-playwright, a projector's window, and the app's server,
one per test module (started for the module's first test that asks for it, stopped after its last).

Without chromium these tests are skipped, unless REQUIRE_E2E=1 (CI), where a missing browser is an error."""

import os
from pathlib import Path

import pytest

from tests.app_fixtures import make_checkpoint
from tests.browser.browsing import ARABIC_MODEL, CHROMIUM, CHROMIUM_ARGS, PROJECTOR, app_server
from transformer.decoding.translate import find_checkpoint

if not CHROMIUM and os.environ.get("REQUIRE_E2E") == "1":
    raise RuntimeError("REQUIRE_E2E=1 but chromium is not installed (apt-get install -y chromium)")


def pytest_collection_modifyitems(config, items):
    if CHROMIUM:
        return
    skip = pytest.mark.skip(reason="chromium not found: apt-get install -y chromium")
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 1500}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app as a user starts it: with the shipped model (or a tiny one while none is shipped)."""
    env = {**os.environ, "EXPLORER_RUNS": str(tmp_path_factory.mktemp("runs")), "PYTHONUNBUFFERED": "1",
           "EXPLORER_ANY_TSV_PATH": "1",  # the Train test makes a run fail quickly with a missing file
           "EXPLORER_CACHE": str(tmp_path_factory.mktemp("cache"))}  # the Dataset page's tables
    if find_checkpoint() is None:
        checkpoints = tmp_path_factory.mktemp("checkpoints")
        make_checkpoint(checkpoints / "tiny")
        make_checkpoint(checkpoints / ARABIC_MODEL, tgt="ar")
        env["EXPLORER_CHECKPOINTS"] = str(checkpoints)
    with app_server(env, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


@pytest.fixture
def projector(browser):
    """A page in a window of a classroom projector's size."""
    context = browser.new_context(viewport=PROJECTOR)
    yield context.new_page()
    context.close()

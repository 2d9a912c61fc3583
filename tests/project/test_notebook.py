"""notebooks/quickstart.ipynb: committed without outputs, and run top to bottom so that it never rots.

The run uses a Jupyter kernel of this interpreter (jupyter_client starts the `python3` kernel with
sys.executable) and a per-cell timeout; cells are found by their tags, so that text cells can move.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"
CELL_TIMEOUT = 300  # seconds; the training cell, the longest, takes about a minute on 2 idle CPU cores
STARTUP_TIMEOUT = 120  # for the kernel to start and answer

pytestmark = pytest.mark.timeout(3 * CELL_TIMEOUT)  # the first test that uses `executed` waits for the whole run


def code_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def tagged(nb, tag: str):
    cells = [cell for cell in code_cells(nb) if tag in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"expected one code cell tagged {tag!r}, found {len(cells)}"
    return cells[0]


def text_of(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream" and out.name == "stdout")


def html_of(cell) -> list[str]:
    return [out.data["text/html"] for out in cell.outputs
            if out.output_type in ("display_data", "execute_result") and "text/html" in out.data]


def svg_texts(cell) -> list[list[str]]:
    """The texts of each chart a cell displayed through Altair's svg renderer (an image/svg+xml output, no HTML)."""
    drawn = [out.data["image/svg+xml"] for out in cell.outputs
             if out.output_type in ("display_data", "execute_result") and "image/svg+xml" in out.data]
    return [re.findall(r"<text[^>]*>([^<]*)</text>", svg) for svg in drawn]


def headers(texts: list[str], name: str) -> set[int]:
    """The numbers of a grid's "layer N" or "head N" headers."""
    return {int(t.split()[1]) for t in texts if re.fullmatch(rf"{name} \d+", t)}


def test_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for i, cell in enumerate(code_cells(nb)):
        assert cell.outputs == [], f"code cell {i} is committed with outputs: clear them before committing"
        assert cell.execution_count is None, f"code cell {i} is committed with an execution count"
    assert not [key for key in nb.metadata if key not in ("kernelspec", "language_info")], \
        "notebook metadata beyond kernelspec and language_info (widgets state, a front end's settings)"


@pytest.fixture(scope="module")
def executed():  # over a minute on 2 cores: the tests that run the notebook are `slow`, kept out of CI
    """The notebook, run top to bottom in its own folder (as Jupyter runs it), and the seconds it took."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    before = sorted(p.name for p in NOTEBOOK.parent.iterdir())
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, startup_timeout=STARTUP_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    # One torch thread, as tests/conftest.py sets for the in-process tests: a tiny model trains no slower on one,
    # and several times slower with two threads fighting for two cores that other processes also use.
    # MPLBACKEND from another test or the shell (e.g. Agg) would make plt.show() draw nothing in the kernel.
    env = {**{k: v for k, v in os.environ.items() if k != "MPLBACKEND"}, "OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    try:
        client.execute(env=env)
    except CellTimeoutError as e:
        pytest.fail(f"a cell of {NOTEBOOK.name} ran past {CELL_TIMEOUT} s (waiting for its kernel to finish it): {e}")
    except CellExecutionError as e:
        pytest.fail(f"a cell of {NOTEBOOK.name} raised:\n{e}")
    seconds = time.perf_counter() - started
    assert sorted(p.name for p in NOTEBOOK.parent.iterdir()) == before, "the notebook wrote into notebooks/"
    return nb, seconds


@pytest.mark.slow
def test_every_cell_ran_without_error(executed):
    nb, _ = executed
    for i, cell in enumerate(code_cells(nb)):
        assert cell.execution_count is not None, f"code cell {i} did not run"
        errors = [out for out in cell.outputs if out.output_type == "error"]
        assert not errors, f"code cell {i}: {errors[0].ename}: {errors[0].evalue}"


@pytest.mark.slow
def test_translation_is_french(executed):
    nb, _ = executed
    assert text_of(tagged(nb, "load")).startswith("en-fr-bible: 3 encoder + 3 decoder layers")  # the shipped model
    first_line = text_of(tagged(nb, "translate")).splitlines()[0]
    assert "Dieu" in first_line and "terre" in first_line, first_line  # In the beginning God created ... the earth


@pytest.mark.slow
def test_attention_views_are_displayed(executed):
    """The views of transformer.explain.views display as HTML (their _repr_html_): the shipped model's token lines,
    a beam step's lines, the beam tree, one token through the whole model; the heatmaps of every head (of its 3
    layers x 4 heads, of the probe) are Altair charts, drawn offline as SVG (no HTML that would fetch Vega)."""
    nb, _ = executed
    expected = {"head-view": ('<svg class="hv"', 1), "beam-attention": ('<svg class="hv"', 1),
                "beam-tree": ('<svg class="bt"', 1), "token-flow": ('<div class="tf"', 1)}
    for tag, (marker, count) in expected.items():
        shown = html_of(tagged(nb, tag))
        assert len(shown) == 1, f"cell {tag!r} displayed {len(shown)} views"
        assert shown[0].count(marker) == count, f"cell {tag!r}: {shown[0].count(marker)} x {marker}"
    lines = html_of(tagged(nb, "head-view"))[0]
    assert lines.count("<line ") > 100 and "stroke-opacity" in lines  # one line per visible weight
    tree = html_of(tagged(nb, "beam-tree"))[0]
    assert tree.count('class="node') > 3 * 4 and 'class="node finished win"' in tree  # the winner ended with </s>
    for tag in ("cross-attention", "probe"):
        cell = tagged(nb, tag)
        assert html_of(cell) == [] and len(svg_texts(cell)) == 1, f"cell {tag!r} displayed no chart, or HTML"
    cross = svg_texts(tagged(nb, "cross-attention"))[0]
    assert headers(cross, "layer") == {0, 1, 2} and headers(cross, "head") == {0, 1, 2, 3}
    assert {"target queries", "source keys"} <= set(cross) and any("Dieu" in t for t in cross)  # token labels
    probe = svg_texts(tagged(nb, "probe"))[0]
    assert len(headers(probe, "layer")) * len(headers(probe, "head")) >= 2


@pytest.mark.slow
def test_beam_search_steps_and_result(executed):
    nb, _ = executed
    steps = text_of(tagged(nb, "beam"))
    assert re.findall(r"^step (\d+)$", steps, flags=re.M) == ["1", "2", "3"]
    assert "live" in steps and "pruned" in steps  # a beam of 3 weighs more continuations than it keeps
    result = text_of(tagged(nb, "beam-result"))
    assert len(re.findall(r"^\s+-?\d+\.\d{3}\s+\S", result, flags=re.M)) == 3, result  # the 3-best list
    assert "same as translate(): True" in result


@pytest.mark.slow
def test_tiny_model_trained_and_probed(executed):
    nb, _ = executed
    log = text_of(tagged(nb, "train"))
    losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", log)]
    assert len(losses) >= 2 and losses[-1] < losses[0], log  # the loss fell
    assert re.search(r"eval at step \d+: dev_loss", log), log
    probe = text_of(tagged(nb, "probe"))
    assert re.search(r"step-\d{7}\n\s+source:\s+\S.*\n\s+translation:", probe), probe


@pytest.mark.slow
def test_forced_decoding_and_the_typed_foil_in_one_call_each(executed):
    """The forced cell puts the own and the forced translation side by side (totals, the forced pieces flagged, the
    note on the difference) and draws the forced one's maps; the foil cell explains f against a typed word."""
    nb, _ = executed
    forced = text_of(tagged(nb, "forced"))
    own_line, forced_line = forced.splitlines()[:2]
    assert own_line.lstrip().startswith("own: ") and forced_line.lstrip().startswith("forced: Dès le")
    totals = [float(x) for x in re.findall(r"\(log p (-\d+\.\d+)\)", forced)]
    assert len(totals) == 2 and totals[1] < totals[0]  # the model's own choice was more probable
    assert re.findall(r"^\s+(forced|chosen) ", forced, flags=re.M)[:3] == ["forced", "forced", "chosen"]
    assert "row" in forced.splitlines()[-1]  # the note: which rows the difference covers, or why there is none
    maps = svg_texts(tagged(nb, "forced"))[0]
    assert headers(maps, "layer") == {2} and headers(maps, "head") == {0, 1, 2, 3}  # layer 2's four heads
    foil = text_of(tagged(nb, "foil"))
    assert "pieces" in foil.splitlines()[0] and "the foil is its first" in foil.splitlines()[0]  # début: ▁déb ut
    f = float(re.search(r"= (-?\d+\.\d+); the source words", foil).group(1))
    assert f > 0 and len(re.findall(r"^\s+\S+\s+[+-]\d+\.\d+$", foil, flags=re.M)) == 4

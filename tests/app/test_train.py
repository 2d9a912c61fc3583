"""The Train page (AppTest): a run started, shown and stopped, a crashed run, the run box, fine-tuning,
corpora mixed with weights, resuming and opening a run, the curves' names."""

import json
import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import app, make_checkpoint, opened, page, selectbox, write_tsv
from tests.chart_reading import charts, curve_panels, curve_points, curves_of
from tests.data.test_corpus_mix import corpus_of, write_pairs
from transformer.runs import RunFiles, append_metrics, probe_steps, read_metrics, write_status
from ui.shared.text.plain import plain
from ui.shared.training import jobs


def dev_evaluated(root: Path) -> bool:
    """Whether the run has written its first probes and, after them, its first dev BLEU record."""
    return bool(probe_steps(root)) and any("dev_bleu" in record for record in read_metrics(root))


def test_train_page_starts_shows_and_stops_a_run(at, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    write_tsv(tmp_path / "data" / "pairs.tsv", copies=3)
    page(at, "pages/3_Train.py")
    at.radio(key="train_corpus").set_value("TSV file").run()
    at.selectbox(key="train_data_file").set_value("pairs.tsv")
    at.text_input(key="train_name").input("tiny-test")
    for key, value in {"train_steps_tiny": 400, "train_d_tiny": 32, "train_l_tiny": 1, "train_v_tiny": 200,
                       "train_t_tiny": 256, "train_e_tiny": 3, "train_threads": 1}.items():
        at.number_input(key=key).set_value(value)
    at.radio(key="train_device").set_value("cpu")
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error
    root = tmp_path / "runs" / "tiny-test"
    deadline = time.monotonic() + 60
    while not dev_evaluated(root) and time.monotonic() < deadline:  # run_every does not fire in AppTest
        time.sleep(0.3)
    at.run()
    assert jobs.run_info(root).state == "running", jobs.log_tail(root)
    drawn = charts(at)
    titles = [c.title for c in drawn]
    assert titles == ["", "tokens / s", "cross-attention, last layer, mean of heads"], titles  # + the probe's map
    curves = curves_of(at)  # loss, BLEU and learning rate, linked on one step axis
    assert curve_panels(curves)[:2] == ["loss", "dev BLEU / chrF"] and "learning rate" in curve_panels(curves)
    assert len(curve_points(curves, "train_loss")) >= 1 and len(curve_points(curves, "dev_bleu")) >= 1
    setup = {c.name: c for c in jobs.run_info(root).setup}  # how the run computes, as the trainer decided
    precision, optimizer = setup["precision"], setup["optimizer"]
    assert any(c.value == f"Precision **{plain(precision.value)}**: {plain(precision.reason)}." for c in at.caption)
    (listing,) = [m.value for m in at.markdown if m.value.startswith("- **device**")]
    assert f"- **optimizer**: {plain(optimizer.value)} ({plain(optimizer.reason)})" in listing.split("\n")
    assert len(listing.split("\n")) == len(setup) == 8 and "threads" in setup
    at.button(key="train_stop").click().run()
    deadline = time.monotonic() + 30
    while jobs.run_info(root).active and time.monotonic() < deadline:
        time.sleep(0.3)
    at.run()
    assert jobs.run_info(root).state == "stopped" and (root / "checkpoints" / "latest").is_dir()
    assert any("stopped" in m.value for m in at.markdown)
    at.button(key="train_open").click().run()
    assert not at.exception and at.session_state["model_path"].startswith(str(root))


def test_setup_choices_read_status_json_and_skip_what_is_malformed():
    setup = {"precision": {"value": "bf16", "reason": "this CPU has AVX-512 BF16"}, "torn": {"value": "x"},
             "compile": {"value": False, "reason": "off by default"}}
    assert jobs.setup_choices(setup) == (
        jobs.SetupChoice("precision", "bf16", "this CPU has AVX-512 BF16"),
        jobs.SetupChoice("compile", "off", "off by default"))
    assert jobs.setup_choices(None) == () and jobs.setup_choices(["precision"]) == ()


def test_train_page_shows_a_crashed_run(at, tmp_path):
    root = tmp_path / "runs" / "dead"
    root.mkdir(parents=True)
    (root / "status.json").write_text(json.dumps({"state": "running", "pid": 2**22 + 12345, "step": 3,
                                                  "max_steps": 10, "updated": time.time()}))
    (root / "process.log").write_text("Traceback ...\nRuntimeError: out of memory\n")
    page(at, "pages/3_Train.py")
    assert "crashed" in at.error[0].value
    assert "out of memory" in at.code[0].value


def test_train_run_box_shows_each_runs_current_state(at, tmp_path):
    root = tmp_path / "runs" / "done"
    root.mkdir(parents=True)
    status = {"state": "running", "pid": os.getpid(), "step": 3, "max_steps": 10, "updated": time.time()}
    (root / "status.json").write_text(json.dumps(status))
    page(at, "pages/3_Train.py")
    assert selectbox(at, "Run").options == ["done (running)"]
    (root / "status.json").write_text(json.dumps({**status, "state": "finished", "step": 10}))
    at.run()
    assert selectbox(at, "Run").options == ["done (finished)"] and at.session_state["train_run"] == "done"
    assert (root / "status.json").stat().st_mode & 0o777 != 0o600


def test_train_page_fine_tunes_a_trained_model(at, checkpoints, tmp_path, monkeypatch):
    from transformer.training import cli as train

    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    write_tsv(tmp_path / "data" / "pairs.tsv", copies=2)
    launched: list[list[str]] = []
    monkeypatch.setattr(jobs, "_launch",
                        lambda root, args: launched.append(args) or jobs.run_info(root))
    page(at, "pages/3_Train.py")
    at.radio(key="train_corpus").set_value("TSV file").run()
    at.selectbox(key="train_data_file").set_value("pairs.tsv")
    at.selectbox(key="train_init").set_value(str(checkpoints / "tiny-ar")).run()
    (warning,) = at.warning
    assert warning.value.endswith("translates ar → fr, the corpus en → fr: its vocabulary was not made for that pair.")
    at.selectbox(key="train_init").set_value(str(checkpoints / "tiny")).run()
    assert not at.warning and at.number_input(key="train_d_tiny").proto.disabled
    at.number_input(key="train_steps_tiny").set_value(2)
    at.text_input(key="train_name").input("tuned")
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error
    (args,) = launched
    assert args[args.index("--init-from") + 1] == str(checkpoints / "tiny")
    assert not {"--d-model", "--layers", "--vocab-size"} & set(args)
    # the flags the page built start a real fine-tuning run from the tiny checkpoint
    assert train.main([*args[:args.index("--out")], "--threads", "1", "--out", str(tmp_path / "real")]) == 0
    tuned = json.loads((tmp_path / "real" / "checkpoints" / "latest" / "config.json").read_text())
    assert tuned == json.loads((checkpoints / "tiny" / "config.json").read_text())


def test_resume_offers_the_runs_own_max_steps(monkeypatch, tmp_path, tiny_en_ar):
    at = app(monkeypatch, tmp_path, tiny_en_ar)
    root = tmp_path / "runs" / "stopped-run"
    make_checkpoint(RunFiles(root).checkpoint("latest"))
    write_status(RunFiles(root), "stopped", step=370, max_steps=1500)
    opened(at, "pages/3_Train.py")
    (more,) = [n for n in at.number_input if n.label == "Resume until step"]
    assert more.value == 1500  # not 740, twice the current step
    columns = list(at.columns)  # after Stop, Resume stands in the first of the three columns
    i = next(k for k, c in enumerate(columns) if any(n.label == "Resume until step" for n in c.number_input))
    assert [b.label for b in columns[i + 2].button] == ["Open in the explorer"]
    write_status(RunFiles(root), "finished", step=1500, max_steps=1500)  # at its end: as many steps again
    at.run()
    (more,) = [n for n in at.number_input if n.label == "Resume until step"]
    assert more.value == 3000


def test_the_train_page_shows_human_legend_names(monkeypatch, tmp_path, tiny_en_ar):
    at = app(monkeypatch, tmp_path, tiny_en_ar)
    root = tmp_path / "runs" / "one-point"
    root.mkdir(parents=True)
    append_metrics(RunFiles(root).metrics, {"step": 25, "train_loss": 7.822314, "lr": 1e-4, "tokens_per_s": 900.0})
    write_status(RunFiles(root), "stopped", step=25, max_steps=100)
    opened(at, "pages/3_Train.py")
    view = curves_of(at)
    names = set(view[1][next(iter(view[1]))]["name"])
    assert names == {"train loss", "learning rate"}


def test_open_in_the_explorer_then_another_model_picks_it_without_a_key_error(monkeypatch, tmp_path, tiny_and_other):
    at = app(monkeypatch, tmp_path, tiny_and_other)
    root = tmp_path / "runs" / "stopped-run"
    make_checkpoint(RunFiles(root).checkpoint("latest"))
    write_status(RunFiles(root), "stopped", step=370, max_steps=1500)
    opened(at, "pages/3_Train.py")
    at.button(key="train_open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["model_path"] == str(RunFiles(root).checkpoint("latest"))
    at.sidebar.selectbox(key="_model_select").set_value(str(tiny_and_other / "other")).run()
    assert not at.exception, at.exception
    assert at.session_state["model_path"] == str(tiny_and_other / "other")


@pytest.fixture
def train_page(tmp_path, monkeypatch):
    """The Train page with a data folder holding pairs.tsv; starting a run records its command instead."""

    from ui.shared.training import jobs

    make_checkpoint(tmp_path / "checkpoints" / "tiny")
    (tmp_path / "data").mkdir()
    write_pairs(tmp_path / "data" / "pairs.tsv", "pair", 40)
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path / "data"))
    launched: list[list[str]] = []

    def launch(root: Path, args: list[str]):
        launched.append(args)
        return jobs.run_info(root)

    monkeypatch.setattr(jobs, "_launch", launch)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.switch_page("pages/3_Train.py").run()  # the page itself, without a Home run first
    assert not at.exception, at.exception
    at.launched = launched
    return at


def start(at, name: str) -> list[str]:
    at.text_input(key="train_name").input(name)
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    (args,) = at.launched
    return args[:args.index("--out")]


def test_train_page_bible_with_several_translations(train_page):
    at = train_page
    at.radio(key="train_corpus").set_value("Bible").run()
    assert at.multiselect(key="train_bible_src_en").value == ["k"]
    assert at.multiselect(key="train_bible_tgt_fr").options == ["Louis Segond 1910", "Ostervald 1996", "Darby"]
    at.multiselect(key="train_bible_src_en").set_value(["k", "2", "3", "4"])
    at.multiselect(key="train_bible_tgt_fr").set_value([]).run()
    assert "at least one Bible translation" in at.warning[0].value
    at.multiselect(key="train_bible_tgt_fr").set_value(["l", "o", "5"]).run()
    spec = corpus_of(*start(at, "bible-multi"))
    assert (spec.kind, spec.src_translation, spec.tgt_translation) == ("bible", "k,2,3,4", "l,o,5")


def test_train_page_mixes_corpora_with_weights(train_page, tmp_path):
    at = train_page
    at.radio(key="train_corpus").set_value("Mix of corpora").run()
    at.multiselect(key="train_mix_bible_src_en").set_value(["k", "2"])
    at.checkbox(key="train_mix_teaching_on").check().run()
    at.number_input(key="train_mix_teaching_weight").set_value(2.0)
    at.multiselect(key="train_mix_files").set_value(["pairs.tsv"]).run()
    at.number_input(key="train_mix_file_pairs.tsv").set_value(3.0).run()
    assert any("Bible 17%, teaching 33%, pairs\\.tsv 50%" in c.value for c in at.caption)
    spec = corpus_of(*start(at, "mixed"))
    assert spec.kind == "mix" and [p.weight for p in spec.parts] == [1, 2, 3]
    bible, teaching, tsv = (p.spec for p in spec.parts)
    assert (bible.src_translation, bible.tgt_translation, teaching.kind) == ("k,2", "l", "teaching")
    assert (tsv.kind, tsv.path) == ("tsv", str(tmp_path / "data" / "pairs.tsv"))


def test_train_page_mix_needs_a_part_and_offers_teaching_only_for_en_fr(train_page):
    at = train_page
    at.radio(key="train_corpus").set_value("Mix of corpora").run()
    at.selectbox(key="train_mix_tgt").set_value("de").run()
    assert not [c for c in at.checkbox if c.key == "train_mix_teaching_on"]
    at.checkbox(key="train_mix_bible_on").uncheck().run()
    assert "at least one part" in at.warning[0].value
    at.button(key="train_start").click().run()
    assert "Choose the corpus first" in at.error[0].value and not at.launched

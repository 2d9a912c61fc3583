"""AppTest for every page: in-process, no browser. A tiny random-weight checkpoint stands in for the model."""

import json
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from tests.app_fixtures import PAIRS, home_facts, make_checkpoint, markdown_table, write_tsv
from tests.chart_reading import Drawn, charts
from tests.conftest import SPECIALS
from transformer.decoding.search import SearchSettings, search
from transformer.runs import probe_steps, read_metrics
from ui.shared.models.offline_examples import offline_examples
from ui.shared.text.plain import plain, table
from ui.shared.training import jobs


def test_home_describes_the_model(at):
    at.run()
    assert not at.exception
    assert at.title[0].value == "Attention Explorer"
    facts = home_facts(at)
    assert facts["heads"] == "4" and facts["test BLEU"] == "1.5" and facts["languages"] == "en → fr"
    description = facts["training data"]
    assert not any(description in c.value for c in at.caption)  # said once, in the table
    assert not at.table  # a Markdown table: st.table would load ~1 MB of Arrow's JavaScript into Home


def test_no_model_explains_how_to_train_one(at, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "none"))
    for path in ("pages/1_Translate.py", "pages/2_Step_by_step.py"):
        page(at, path)
        assert any("Train" in i.value for i in at.info)


def test_broken_checkpoint_shows_its_error(at, tmp_path, monkeypatch):
    broken = tmp_path / "ckpts" / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{not json")
    (broken / "model.safetensors").write_text("garbage")
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(broken.parent))
    at.run()
    assert not at.exception
    assert "cannot be loaded" in at.error[0].value and "config.json" in at.error[0].value


def test_translate_shows_translation_and_a_stochastic_heatmap(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[3][0]).run()
    assert not at.exception
    assert any(m.value.startswith("### ") for m in at.markdown)
    heat = charts(at)[0]
    z = map_values(heat)
    assert heat.marks()[:2] == ["rect", "rect"] and colour_domain(heat) == [0, 1]
    assert z.shape == (len(heat.labels("y")), len(heat.labels("x"))) and np.allclose(z.sum(1), 1, atol=1e-5)
    n_src = len(PAIRS[3][0].split()) + 1  # word-level pieces + </s>
    assert z.shape[1] == n_src  # cross-attention by default: columns are the source
    emitted = at.session_state["tr_result"].target_pieces  # rows: one per emitted token, labelled with it
    assert z.shape[0] == len(emitted) and heat.data("rect")["row_label"][0] == emitted[0]
    assert at.selectbox(key="tr_head").value == -1 and "mean of heads" in charts(at)[0].title
    at.selectbox(key="tr_head").set_value(1).run()
    assert "head 1" in charts(at)[0].title
    at.radio(key="tr_family").set_value("enc_self").run()
    at.toggle(key="tr_hide").set_value(True).run()
    z = map_values(charts(at)[0])
    assert z.shape == (n_src - 1, n_src - 1)
    assert any("less than 1" in c.value for c in at.caption)  # hidden specials: rows no longer sum to 1
    at.text_input(key="tr_text").input("   ").run()
    assert not at.exception and at.info


def test_model_view_is_built_only_while_its_expander_is_open(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[3][0]).run()
    assert len(charts(at)) == 1  # closed: the one heatmap, no grid of every layer and head
    at.session_state["tr_model_view_open"] = True
    at.run()
    assert not at.exception
    heatmap, grid = charts(at)
    cross = at.session_state["tr_result"].attention.cross  # n_layers x (H, T, S)
    maps = grid.data("rect")[["layer", "head"]].drop_duplicates()  # one small map per layer and head
    assert len(maps) == len(cross) * cross[0].shape[0]
    at.session_state["tr_model_view_open"] = False
    at.run()
    assert len(charts(at)) == 1


def test_learn_tables_are_built_only_while_their_expander_is_open(at):
    page(at, "pages/4_Learn.py")
    assert not at.dataframe and [e.label for e in at.expander if "tables" in e.label] == ["The same numbers as tables"]
    at.session_state["learn_tables_open"] = True
    at.run()
    qk, scores, output = (df.value for df in at.dataframe)  # Q and K, the scores through the softmax, the output
    assert qk.index[0].startswith("q (") and "softmax" in scores.columns and output.index.tolist() == ["output"]
    at.session_state["learn_tables_open"] = False
    at.run()
    assert not at.dataframe and not at.exception


def test_beam_translate_lists_nbest(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[0][0])
    at.radio(key="tr_method").set_value("beam").run()
    assert not at.exception
    result = at.session_state["tr_result"]
    assert result.alternatives and len(at.dataframe[0].value) == 1 + len(result.alternatives)
    assert any("prob-table" in m.value for m in at.markdown)  # the probabilities: HTML that wraps, not a grid


def test_step_page_advances_goes_back_and_reaches_the_one_shot_result(at):
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[5][0]).run()
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    assert at.session_state["step_session"].n_steps == 2 and not at.exception
    assert [c.title for c in charts(at)] == ["top 5 next tokens", "cross-attention per head",
                                             "self-attention per head"]  # candidates, cross row, self row
    at.button(key="step_back").click().run()
    assert at.session_state["step_session"].n_steps == 1
    at.button(key="step_run_to_end").click().run()
    assert not at.exception
    session = at.session_state["step_session"]
    checkpoint_model = session.model
    import torch

    one_shot = search(checkpoint_model, torch.tensor([session.src_ids]), SearchSettings(), specials=SPECIALS)[0].best
    assert session.result().best.tokens == one_shot.tokens
    assert any(m.value.startswith("**Result:**") for m in at.markdown)
    at.radio(key="step_method").set_value("beam").run()
    at.button(key="step_run_to_end").click().run()
    assert not at.exception and any(s.value == "Beam tree" for s in at.subheader)


def test_learn_page_rebuilds_attention_by_hand(at):
    page(at, "pages/4_Learn.py")
    assert len(charts(at)) == 4  # PE heatmap, sinusoids, two masks
    assert not at.dataframe  # the tables' expander is closed: nothing built, no data grid for the browser to load
    at.session_state["learn_tables_open"] = True  # what a click on the expander sends
    at.selectbox(key="learn_layer").set_value(1).run()
    assert len(at.dataframe) == 3  # Q and K, the scores through the softmax, the output
    table = at.dataframe[1].value
    assert np.allclose(table["softmax"], table["model's weight"], atol=1e-5) and not at.warning


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


def test_translate_view_is_in_the_link_and_a_link_opens_it(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[0][0]).run()
    at.radio(key="tr_family").set_value("enc_self").run()
    at.selectbox(key="tr_head").set_value(2).run()
    assert at.query_params["model"] == "tiny" and at.query_params["text"] == PAIRS[0][0]
    assert (at.query_params["att"], at.query_params["layer"], at.query_params["head"]) == ("enc_self", "0", "2")
    assert at.query_params["search"] == "greedy" and "beam" not in at.query_params
    shared = dict(at.query_params)
    opened = AppTest.from_file(APP, default_timeout=60)  # a reload: a new session with the same address
    opened.query_params.update({**shared, "model": "tiny-ar", "search": "beam", "beam": "3", "layer": "1"})
    opened.switch_page("pages/1_Translate.py").run()
    assert not opened.exception and not [w for w in opened.warning if "link" in w.value]
    assert opened.session_state["model_path"].endswith("tiny-ar")
    assert opened.text_input(key="tr_text").value == PAIRS[0][0]
    assert opened.text_input(key="tr_text").label == "Arabic sentence (press Enter to translate)"
    assert opened.slider(key="tr_beam").value == 3 and opened.radio(key="tr_method").value == "beam"
    assert charts(opened)[0].title == "encoder self-attention, layer 1, head 2"
    assert selectbox(opened, "Layer").value == 1


@pytest.mark.parametrize("params, message", [
    ({"model": "../../etc"}, "not on this server"), ({"layer": "9"}, "layers 0 to 1"),
    ({"head": "-3"}, "heads 0 to 3"), ({"att": "<script>"}, "Unknown attention"), ({"beam": "x"}, "Beam size"),
])
def test_a_bad_link_says_so_and_falls_back(at, params, message):
    at.query_params.update({"text": PAIRS[1][0], "search": "beam", **params})
    at.switch_page("pages/1_Translate.py").run()
    assert not at.exception
    assert any(message in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["model_path"].endswith("tiny") and charts(at)  # the default model, translated


def test_heatmap_downloads_name_the_head_and_offer_svg_and_csv(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[2][0]).run()
    selectbox(at, "Layer").set_value(1).run()
    at.selectbox(key="tr_head").set_value(1).run()
    assert charts(at)[0].title.endswith("layer 1, head 1")  # PNG: the chart's own toolbar, named by Streamlit
    assert [b.proto.label for b in at.get("download_button")] == [
        "Download all maps (.npz)", "Download all maps (.json)", "Download all maps (.csv)"]
    at.radio(key="chart_format").set_value("svg").run()
    svg = [b.proto for b in at.get("download_button") if b.proto.label == "SVG"]
    assert len(svg) == len(charts(at)) and svg[0].id.endswith("tr_heatmap_svg")  # one SVG button per chart


def test_captions_speak_of_each_family_and_explain_the_tokens(at):
    page(at, "pages/1_Translate.py")
    at.text_input(key="tr_text").input(PAIRS[2][0]).run()
    at.radio(key="tr_family").set_value("enc_self").run()
    caption = next(c.value for c in at.caption if c.value.startswith("Rows are"))
    assert "source queries" in caption and "emitted" not in caption and "decoder" not in caption
    assert any("▁" in m.value and "<unk>" in m.value and "</s>" in m.value for m in at.markdown)


def test_step_page_follows_a_picked_hypothesis_by_its_prefix(at):
    page(at, "pages/2_Step_by_step.py")
    at.text_input(key="step_text").input(PAIRS[9][0])
    at.radio(key="step_method").set_value("beam").run()
    at.slider(key="step_beam").set_value(4).run()
    for _ in range(3):
        at.button(key="step_next").click().run()
    followed = 0
    for _ in range(4):
        box = selectbox(at, "Hypothesis")
        last = len(box.options) - 1
        box.set_value(last).run()
        picked = at.session_state["step_hyp"]
        at.button(key="step_next").click().run()
        assert not at.exception
        now = at.session_state["step_hyp"]
        if any("has left the beam" in i.value for i in at.info):
            assert tuple(now) == tuple(at.session_state["step_session"].current.live[0].prefix)
            continue
        assert tuple(now[:len(picked)]) == tuple(picked) and len(now) == len(picked) + 1
        box = selectbox(at, "Hypothesis")
        rank = [tuple(h.prefix) for h in at.session_state["step_session"].current.live].index(tuple(now))
        read = next(m.value for m in at.markdown if "the decoder read" in m.value).split("**")[1]
        read = re.sub(r"\\(.)", r"\1", read).replace("\u2060", "")  # as shown: Markdown escapes undone
        assert box.options[box.value] == f"{rank}: {read}"  # the box shows the followed one, at its new rank
        followed += 1
    assert followed


def test_learn_pads_the_sentence_and_masks_the_padding(at):
    page(at, "pages/4_Learn.py")
    at.session_state["learn_tables_open"] = True
    at.slider(key="learn_pad_to").set_value(at.slider(key="learn_pad_to").value).run()
    table = at.dataframe[1].value
    n_pad = (table["key"] == "<pad>").sum()
    assert n_pad == 3 and table["may attend"].dtype == bool
    assert table["may attend"].tolist() == [True] * (len(table) - 3) + [False] * 3
    assert np.isneginf(table["after mask"].iloc[-3:]).all() and (table["softmax"].iloc[-3:] == 0).all()
    assert np.allclose(table["softmax"], table["model's weight"], atol=1e-5) and not at.warning
    at.text_input(key="learn_sentence").input("the king speaks to the people .").run()
    box = selectbox(at, "Query token")
    assert box.options[0] == "0: ▁the" and box.options[2] == "2: ▁speaks"


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


def test_model_picker_names_each_models_language_pair(at):
    at.run()
    (picker,) = [b for b in at.sidebar.selectbox if b.label == "Model"]
    assert picker.options == ["tiny · English → French", "tiny-ar · Arabic → French"]
    assert at.sidebar.caption[0].value.startswith("English → French")


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


def test_example_sentences_follow_the_chosen_model(tmp_path, monkeypatch):
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec, MixPart

    own = CorpusSpec(kind="tsv", path=str(write_tsv(tmp_path / "own.tsv")), test_fraction=0.2)
    corpora = {"bible-ar": CorpusSpec(kind="bible", src="en", tgt="ar"), "tsv-own": own,
               "mix": CorpusSpec.mix([MixPart(CorpusSpec(kind="bible")), MixPart(own)]),
               "mix-gone": CorpusSpec.mix([MixPart(CorpusSpec(kind="bible")),
                                           MixPart(CorpusSpec(kind="debian", path=str(tmp_path / "not-built")))])}
    for name, spec in corpora.items():
        path = make_checkpoint(tmp_path / "ckpts" / name, tgt=spec.tgt)
        metadata = json.loads((path / "metadata.json").read_text())
        (path / "metadata.json").write_text(json.dumps(metadata | {"corpus": spec.to_dict()}))
    monkeypatch.setenv("EXPLORER_CHECKPOINTS", str(tmp_path / "ckpts"))
    monkeypatch.setenv("EXPLORER_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPLORER_DATA", str(tmp_path))  # own.tsv is in the data folder: the page may read it
    for name, spec in corpora.items():
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["model"] = name
        at.switch_page("pages/1_Translate.py").run()
        assert not at.exception, at.exception
        if spec.kind == "mix":  # the parts' test sentences in turn; a Debian part not built here: offline ones
            verses = [s for s, _ in load_corpus(CorpusSpec(kind="bible")).test]
            other = [s for s, _ in load_corpus(own).test] if name == "mix" else offline_examples("debian")
            expected = ([v for pair in zip(verses, other) for v in pair] + verses[len(other):])[:300]
        else:
            expected = [s for s, _ in load_corpus(spec).test][:300]
        assert at.selectbox(key="tr_example").options[1:] == expected, name
        assert at.text_input(key="tr_text").value == expected[0]


def test_the_facts_table_shows_each_cell_as_typed():
    rows = {"training data": "a | b *bold* [link](x) www.example.org", "layers": "2 encoder + 2 decoder"}
    assert markdown_table(table(rows, ("", "value"))) == rows

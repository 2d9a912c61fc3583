"""A split as a table (transformer.explain.dataset): columns and numbers on the teaching test split, the
corpus scores equal transformer-evaluate's, slices, the cache (read back, corrupt, resumed, its writer killed
mid-write), a stop between sentences, TSVs, the projector."""

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
import torch

import transformer.explain.dataset as dataset
import transformer.explain.dataset_rows as dataset_rows
from transformer.decoding.evaluate import corpus_scores, evaluate_checkpoint
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator, find_checkpoint
from transformer.explain import cross_attention_aer, head_statistics
from transformer.explain.dataset import DatasetError, checkpoint_key, dataset_table, model_split, read_tsv, tsv_split
from transformer.explain.dataset_cache import STALE_TEMP_SECONDS, DatasetCacheError, cache_path, read_cache
from transformer.explain.dataset_rows import chunk_rows
from transformer.explain.dataset_slices import (
    best_lens,
    pca_2d,
    projector_points,
    slice_metrics,
    slice_statistics,
    slices,
)

TEACHING = "checkpoints/en-fr-teaching"
LIMIT = 20
pytestmark = pytest.mark.skipif(find_checkpoint() is None, reason="no shipped checkpoint")


@pytest.fixture(scope="module")
def translator():
    return Translator(TEACHING, batch_size=64)


@pytest.fixture(scope="module")
def split(translator):
    return model_split(translator.checkpoint.metadata, "test", limit=LIMIT)


@pytest.fixture(scope="module")
def result(translator, split, tmp_path_factory):
    return dataset_table(translator, split, cache_dir=tmp_path_factory.mktemp("cache"))


def small(split, n=6):
    return dataclasses.replace(split, pairs=split.pairs[:n], gold=split.gold[:n], constructions=split.constructions[:n],
                               key=f"{split.key}:first{n}", note="")


def test_the_table_has_every_column_and_each_number_is_the_sentence_score(result, split):
    table = result.table
    assert list(table.columns) == ["sentence", "source", "reference", "translation", "chrf", "bleu", "length_ratio",
                                   "mean_prob", "src_words", "length_bucket", "constructions", "exact", "aer"]
    assert len(table) == LIMIT and result.complete
    assert result.notes == (f"the first {LIMIT} of 500 sentences",)
    assert [(s, r) for s, r in zip(table["source"], table["reference"])] == list(split.pairs)
    for row in table.itertuples():
        assert row.chrf == pytest.approx(sacrebleu.sentence_chrf(row.translation, [row.reference]).score)
        assert row.bleu == pytest.approx(sacrebleu.sentence_bleu(row.translation, [row.reference]).score)
        assert row.exact == (row.translation == row.reference)
        assert 0.0 < row.mean_prob <= 1.0 and 0.0 <= row.aer <= 100.0 and row.constructions
    # the shipped model gets nearly all of the teaching test right (96% exact over 500 in its card)
    assert table["exact"].mean() >= 0.8
    assert (table.loc[table["exact"], "chrf"] == 100.0).all()


def test_the_corpus_scores_equal_transformer_evaluate_on_the_same_split(result):
    evaluated = evaluate_checkpoint(TEACHING, "test", limit=LIMIT)
    assert evaluated["sentences"] == LIMIT
    ours = result.corpus_scores
    assert (ours["bleu"], ours["chrf"]) == (evaluated["bleu"], evaluated["chrf"])
    assert ours["bleu_signature"] == evaluated["bleu_signature"]
    assert [s["hypothesis"] for s in evaluated["samples"]] == list(result.table["translation"][:10])


def test_slices_partition_or_cover_the_split_and_their_numbers_are_corpus_scores(result):
    table, n = result.table, LIMIT
    by_length = slices(result, "length")
    assert sum(m.sum() for m in by_length.values()) == n and (np.sum(list(by_length.values()), 0) == 1).all()
    by_construction = slices(result, "construction")
    assert (np.sum(list(by_construction.values()), 0) >= 1).all()  # every sentence is in at least one
    for name, mask in by_construction.items():
        assert all(name in c.split(", ") for c in table["constructions"][mask])
    word = table["source"][0].split()[1].lower()
    with_word = slices(result, "word", word)
    masks = list(with_word.values())
    assert masks[0][0] and (masks[0] ^ masks[1]).all()
    everything = slice_metrics(result, {"all": np.ones(n, dtype=bool)}).iloc[0]
    scores = corpus_scores(list(table["translation"]), list(table["reference"]))
    assert (everything["bleu"], everything["chrf"], everything["sentences"]) == (scores["bleu"], scores["chrf"], n)
    assert everything["exact"] == pytest.approx(100.0 * table["exact"].mean())
    metrics = slice_metrics(result, by_construction)
    assert list(metrics["slice"]) == list(by_construction)
    assert list(metrics["sentences"]) == [int(m.sum()) for m in by_construction.values()]
    with pytest.raises(DatasetError, match="one word"):
        slices(result, "word", "two words")
    with pytest.raises(DatasetError, match="slice by one of"):
        slices(result, "colour")


def test_a_slices_head_statistics_and_aer_equal_the_explain_functions_over_its_sentences(result, translator, split):
    model, tokenizer = translator.model, translator.tokenizer
    mask = np.zeros(LIMIT, dtype=bool)
    mask[[0, 3, 5, 8]] = True
    ours = slice_statistics(result, mask)
    theirs = head_statistics(model, tokenizer, [split.pairs[i] for i in np.flatnonzero(mask)])
    assert ours.sentences == theirs.sentences == 4
    for family, by_name in theirs.values.items():
        for name, values in by_name.items():
            assert torch.allclose(ours.get(family, name), values, equal_nan=True, atol=1e-6), (family, name)
    reference = cross_attention_aer(model, tokenizer, [split.gold[i] for i in np.flatnonzero(mask)])
    lens, _, value = best_lens(result, mask)
    assert lens == "raw" and value == pytest.approx(reference.best[2])


def test_the_second_call_reads_the_cache_and_a_corrupt_one_is_recomputed_with_a_message(translator, split, tmp_path,
                                                                                         monkeypatch):
    few = small(split)
    first = dataset_table(translator, few, cache_dir=tmp_path)
    files = list(tmp_path.glob("dataset-*.safetensors"))
    assert len(files) == 1

    def no_compute(*args, **kwargs):
        raise AssertionError("computed again")

    with monkeypatch.context() as patch:
        patch.setattr(dataset, "chunk_rows", no_compute)
        again = dataset_table(translator, few, cache_dir=tmp_path)
    assert again.table.equals(first.table) and again.notes == ()
    assert torch.equal(again.arrays["tokens.encoder.states"], first.arrays["tokens.encoder.states"])
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncated
    recomputed = dataset_table(translator, few, cache_dir=tmp_path)
    assert len(recomputed.notes) == 1 and "unusable and is recomputed" in recomputed.notes[0]
    assert recomputed.table.equals(first.table)
    assert dataset_table(translator, few, cache_dir=tmp_path).notes == ()  # rewritten whole


def test_a_run_stopped_at_its_time_cap_goes_on_from_the_cache(translator, split, tmp_path, monkeypatch):
    few = small(split, 5)
    monkeypatch.setattr(dataset, "CHUNK", 2)
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(dataset.time, "perf_counter", lambda: next(clock))  # 10 s a look: one chunk of 2, then the cap
    partial = dataset_table(translator, few, cache_dir=tmp_path, max_seconds=15)
    assert not partial.complete and len(partial.table) == 2
    assert "Stopped at the 15 s cap after 2 of 5 sentences" in partial.notes[-1]
    whole = dataset_table(translator, few, cache_dir=tmp_path)
    assert whole.complete and len(whole.table) == 5
    assert whole.table.drop(columns="aer").iloc[:2].equals(partial.table.drop(columns="aer"))
    fresh = dataset_table(translator, few)
    assert list(fresh.table["translation"]) == list(whole.table["translation"])
    assert (fresh.arrays["tokens.decoder.sentence"] == whole.arrays["tokens.decoder.sentence"]).all()
    assert cache_path(tmp_path, {"other": 1}) != next(tmp_path.glob("dataset-*"))


def test_a_tsv_is_read_with_its_bad_line_named(translator):
    assert read_tsv("\ufeffI see.\tJe vois.\n\nHello.\tBonjour.\tCC-BY\n") == [("I see.", "Je vois."),
                                                                             ("Hello.", "Bonjour.")]
    with pytest.raises(DatasetError, match="line 2 is not `source<TAB>reference`"):
        read_tsv("I see.\tJe vois.\nno tab here\n")
    with pytest.raises(DatasetError, match="no sentence pair"):
        read_tsv("\n \n")
    split = tsv_split("The man sees the dog.\tL'homme voit le chien.\nI see.\tJe vois.\n", limit=1)
    assert split.pairs == (("The man sees the dog.", "L'homme voit le chien."),) and split.note == \
        "the first 1 of 2 sentences"
    table = dataset_table(translator, split).table
    assert "exact" not in table and "constructions" not in table and len(table) == 1


def test_bad_arguments_are_refused_by_name(translator, split):
    with pytest.raises(DatasetError, match="split must be one of dev, test"):
        model_split(translator.checkpoint.metadata, "train")
    with pytest.raises(DatasetError, match="limit must be a whole number from 1 to 2000"):
        model_split(translator.checkpoint.metadata, "test", limit=0)
    with pytest.raises(DatasetError, match="does not say which corpus"):
        model_split({}, "test")
    with pytest.raises(ValueError, match="unknown lens 'x'"):
        dataset_table(translator, split, lenses=("x",))
    with pytest.raises(DatasetError, match="max_seconds must be positive"):
        dataset_table(translator, split, max_seconds=0)


def test_the_projector_places_every_token_by_pca(result):
    points = projector_points(result, "encoder")
    assert len(points) == sum(len(p) for p in result.pieces["encoder"])
    first = points.iloc[1]
    assert first["token"] == result.pieces["encoder"][0][1] and f"[{first['token']}]" in first["context"]
    decoder = projector_points(result, "decoder")
    assert len(decoder) == sum(len(p) for p in result.pieces["decoder"])
    rng = np.random.default_rng(0)
    line = np.outer(rng.normal(size=50), [3.0, 4.0, 0.0]) + 1.0  # points on one line through (1, 1, 1)
    xy = pca_2d(line)
    assert np.allclose(np.abs(xy[:, 0]), np.linalg.norm(line - line.mean(0), axis=1)) and np.allclose(xy[:, 1], 0)
    with pytest.raises(DatasetError, match="side must be one of encoder, decoder"):
        projector_points(result, "middle")


def test_a_bible_test_split_scores_as_transformer_evaluate_and_has_no_teaching_columns():
    path = "checkpoints/en-ar-bible"
    translator = Translator(path, batch_size=64)
    result = dataset_table(translator, model_split(translator.checkpoint.metadata, "test", limit=5))
    evaluated = evaluate_checkpoint(path, "test", limit=5)
    assert (result.corpus_scores["bleu"], result.corpus_scores["chrf"]) == (evaluated["bleu"], evaluated["chrf"])
    assert "exact" not in result.table and "aer" not in result.table and "constructions" not in result.table
    with pytest.raises(DatasetError, match="only the teaching corpus has constructions"):
        slices(result, "construction")
    assert sum(m.sum() for m in slices(result, "length").values()) == 5


def test_a_stop_ends_the_table_with_the_rows_done_and_the_next_call_goes_on_from_them(translator, split, tmp_path,
                                                                                     monkeypatch):
    few = small(split, 5)
    monkeypatch.setattr(dataset, "CHUNK", 2)
    stop = threading.Event()

    def stop_after_the_first_chunk(done: int, total: int) -> None:
        if done >= 2:
            stop.set()

    partial = dataset_table(translator, few, cache_dir=tmp_path, progress=stop_after_the_first_chunk, stop=stop)
    assert not partial.complete and len(partial.table) == 2
    assert partial.notes[-1] == ("Stopped on request after 2 of 5 sentences; run it again to go on from there. "
                                 "(The rows so far are cached.)")
    seen = []
    whole = dataset_table(translator, few, cache_dir=tmp_path, progress=lambda done, total: seen.append(done))
    assert seen == [2, 4, 5]  # read back the 2 rows done, then computed the rest
    assert whole.complete and whole.notes == ()
    assert list(whole.table["translation"]) == list(dataset_table(translator, few).table["translation"])


def test_a_chunk_asked_to_stop_returns_the_sentences_it_finished(translator, split, monkeypatch):
    pairs, gold, settings = split.pairs[:6], split.gold[:6], SearchSettings(beam_size=1)
    rows, arrays = chunk_rows(translator, pairs, gold, 10, ("raw",), settings)
    stop, scored = threading.Event(), []
    real = sacrebleu.sentence_bleu

    def bleu_then_stop_after_three(*args, **kwargs):  # called once per sentence, at the start of its scoring
        scored.append(1)
        if len(scored) == 3:
            stop.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(dataset_rows.sacrebleu, "sentence_bleu", bleu_then_stop_after_three)
    some_rows, some_arrays = chunk_rows(translator, pairs, gold, 10, ("raw",), settings, stop)
    assert some_rows == rows[:3]  # the sentence being scored when stop was set is finished, no other begins
    assert some_arrays.keys() == arrays.keys()
    for name, array in some_arrays.items():
        if name.startswith("sentence."):
            assert torch.equal(array, arrays[name][:3]), name
    tokens = arrays["tokens.encoder.sentence"]
    assert torch.equal(some_arrays["tokens.encoder.states"], arrays["tokens.encoder.states"][tokens < 13])
    assert set(some_arrays["tokens.decoder.sentence"].tolist()) == {10, 11, 12}
    assert chunk_rows(translator, pairs, gold, 10, ("raw",), settings, stop) == ([], {})  # set before: no work


# A fresh process tabulates the first 5 test sentences 2 at a time; its second cache write stops after half of the
# file's bytes are on disk (then says so and sleeps), and the test kills it there with SIGKILL.
KILLED_WRITER = textwrap.dedent("""
    import os, sys, time, types
    import transformer.explain.dataset as dataset
    import transformer.explain.dataset_cache as dataset_cache
    from transformer.decoding.translate import Translator

    class HalfThenHang:
        def __init__(self, f):
            self.f = f
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.f.__exit__(*exc)
        def write(self, data):
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            print("half written", flush=True)
            time.sleep(600)

    writes = []
    def fdopen(fd, mode):
        writes.append(fd)
        f = os.fdopen(fd, mode)
        return HalfThenHang(f) if len(writes) == 2 else f

    dataset_cache.os = types.SimpleNamespace(**{**vars(os), "fdopen": fdopen})
    dataset.CHUNK = 2
    translator = Translator(sys.argv[1], batch_size=64)
    split = dataset.model_split(translator.checkpoint.metadata, "test", limit=5)
    dataset.dataset_table(translator, split, cache_dir=sys.argv[2])
""")


def test_a_writer_killed_mid_write_leaves_the_last_whole_cache_and_the_next_run_resumes(translator, tmp_path):
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(root / TEACHING), str(tmp_path)], cwd=root,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        killer = threading.Timer(120, child.kill)  # a child that never writes its line ends, and the assert says so
        killer.start()
        line = child.stdout.readline()
        killer.cancel()
        assert line == "half written\n", f"the writer never reached its second write: {child.stderr.read()[-2000:]}"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    split = model_split(translator.checkpoint.metadata, "test", limit=5)
    key = {**checkpoint_key(translator), "split": split.key, "sentences": 5, "lenses": ["raw"]}
    path = cache_path(tmp_path, key)
    (temp,) = tmp_path.glob(f".{path.name}.*.tmp")  # the half-written file, never renamed over the cache
    with pytest.raises(DatasetCacheError, match="is not a dataset cache"):
        read_cache(temp, key)  # truly half of a file
    cached = read_cache(path, key)
    assert len(cached.rows) == 2 and cached.arrays["sentence.aer.raw"].shape[0] == 2  # the first write, whole
    old = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(temp, (old, old))  # as if the kill was an hour ago: the next write removes it
    seen = []
    resumed = dataset_table(translator, split, cache_dir=tmp_path, progress=lambda done, total: seen.append(done))
    assert seen[0] == 2 and resumed.complete and resumed.notes == ("the first 5 of 500 sentences",)
    assert list(resumed.table["translation"]) == list(dataset_table(translator, split).table["translation"])
    assert not temp.exists() and list(tmp_path.iterdir()) == [path]

"""Corpora mixed with weights: the spec and its JSON, the sampling, the --mix flag, evaluation per part."""

import json
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

from tests.app_fixtures import make_checkpoint
from transformer.data.corpora.base import CorpusError, ParallelCorpus
from transformer.data.corpora.mix import MIX_DEV_PAIRS, MixArg, format_mix_arg, mix_corpora, parse_mix_arg
from transformer.data.corpora.tsv import tsv_kind
from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec, MixPart
from transformer.decoding import evaluate
from transformer.training.cli import build_parser, spec_from_args
from transformer.training.run import create_run, load_run_spec


def write_pairs(path: Path, tag: str, n: int) -> Path:
    path.write_text("".join(f"{tag} {i} .\t{tag}fr {i} .\n" for i in range(n)), encoding="utf-8")
    return path


def tsv_spec(path: Path, **fields) -> CorpusSpec:
    return CorpusSpec(kind="tsv", path=str(path), dev_fraction=0.1, test_fraction=0.1, **fields)


@pytest.fixture
def two_files(tmp_path) -> tuple[Path, Path]:
    return write_pairs(tmp_path / "big.tsv", "big", 200), write_pairs(tmp_path / "small.tsv", "small", 30)


def tag_counts(pairs) -> Counter:
    return Counter(src.split()[0] for src, _ in pairs)


# --- Weights --------------------------------------------------------------------------------

def test_weights_are_shares_of_the_train_pairs(two_files):
    big, small = two_files
    spec = CorpusSpec.mix([MixPart(tsv_spec(big), 1), MixPart(tsv_spec(small), 3)])
    corpus = load_corpus(spec)
    parts = [load_corpus(tsv_spec(big)), load_corpus(tsv_spec(small))]
    total = len(parts[0].train) + len(parts[1].train)  # 160 + 24: an epoch keeps the parts' total size
    assert tag_counts(corpus.train) == {"big": total // 4, "small": 3 * total // 4}
    # undersampled: no pair twice; oversampled: every pair 5 or 6 times (138 = 5 x 24 + 18)
    assert max(Counter(p for p in corpus.train if p[0].startswith("big")).values()) == 1
    assert set(Counter(p for p in corpus.train if p[0].startswith("small")).values()) == {5, 6}
    assert load_corpus(spec) == corpus  # a fixed sample
    assert load_corpus(CorpusSpec.mix(spec.parts, seed=1)).train != corpus.train
    assert corpus.test == parts[0].test + parts[1].test and corpus.parts == tuple(parts)
    assert corpus.description == f"Mix: 25% {parts[0].description}; 75% {parts[1].description}"
    natural = load_corpus(CorpusSpec.mix([MixPart(tsv_spec(big), 160), MixPart(tsv_spec(small), 24)]))
    assert natural.train == parts[0].train + parts[1].train  # weights as the sizes: each part as it is
    assert tag_counts(load_corpus(CorpusSpec.mix([MixPart(tsv_spec(big)), MixPart(tsv_spec(small))])).train) == {
        "big": total // 2, "small": total // 2}  # equal weights: equal shares


def test_dev_is_interleaved_and_capped():
    def corpus(tag: str, n_dev: int) -> ParallelCorpus:
        dev = [(f"{tag} {i}", f"{tag}fr {i}") for i in range(n_dev)]
        return ParallelCorpus("en", "fr", [(f"{tag} train", "x")], dev, [], description=tag)

    mixed = mix_corpora([corpus("a", 3000), corpus("b", 5), corpus("c", 800)], [1, 1, 1])
    per_part = MIX_DEV_PAIRS // 3
    assert [src.split()[0] for src, _ in mixed.dev[:7]] == ["a", "b", "c", "a", "b", "c", "a"]
    assert tag_counts(mixed.dev) == {"a": per_part, "b": 5, "c": per_part}
    assert [src for src, _ in mixed.dev if src.startswith("a")][:3] == ["a 0", "a 9", "a 18"]  # spread out


def test_parts_must_share_the_language_pair(two_files):
    big, _ = two_files
    with pytest.raises(CorpusError, match="the mix is en -> fr, part 1 \\(tsv\\) is en -> de"):
        CorpusSpec(kind="mix", parts=(MixPart(CorpusSpec(kind="teaching")), MixPart(tsv_spec(big, tgt="de"))))
    with pytest.raises(CorpusError, match="part 1 \\(bible\\) is en -> de"):
        CorpusSpec.mix([MixPart(CorpusSpec(kind="teaching")), MixPart(CorpusSpec(kind="bible", tgt="de"))])
    german = ParallelCorpus("en", "de", [("a", "b")], [], [], description="German")
    with pytest.raises(CorpusError, match="part 1 \\(German\\) is en -> de"):
        mix_corpora([load_corpus(tsv_spec(big)), german], [1, 1])


@pytest.mark.parametrize("weight", [0, -1, float("inf"), float("nan")])
def test_weights_must_be_positive(weight):
    with pytest.raises(CorpusError, match="positive number"):
        MixPart(CorpusSpec(kind="teaching"), weight)


# --- The spec in run.json -------------------------------------------------------------------

def test_mix_spec_round_trips_and_old_flat_specs_still_load(two_files, tmp_path):
    big, small = two_files
    spec = CorpusSpec.mix([MixPart(CorpusSpec(kind="bible", src_translation="k,2", tgt_translation="l"), 1),
                           MixPart(tsv_spec(big), 2.5)], seed=3)
    data = json.loads(json.dumps(spec.to_dict()))
    assert data["parts"][1] == {"corpus": tsv_spec(big).to_dict(), "weight": 2.5}
    assert CorpusSpec.from_dict(data) == spec and (data["src"], data["tgt"]) == ("en", "fr")
    old = {"kind": "bible", "src": "en", "tgt": "fr", "src_translation": None, "tgt_translation": None, "path": None,
           "hf_name": None, "hf_config": None, "src_field": None, "tgt_field": None, "max_words": 100,
           "dedup": False, "seed": 0, "dev_fraction": 0.02, "test_fraction": 0.02}  # a shipped model's metadata
    assert CorpusSpec.from_dict(old) == CorpusSpec(kind="bible") and CorpusSpec(kind="bible").to_dict() == old
    with pytest.raises(CorpusError, match="a mix part is"):
        CorpusSpec.from_dict({**data, "parts": [{"corpus": old, "weight": 1, "colour": "red"}]})
    with pytest.raises(CorpusError, match="cannot be a mix"):
        MixPart(spec)
    with pytest.raises(CorpusError, match="only a mix has parts"):
        CorpusSpec(kind="teaching", parts=spec.parts)
    with pytest.raises(CorpusError, match="at least one part"):
        CorpusSpec(kind="mix")


def test_parts_are_named_by_index_or_unique_kind(two_files):
    big, small = two_files
    spec = CorpusSpec.mix([MixPart(CorpusSpec(kind="teaching")), MixPart(tsv_spec(big)), MixPart(tsv_spec(small))])
    assert (spec.part_index("teaching"), spec.part_index("2")) == (0, 2)
    with pytest.raises(CorpusError, match="no single part 'tsv'.*0 \\(teaching\\), 1 \\(tsv\\), 2 \\(tsv\\)"):
        spec.part_index("tsv")
    with pytest.raises(CorpusError, match="no single part '3'"):
        spec.part_index("3")
    with pytest.raises(CorpusError, match="only a model trained on a mix"):
        CorpusSpec(kind="teaching").part_index("0")


# --- The --mix flag -------------------------------------------------------------------------

@pytest.mark.parametrize("text, parsed", [
    ("bible", MixArg("bible", None, 1.0)),
    ("bible:k,2,3,4/l,o,5=0.5", MixArg("bible", "k,2,3,4/l,o,5", 0.5)),
    ("tsv:data/a=b:c.tsv=2", MixArg("tsv", "data/a=b:c.tsv", 2.0)),
    ("teaching=3", MixArg("teaching", None, 3.0)),
])
def test_parse_mix_arg(text, parsed):
    assert parse_mix_arg(text) == parsed
    assert parse_mix_arg(format_mix_arg(parsed.kind, parsed.value, parsed.weight)) == parsed


def corpus_of(*flags: str) -> CorpusSpec:
    return spec_from_args(build_parser().parse_args(["--out", "x", *flags])).corpus


def test_cli_builds_a_mix(two_files):
    big, _ = two_files
    spec = corpus_of("--src-translation", "k,2,3,4", "--tgt-translation", "l,o,5", "--max-words", "50",
                     "--mix", "bible=1", "--mix", f"tsv:{big}=2", "--mix", "teaching", "--mix", "bible:2>o=0.5")
    bible, tsv, teaching, other = spec.parts
    assert spec.kind == "mix" and [p.weight for p in spec.parts] == [1, 2, 1, 0.5]
    assert (bible.spec.src_translation, bible.spec.tgt_translation, bible.spec.max_words) == ("k,2,3,4", "l,o,5", 50)
    assert (tsv.spec.kind, tsv.spec.path, teaching.spec.kind) == ("tsv", str(big), "teaching")
    assert (other.spec.src_translation, other.spec.tgt_translation) == ("2", "o")
    assert corpus_of("--src-translation", "k,2", "--tgt-translation", "l").src_translation == "k,2"
    assert corpus_of().kind == "bible"


@pytest.mark.parametrize("flags, message", [
    (["--corpus", "tsv", "--mix", "teaching"], "drop --corpus"),
    (["--mix", "teaching=heavy"], "'heavy' after '=' is not a number"),
    (["--mix", "teaching=0"], "positive number"),
    (["--mix", "csv:a.tsv"], "expected bible\\[:SRC/TGT\\], teaching"),
    (["--mix", "teaching:x"], "teaching:x: expected"),
    (["--mix", "bible:k,2"], "expected SOURCE_CODES/TARGET_CODES"),
    (["--mix", "tsv"], "a tsv corpus needs `path`"),
    (["--tgt", "de", "--mix", "teaching"], "teaching corpus is English -> French"),
    (["--mix", "bible:k/s"], "'s' \\(Schlachter 1951\\) is in de, not in the target language fr"),
])
def test_cli_mix_errors(flags, message):
    with pytest.raises(CorpusError, match=message):
        corpus_of(*flags)


def test_train_cli_reports_a_bad_mix_before_creating_the_run(tmp_path, capsys):
    from transformer.training import cli as train

    assert train.main(["--out", str(tmp_path / "run"), "--mix", "bible:k/s"]) == 2
    assert "Schlachter" in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_resume_reads_the_mix_back(two_files, tmp_path):
    big, small = two_files
    spec = spec_from_args(build_parser().parse_args(["--out", "x", "--mix", f"tsv:{big}", "--mix", f"tsv:{small}=3"]))
    root = create_run(tmp_path / "run", spec)
    assert load_run_spec(root) == spec


# --- Debian parts ---------------------------------------------------------------------------

DEBIAN_ROWS = "".join(f"{split}\tpo/{split}.po\tOpen file {i}\tOuvrir le fichier {i}\n"
                      for i, split in enumerate(["train"] * 12 + ["dev", "test"]))


def test_debian_kind_reads_through_the_debian_module(tmp_path, monkeypatch):
    """The loader is called lazily with the spec's path and languages (a stand-in module here)."""
    calls = []

    def read_debian_corpus(path: Path, src: str = "en", tgt: str = "fr") -> ParallelCorpus:
        calls.append((path, src, tgt))
        return ParallelCorpus(src, tgt, [("Open", "Ouvrir")] * 3, [("Save", "Enregistrer")], [("Quit", "Quitter")],
                              description="Debian (stand-in)")

    monkeypatch.setitem(sys.modules, "transformer.data.corpora.debian",
                        types.SimpleNamespace(read_debian_corpus=read_debian_corpus))
    debian = CorpusSpec(kind="debian", path=str(tmp_path / "pairs.tsv"))
    teaching = CorpusSpec(kind="teaching", train_pairs=300)  # the part beside it; its 40k train pairs take 7 s
    mixed = load_corpus(CorpusSpec.mix([MixPart(debian, 2), MixPart(teaching)]))
    assert calls == [(tmp_path / "pairs.tsv", "en", "fr")]
    assert mixed.parts[0].description == "Debian (stand-in)" and ("Quit", "Quitter") in mixed.test
    with pytest.raises(CorpusError, match="a debian corpus needs `path`"):
        CorpusSpec(kind="debian")


def test_debian_file_in_a_mix(tmp_path):
    pytest.importorskip("transformer.data.corpora.debian")
    path = tmp_path / "pairs.tsv"
    path.write_text(DEBIAN_ROWS, encoding="utf-8")
    assert tsv_kind(path) == "debian" and tsv_kind(write_pairs(tmp_path / "plain.tsv", "a", 3)) == "tsv"
    spec = corpus_of("--mix", f"debian:{path}=2", "--mix", "teaching", "--train-pairs", "300")
    corpus = load_corpus(spec)
    assert corpus.parts[0].test == [("Open file 13", "Ouvrir le fichier 13")]
    assert tag_counts(corpus.train)["Open"] == round(len(corpus.train) * 2 / 3)


# --- Evaluation per part --------------------------------------------------------------------

def test_evaluate_scores_each_part_and_reproduces_the_bible_test(tmp_path, two_files):
    big, _ = two_files
    spec = CorpusSpec.mix([MixPart(CorpusSpec(kind="bible")), MixPart(tsv_spec(big), 3)])
    checkpoint = make_checkpoint(tmp_path / "mixed")
    metadata = json.loads((checkpoint / "metadata.json").read_text())
    (checkpoint / "metadata.json").write_text(json.dumps({**metadata, "corpus": spec.to_dict()}))
    bible_test = load_corpus(CorpusSpec(kind="bible")).test

    one = evaluate.evaluate_checkpoint(checkpoint, "test", part="bible", limit=3)
    assert one["part"] == 0 and one["sentences"] == 3 and "parts" not in one
    assert [(s["source"], s["reference"]) for s in one["samples"]] == bible_test[:3]
    assert one["description"] == "Bible: King James 1611 (en) -> Louis Segond 1910 (fr)"

    out = tmp_path / "all.json"
    assert evaluate.main(["--checkpoint", str(checkpoint), "--limit", "2", "--out", str(out)]) == 0
    every = json.loads(out.read_text())
    assert every["sentences"] == 4 and [p["sentences"] for p in every["parts"]] == [2, 2]
    assert [p["part"] for p in every["parts"]] == [0, 1] and every["description"].startswith("Mix: 25% Bible")
    assert evaluate.main(["--checkpoint", str(checkpoint), "--part", "hf"]) == 2


def test_a_mixed_run_trains_and_scores_each_part(two_files, tmp_path):
    from tests.training.test_training import TINY_MODEL
    from transformer.training.loop import Trainer
    from transformer.training.recipe import TokenizerSettings, TrainConfig
    from transformer.training.run import RunSpec

    big, small = two_files
    spec = RunSpec(CorpusSpec.mix([MixPart(tsv_spec(big)), MixPart(tsv_spec(small), 2)]),
                   TokenizerSettings(kind="wordlevel", vocab_size=600, min_frequency=1), TINY_MODEL,
                   TrainConfig(max_steps=2, max_tokens=400, eval_every=2, save_every=2, eval_sentences=4, threads=1))
    root = create_run(tmp_path / "run", spec)
    assert [r["step"] for r in Trainer(root).fit() if "dev_bleu" in r] == [2]
    metadata = json.loads((root / "checkpoints" / "best" / "metadata.json").read_text())
    assert CorpusSpec.from_dict(metadata["corpus"]) == spec.corpus and metadata["description"].startswith("Mix: 33%")
    scores = evaluate.evaluate_checkpoint(root / "checkpoints" / "best", "test")
    assert [p["sentences"] for p in scores["parts"]] == [20, 3] and scores["sentences"] == 23


# --- The Train page -------------------------------------------------------------------------

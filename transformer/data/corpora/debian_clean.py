"""Cleaning rules of the Debian corpus: from a raw (English, target) string pair to clean sentence pairs.

`clean_pair(en, tgt)` applies, in order (each rule was added for an artefact seen in the Debian 12 data):

1. whitespace normalisation (`normalize_text`: NFC, single spaces, no-break spaces become spaces);
2. placeholders: a pair is dropped when either side holds `%s`, `%d`, `%(name)s`, `%1$s`, Qt's `%1`,
   `{name}`/`{0}`, `$VAR`/`${VAR}`/`$1`, `$[officename]`-style or `@VAR@` substitutions, or a left-over
   `<tag>` (e.g. Cataclysm's `<npcname>`): the filled-in sentence is not known;
3. code-like text: a pair is dropped when the English holds a URL, a backslash, a brace or bracket, `=`
   (formulas, options), a `|` or a path: translation of prose, not of syntax;
4. sentence splitting: a string splits at `. ! ? …` followed by a capital, except after a known abbreviation
   ("e.g.", "M.", "p. ex."...); both sides are split only where they give the same number of sentences, and
   the i-th English sentence is paired with the i-th target one;
5. the short-label rule (`is_sentence_like`): the English side must have 3 to 40 words (a word is a token
   holding a letter), a lowercase letter, and must not end on a word that leaves it hanging ("the", "and",
   "click"...: an icon or link was cut out). It drops menu items, button labels, column headings and acronyms
   ("File", "Save As", "OK", "RGB"), fragments, and run-on paragraphs that could not be split;
6. untranslated pairs (the same text on both sides, ignoring case) are dropped, and so are pairs whose
   target has fewer than 0.6 or more than 2.0 times the English characters (French runs ~15% longer than
   English; below 0.6 the translation was found to leave out part of the English).

Catalog strings (gettext `.mo`) first go through `clean_catalog_text`: markup tags (Pango/HTML `<b>`, `<a
href>`...) and entities are removed, and keyboard accelerators (`_File`, `&File`, `~File`) lose their marker.

`dedupe` keeps the first of identical pairs; `split_of` puts a pair into train/dev/test by a hash of its
English side, so the split of a sentence never changes when sources are added or removed.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable

from transformer.data.corpora.base import Pair, normalize_text

MIN_WORDS, MAX_WORDS = 3, 40  # English words per sentence (the short-label rule)
MIN_LENGTH_RATIO, MAX_LENGTH_RATIO = 0.6, 2.0  # target characters / English characters
# A last English word that leaves the sentence hanging: an icon, link or variable was cut from it.
_HANGING = frozenset("a an the and or of to click choose press then".split())
TEST_FRACTION, DEV_FRACTION = 0.03, 0.02  # of distinct English sentences, by hash

_PLACEHOLDER = re.compile(r"""
      %(?:\(\w+\)|\d+\$)?[-+#0]*(?:\d+|\*)?(?:\.\d+)?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGcsSpn@]  # printf
    | %L?\d                      # Qt %1
    | \{[\w.\[\]]*(?:[:!][^{}]*)?\}   # Python/C# {name} {0} {:.2f}
    | \$[\[{(]?[A-Za-z_]\w*      # shell $VAR ${VAR}, LibreOffice $[officename]
    | \$\d                       # $1
    | @\w+@                      # autoconf @VAR@
    | <[/\w][^>]*>               # a tag left over after markup stripping
""", re.VERBOSE)
_CODE_LIKE = re.compile(r"://|www\.|\\|[{}\[\]=|]|(?:^|[\s'\"(])[~.]?/\w|\w/\w+/")
# Pango and (X)HTML tags that format text; any other <tag> is taken for a placeholder.
_MARKUP = re.compile(r"</?(?:a|b|i|u|s|em|strong|big|small|span|tt|sub|sup|br|p|div|code|kbd|qt|html|body|head|"
                     r"font|ul|ol|li|h\d|center|nobr|pre|cite|q|blockquote|var|samp|mark|del|ins)\b[^<>]*/?>",
                     re.IGNORECASE)
# GTK's _File (also mid-word: E_xit), Qt's &File (&& is a literal &, &amp; an entity), LibreOffice's ~File.
_ACCELERATORS = (re.compile(r"_(?=[^\W_])"), re.compile(r"&(?=[^\W\d_])(?![A-Za-z]+;)"), re.compile(r"~(?=[^\W\d_])"))
_BOUNDARY = re.compile(r"([.!?…][\"»”’)]*)\s+(?=[\"«“‘(]?[A-ZÀ-ÖØ-Þ0-9])")
_ABBREVIATIONS = frozenset("""e.g. i.e. etc. vs. cf. dr. mr. mrs. ms. st. no. nr. fig. approx. incl. max. min. ex.
    p. pp. vol. ed. inc. ltd. jr. sr. m. mme. mlle. me. n°. c.-à-d. ca. env. resp. tél. av. apr. j.-c.""".split())
_WORD = re.compile(r"\S*[^\W\d_]\S*")
_KEY = re.compile(r"[^\W_]+")


def clean_catalog_text(text: str) -> str:
    """A gettext/Qt UI string as plain text: markup tags and entities removed, accelerator markers dropped."""
    text = text.replace("&&", "\0")
    for marker in _ACCELERATORS:
        if len(marker.findall(text)) == 1:  # two candidates: an identifier or prose, not an accelerator
            text = marker.sub("", text)
    text = _MARKUP.sub(lambda m: " " if m.group(0).lower().startswith(("<br", "<p", "</p")) else "", text)
    return html.unescape(text.replace("\0", "&"))


def has_placeholder(text: str) -> bool:
    return _PLACEHOLDER.search(text) is not None


def looks_like_code(text: str) -> bool:
    return _CODE_LIKE.search(text) is not None


def split_sentences(text: str) -> list[str]:
    """Splits at sentence-final punctuation followed by a capital, never right after a known abbreviation."""
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        sentence = text[start:match.end(1)]
        last = sentence.split()[-1].lower().strip("\"«“(")
        if last in _ABBREVIATIONS or re.fullmatch(r"[^\W\d_]\.", last):  # an initial: "J. Smith"
            continue
        sentences.append(sentence.strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def align_sentences(en: str, tgt: str) -> list[Pair]:
    """Sentence pairs where both sides split into as many sentences; the unsplit pair otherwise."""
    en_parts, tgt_parts = split_sentences(en), split_sentences(tgt)
    if len(en_parts) == len(tgt_parts):
        return list(zip(en_parts, tgt_parts))
    return [(en, tgt)]


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def is_sentence_like(en: str) -> bool:
    """The short-label rule: 3 to 40 English words, a lowercase letter, and not hanging ("Select it and")."""
    last = en.split()[-1].lower() if en.strip() else ""
    return MIN_WORDS <= word_count(en) <= MAX_WORDS and any(c.islower() for c in en) and last not in _HANGING


def is_translated(en: str, tgt: str) -> bool:
    return bool(tgt) and en.casefold() != tgt.casefold()


def length_ratio_ok(en: str, tgt: str) -> bool:
    return bool(en) and MIN_LENGTH_RATIO <= len(tgt) / len(en) <= MAX_LENGTH_RATIO


def clean_pair(en: str, tgt: str) -> list[Pair]:
    """Clean sentence pairs from one plain-text pair (see the module docstring for the rules)."""
    en, tgt = normalize_text(en), normalize_text(tgt)
    if has_placeholder(en) or has_placeholder(tgt) or looks_like_code(en):
        return []
    return [(e, t) for e, t in align_sentences(en, tgt)
            if is_sentence_like(e) and is_translated(e, t) and length_ratio_ok(e, t)]


def dedupe(pairs: Iterable[tuple[str, Pair]]) -> list[tuple[str, Pair]]:
    """(source, pair) items with the first of identical pairs kept, in order."""
    seen: set[Pair] = set()
    kept = []
    for source, pair in pairs:
        if pair not in seen:
            seen.add(pair)
            kept.append((source, pair))
    return kept


def split_of(en: str) -> str:
    """train, dev or test, from a hash of the English sentence's letters and digits (case-folded), so that
    "Click OK." and "Click OK" land in the same split and a sentence keeps its split as the data changes."""
    key = " ".join(_KEY.findall(en.casefold()))
    share = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64
    if share < TEST_FRACTION:
        return "test"
    return "dev" if share < TEST_FRACTION + DEV_FRACTION else "train"

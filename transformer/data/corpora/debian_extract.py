"""Raw (English, target) string pairs from the three kinds of translated text Debian packages ship.

- gettext catalogs (`.mo`): `mo_pairs` reads the binary format directly (GNU gettext manual, "The Format of
  GNU MO Files"): msgid -> msgstr, the context (`msgctxt`) dropped, the singular of a plural entry kept
  with the first translation (`msgstr[0]`, French's form for n = 0 and 1). The header entry is skipped.
- LibreOffice help (`usr/share/libreoffice/help/<lang>/text/**.html`, compiled from .xhp): every
  paragraph or heading carries the same `par_id...`/`hd_id...` id in every language; `help_pairs` pairs
  them by page and id. Of the per-system variants (`switchinline`: MAC, WRITER, CALC...) the default one
  is kept; code paragraphs are skipped.
- GNOME Mallard help (`usr/share/help/{C,<lang>}/<doc>/*.page`): translations are made by itstool from
  the English page, so both pages have the same block structure; `mallard_pairs` pairs the text blocks
  (title, desc, p...) in document order, and pairs nothing when the block sequences differ.

Extractors return plain text (tags removed, entities decoded) but no other cleaning: see `debian_clean`.
"""

from __future__ import annotations

import codecs
import logging
import re
import struct
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from transformer.data.corpora.base import CorpusError, Pair

log = logging.getLogger(__name__)

_MO_MAGIC = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}


def _charset(header: bytes) -> str:
    """The catalog's encoding from its header ("Content-Type: text/plain; charset=UTF-8"); UTF-8 if unknown."""
    found = re.search(rb"charset=([\w-]+)", header)
    try:
        return codecs.lookup(found.group(1).decode()).name if found else "utf-8"
    except LookupError:  # "CHARSET", left from the template
        return "utf-8"


def mo_pairs(path: Path) -> list[Pair]:
    """(msgid, msgstr) of a compiled gettext catalog, untranslated entries and the header left out."""
    data = Path(path).read_bytes()
    order = _MO_MAGIC.get(data[:4])
    if order is None:
        raise CorpusError(f"{path} is not a gettext .mo file (bad magic number)")
    try:
        return _mo_entries(data, order)
    except struct.error as exc:
        raise CorpusError(f"{path} is a truncated or corrupt .mo file: {exc}") from exc


def _mo_entries(data: bytes, order: str) -> list[Pair]:
    count, ids_at, strs_at = struct.unpack_from(order + "3I", data, 8)
    charset = "utf-8"
    pairs = []
    for i in range(count):
        id_len, id_at = struct.unpack_from(order + "2I", data, ids_at + 8 * i)
        str_len, str_at = struct.unpack_from(order + "2I", data, strs_at + 8 * i)
        msgid, msgstr = data[id_at:id_at + id_len], data[str_at:str_at + str_len]
        if not msgid:  # the header
            charset = _charset(msgstr)
            continue
        singular = msgid.split(b"\x04")[-1].split(b"\x00")[0]
        first = msgstr.split(b"\x00")[0]
        if first:
            pairs.append((singular.decode(charset, "replace"), first.decode(charset, "replace")))
    return pairs


_QM_MAGIC = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")
_QM_MESSAGES, _QM_END, _QM_TRANSLATION, _QM_SOURCE, _QM_NULL = 0x69, 1, 3, 6, 0xFFFFFFFF
_QM_FIXED = {5: 4}  # Obsolete1: a 4-byte hash
_QM_SIZED = {2, 3, 4, 6, 7, 8}  # length-prefixed: SourceText16, Translation, Context16, SourceText, Context, Comment


def _qm_records(messages: bytes, path: Path) -> Iterator[dict[int, bytes]]:
    record: dict[int, bytes] = {}
    at = 0
    while at < len(messages):
        tag, at = messages[at], at + 1
        if tag == _QM_END:
            yield record
            record = {}
        elif tag in _QM_FIXED:
            at += _QM_FIXED[tag]
        elif tag in _QM_SIZED:
            (length,) = struct.unpack_from(">I", messages, at)
            at += 4
            if length != _QM_NULL:
                record.setdefault(tag, messages[at:at + length])  # a plural's first translation
                at += length
        else:
            raise CorpusError(f"{path}: unknown .qm record tag {tag:#x}")


def qm_pairs(path: Path) -> list[Pair]:
    """(source text, translation) of a compiled Qt catalog (.qm, the format of Qt's qm.cpp): the records of
    its Messages section, a plural (numerus) message with its first translation, untranslated ones left out."""
    data = Path(path).read_bytes()
    if not data.startswith(_QM_MAGIC):
        raise CorpusError(f"{path} is not a Qt .qm file (bad magic number)")
    at, messages = len(_QM_MAGIC), b""
    while at + 5 <= len(data):  # sections: a tag byte, a big-endian length, the body
        (length,) = struct.unpack_from(">I", data, at + 1)
        if data[at] == _QM_MESSAGES:
            messages = data[at + 5:at + 5 + length]
        at += 5 + length
    try:
        records = list(_qm_records(messages, path))
    except struct.error as exc:
        raise CorpusError(f"{path} is a truncated or corrupt .qm file: {exc}") from exc
    return [(record[_QM_SOURCE].decode("utf-8", "replace"), record[_QM_TRANSLATION].decode("utf-16-be", "replace"))
            for record in records if record.get(_QM_SOURCE) and record.get(_QM_TRANSLATION)]


# --- LibreOffice help ----------------------------------------------------------------------------

_HELP_ID = re.compile(r"(?:par|hd)_id\w+")
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_SKIPPED_CLASSES = frozenset({"code", "codeintable", "smathcode", "bascode", "pycode"})
_PRODUCT = "$[officename]"  # left unexpanded in a few compiled pages


class _HelpPage(HTMLParser):
    """Text of every element with a help id, outermost only, hidden variants other than the default skipped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: dict[str, str] = {}
        self._open: list[tuple[str | None, bool]] = []  # (help id or None, skipped) per open element
        self._current: str | None = None
        self._parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        attr = dict(attrs)
        element_id = attr.get("id") or ""
        hidden = "hidden" in attr and not element_id.startswith("default")
        skipped = hidden or attr.get("class") in _SKIPPED_CLASSES or tag in ("script", "style")
        claims = self._current is None and _HELP_ID.fullmatch(element_id) is not None and not skipped
        if claims:
            self._current, self._parts = element_id, []
        self._open.append((element_id if claims else None, skipped))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not self._open:
            return
        element_id, _ = self._open.pop()
        if element_id is not None:
            self.texts.setdefault(element_id, "".join(self._parts).replace(_PRODUCT, "LibreOffice"))
            self._current = None

    def handle_data(self, data: str) -> None:
        if self._current is not None and not any(skipped for _, skipped in self._open):
            self._parts.append(data)


def help_page_texts(path: Path) -> dict[str, str]:
    """Help id -> paragraph text of one compiled LibreOffice help page (the display area only)."""
    html = Path(path).read_text(encoding="utf-8")
    parser = _HelpPage()
    parser.feed(html[max(html.find('<div id="DisplayArea"'), 0):])
    return parser.texts


def help_pairs(en_root: Path, tgt_root: Path) -> list[Pair]:
    """Paragraph pairs of two LibreOffice help trees (`.../help/en-US`, `.../help/fr`), matched by page and id."""
    pairs = []
    for en_page in sorted(Path(en_root).rglob("*.html")):
        tgt_page = Path(tgt_root) / en_page.relative_to(en_root)
        if not tgt_page.is_file():
            continue
        tgt_texts = help_page_texts(tgt_page)
        pairs += [(text, tgt_texts[key]) for key, text in help_page_texts(en_page).items() if key in tgt_texts]
    return pairs


# --- GNOME Mallard help --------------------------------------------------------------------------

_BLOCKS = frozenset({"title", "subtitle", "desc", "p", "caption"})
_UNRENDERED = frozenset({"comment", "credit", "license", "revision", "media", "code", "screen", "synopsis"})
_JOINERS = {"keyseq": "+", "guiseq": " ▸ "}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _inline_text(elem: ET.Element) -> str | None:
    """The rendered text of a block; None where Mallard would fill it in (an empty <link/> shows a page title)."""
    name = _local(elem.tag)
    if name == "link" and not len(elem) and not (elem.text or "").strip():
        return None
    if name in ("media", "comment"):
        return ""
    parts = [_inline_text(child) for child in elem]
    if None in parts:
        return None
    if name in _JOINERS:
        return _JOINERS[name].join(p.strip() for p in parts)
    tails = [(child.tail or "") for child in elem]
    return (elem.text or "") + "".join(p + t for p, t in zip(parts, tails))


def mallard_blocks(elem: ET.Element) -> list[tuple[str, str | None]]:
    """(block name, text) of a page's rendered text blocks in document order."""
    blocks = []
    for child in elem:
        name = _local(child.tag)
        if name in _UNRENDERED:
            continue
        if name in _BLOCKS:
            blocks.append((name, _inline_text(child)))
        else:
            blocks += mallard_blocks(child)
    return blocks


def mallard_pairs(en_page: Path, tgt_page: Path) -> list[Pair]:
    """Block pairs of an English Mallard page and its translation; none if their block structures differ."""
    try:
        en_blocks, tgt_blocks = (mallard_blocks(ET.parse(p).getroot()) for p in (en_page, tgt_page))
    except ET.ParseError as exc:
        log.warning("skipping %s: %s", tgt_page, exc)
        return []
    if [name for name, _ in en_blocks] != [name for name, _ in tgt_blocks]:
        log.debug("skipping %s: block structure differs from %s", tgt_page, en_page)
        return []
    return [(en, tgt) for (_, en), (_, tgt) in zip(en_blocks, tgt_blocks) if en is not None and tgt is not None]

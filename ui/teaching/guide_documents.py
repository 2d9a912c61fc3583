"""The documents the Teacher's guide page shows: the guide itself, the model cards and the corpus notes, each
opened in the app by its key (`/Teaching_guide?doc=teaching-corpus`, a link relative to the page). No streamlit.

The guide's Markdown links between these files (`../checkpoints/en-fr-teaching/MODEL_CARD.md`) are paths in the
repository: in the browser they resolve against the page's address and open a blank tab or "Page not found".
`in_app_links` rewrites each one into a link to the same page with that document's key; a link to a file the
app does not show becomes its plain text. A link into the app itself (`http://HOST:8501/Translate?model=…`, the
address a teacher copies into slides) becomes relative to the page (`Translate?model=…`): it opens that view on
this server, whatever its address. `without_images` turns every image into a placeholder with its address.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ui.shared.models.catalog import REPO, checkpoints_dir

GUIDE = "guide"
APP = "http://HOST:8501/"  # the documents' placeholder for the app's address
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")  # [text](target), not an image
_ALT = r"((?:[^\[\]\n]|\[[^\]\n]*\])*)"  # an image's text, one level of brackets inside
_IMAGE = re.compile(r"!\[" + _ALT + r"\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_IMAGE_REF = re.compile(r"!\[" + _ALT + r"\](?:\[([^\]\n]*)\])?")  # ![text][label], ![text][], ![text]
_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:[ \t]*<?(\S+?)>?(?:[ \t].*)?$", flags=re.MULTILINE)


@dataclass(frozen=True)
class Document:
    key: str  # its name in a link: ?doc=KEY
    title: str
    path: Path


def documents() -> dict[str, Document]:
    """Every document the page shows, by key: the guide, the corpus notes in docs/, every shipped model's card."""
    docs = {GUIDE: Document(GUIDE, "Teacher's guide", REPO / "docs" / "teaching-guide.md")}
    for name, title in (("teaching-corpus", "The teaching corpus"), ("debian-corpus", "The Debian corpus")):
        docs[name] = Document(name, title, REPO / "docs" / f"{name}.md")
    root = checkpoints_dir()
    if root.is_dir():
        for card in sorted(root.glob("*/MODEL_CARD.md")):
            key = f"card-{card.parent.name}"
            docs[key] = Document(key, f"Model card: {card.parent.name}", card)
    return {k: d for k, d in docs.items() if d.path.is_file()}


def _key_of(target: Path, docs: dict[str, Document]) -> str | None:
    resolved = Path(os.path.abspath(target))
    return next((d.key for d in docs.values() if Path(os.path.abspath(d.path)) == resolved), None)


def in_app_links(markdown: str, document: Document, docs: dict[str, Document]) -> str:
    """markdown with every link to another shown document pointing at this page with its key; other relative
    links (a file the app does not serve) become their text. Web links and anchors stay as they are."""
    def rewrite(match: re.Match) -> str:
        text, target = match.group(1), match.group(2)
        if target.startswith(APP):
            return f"[{text}]({target.removeprefix(APP)})"
        if re.match(r"[a-z][a-z0-9+.-]*:|#", target, flags=re.IGNORECASE):  # https:, mailto:, #anchor
            return match.group(0)
        key = _key_of(document.path.parent / target.split("#")[0], docs)
        return f"[{text}](?doc={key})" if key else text

    return _LINK.sub(rewrite, markdown)


def _placeholder(text: str, address: str) -> str:
    shown = f" {text.strip()}" if text.strip() else ""
    return f"*[image{shown}: `{address.replace('`', '')}`]*"


def without_images(markdown: str) -> str:
    """markdown with every image (`![text](address)`, reference images too) as a placeholder naming its address:
    the app shows a document without making the browser fetch anything (everything works offline, and a card
    cannot call a remote address), and it serves no file a relative image could point to."""
    definitions = {label.lower(): address for label, address in _DEFINITION.findall(markdown)}
    markdown = _IMAGE.sub(lambda m: _placeholder(m.group(1), m.group(2)), markdown)

    def by_reference(match: re.Match) -> str:
        label = (match.group(2) or match.group(1)).lower()
        return _placeholder(match.group(1), definitions.get(label, "unknown address"))

    return _IMAGE_REF.sub(by_reference, markdown)

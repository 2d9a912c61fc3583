"""What every view shares: a `View` that displays itself in Jupyter and in a browser, SVG text helpers, the head
colours and which way a column of tokens reads. Plain strings, no third-party dependency: a view is one
self-contained HTML fragment (SVG + inline JS, no CDN), so that it works in an offline classroom."""

from __future__ import annotations

import html
import itertools
import json
import math
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# One colour per head (Tableau 10, as BertViz uses a categorical scale): distinct on a projector, in print too.
HEAD_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf")
FONT = "system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans','Noto Sans Arabic',sans-serif"
BASE_CSS = f""".tv{{font-family:{FONT};font-size:13px;color:#222;line-height:1.3}}
.tv button,.tv select{{font:inherit;margin:0 4px 4px 0;padding:2px 8px}}.tv .note{{color:#666;font-size:12px}}
.tv svg text{{fill:#222}}"""
LABEL_CHARS = 24  # a longer label is shortened (the full piece in its title or hover)
HOVER_CHARS = 200  # a piece in a hover repeated once per cell of a map (n x n times) is shortened to this
_ids = itertools.count()


def new_id(prefix: str) -> str:
    """A DOM id unique in a page that holds several views (a report, a notebook)."""
    return f"{prefix}-{next(_ids)}-{secrets.token_hex(3)}"


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def num(x: float, digits: int = 3) -> str:
    """A number as the views print it: fixed digits, −∞ for a masked score."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    return f"{x:.{digits}f}"


def is_rtl(text: str) -> bool:
    """True when text has more right-to-left letters (Arabic, Hebrew) than left-to-right ones."""
    balance = sum(1 if unicodedata.bidirectional(c) in ("R", "AL") else -1 if unicodedata.bidirectional(c) == "L"
                  else 0 for c in text)
    return balance > 0


def column_is_rtl(labels: Sequence[str]) -> bool:
    return is_rtl("".join(labels))


def anchored(edge: str, rtl: bool) -> str:
    """SVG attributes that put a label's `edge` ("left" or "right") at its x: right-to-left text starts on the right,
    so its anchors swap."""
    anchor = {("left", False): "start", ("right", False): "end", ("left", True): "end", ("right", True): "start"}
    return f'text-anchor="{anchor[edge, rtl]}"' + (' direction="rtl"' if rtl else "")


def shorten(label: str, limit: int = LABEL_CHARS) -> str:
    """At most `limit` characters: the rest becomes an ellipsis. Every view and chart of the app shortens a piece
    here and shows it whole in its title or hover; time and size grow with `limit`, not with the piece."""
    return label if len(label) <= limit else label[: max(limit - 1, 1)] + "…"


def _char_width(c: str, font_px: float) -> float:
    return font_px * (0.92 if c in "MWmw@%" or unicodedata.east_asian_width(c) in "WF" else 0.62)


def text_width(label: str, font_px: float) -> float:
    """A generous estimate of a label's width in a proportional font: wide letters count more."""
    return sum(_char_width(c, font_px) for c in label)


def fit(label: str, room: float, font_px: float) -> str:
    """The longest `shorten`ing of label (at least one character) whose `text_width` fits in room px. One pass
    over the characters that fit, so a piece of 20,000 letters costs what one of 20 does."""
    ellipsis = _char_width("…", font_px)
    used, cut = 0.0, 0  # cut: how many characters fit before an ellipsis
    for i, c in enumerate(label):
        used += _char_width(c, font_px)
        if used > room:
            return label[: max(cut, 1)] + "…"
        if used + ellipsis <= room:
            cut = i + 1
    return label


# Characters that HTML reads inside a <script> element ("</script>", "<!--", "<script" change where it ends) or
# that old JavaScript parsers take for line ends: written as JSON escapes, which mean the same characters.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                              "\u2029": "\\u2029"})


def data_json(value: object) -> str:
    """JSON safe inside a <script> element: the one way data enters a view's (or the app's) inline script."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_SAFE)


@dataclass(frozen=True)
class View:
    """A drawn view: `html` is one fragment (a root <div> with its SVG, controls and script); `height` the pixels
    it needs. Jupyter displays it through `_repr_html_`, as BertViz's head_view does; `document()` is a whole
    page for a browser or an iframe (streamlit.components.v1.html)."""

    kind: str
    html: str
    height: int
    width: int

    def _repr_html_(self) -> str:
        return self.html

    def document(self, title: str = "") -> str:
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title or self.kind)}</title>"
                f"<style>body{{margin:0;padding:4px}}</style></head><body>{self.html}</body></html>")

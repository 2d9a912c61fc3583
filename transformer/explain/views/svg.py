"""What every view shares: a `View` that displays itself in Jupyter and in a browser, SVG text helpers, the views'
style (font, sizes and colours, all from the charts' theme, `transformer.charts.theme`) and which way a column of
tokens reads. Plain strings: a view is one self-contained HTML fragment (SVG + inline JS, no CDN), so that it works
in an offline classroom."""

from __future__ import annotations

import html
import itertools
import json
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from transformer.bidi import is_rtl
from transformer.charts.theme import CATEGORIES, FONT, MUTED, NORMAL, TEXT
from transformer.labels import HOVER_CHARS, LABEL_CHARS, fit, shorten, text_width  # noqa: F401 (the views' names)

BODY_PX, NOTE_PX = NORMAL.body, NORMAL.label  # a view's own text; its notes and smaller text, a chart's label size
BASE_CSS = f""".tv{{font-family:{FONT};font-size:{BODY_PX}px;color:{TEXT};line-height:1.3}}
.tv button,.tv select{{font:inherit;margin:0 4px 4px 0;padding:2px 8px}}
.tv .note{{color:{MUTED};font-size:{NOTE_PX}px}}.tv svg text{{fill:{TEXT}}}"""
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


def column_is_rtl(labels: Sequence[str]) -> bool:
    return is_rtl("".join(labels))


def head_colour(head: int) -> str:
    """Head `head`'s colour: the theme's categories in turn (as BertViz colours its heads)."""
    return CATEGORIES[head % len(CATEGORIES)]


def anchored(edge: str, rtl: bool) -> str:
    """SVG attributes that put a label's `edge` ("left" or "right") at its x: right-to-left text starts on the right,
    so its anchors swap."""
    anchor = {("left", False): "start", ("right", False): "end", ("left", True): "end", ("right", True): "start"}
    return f'text-anchor="{anchor[edge, rtl]}"' + (' direction="rtl"' if rtl else "")


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
    font_px: float = 12.0  # the smallest text it draws (class mode zooms it until that one reads from afar)

    def _repr_html_(self) -> str:
        return self.html

    def zoomed(self, font_px: float) -> View:
        """The view magnified (CSS zoom: text, lines and spacing together, so nothing that was apart runs into
        anything) until its smallest text is font_px; the view itself when that text is already as large."""
        factor = font_px / self.font_px
        if factor <= 1:
            return self
        return View(self.kind, f'<div class="zoom" style="zoom:{factor:.3f}">{self.html}</div>',
                    math.ceil(self.height * factor), math.ceil(self.width * factor), font_px)

    def document(self, title: str = "") -> str:
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title or self.kind)}</title>"
                f"<style>body{{margin:0;padding:4px}}</style></head><body>{self.html}</body></html>")

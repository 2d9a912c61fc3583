"""Plotly's text in an SVG drawn without plotly.js: its HTML subset (`<br>`, `<b>`, `<span style='color:…'>`, entities)
as lines of runs, its hover and cell templates (`%{z:.3f}`, `%{customdata[0]}`) filled in, and a label's width in px.
Pure functions, no streamlit."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from typing import Any

FONT = '"Source Sans", "Source Sans Pro", "Open Sans", Arial, sans-serif'  # Streamlit's font, then plotly's
CHAR_EM = 0.58  # a character's average width in font sizes (what plotly's own label margins also assume)
_TAG = re.compile(r"<(/?)(b|br|span)(?:\s+style\s*=\s*(['\"])\s*color\s*:\s*([#\w(),. ]+?)\s*;?\s*\3)?\s*/?>",
                  re.IGNORECASE)
_FIELD = re.compile(r"%\{([a-z]+)(?:\[(\d+)\])?(?::([^}]*))?\}")
_FORMAT = re.compile(r"([+]?)(?:\.(\d+))?([f%])?")


class Unsupported(ValueError):
    """A figure (or a piece of it) this renderer cannot draw as plotly would: the caller falls back to plotly."""


Run = tuple[str, bool, str | None]  # text, bold, colour (None: the text's own)


def lines_of(text: str) -> list[list[Run]]:
    """Plotly's text (HTML-escaped tokens, `<br>` between lines, `<b>` for bold, `<span style='color:…'>` for a
    colour) as lines of (text, bold, colour) runs. A tag that styles text otherwise in plotly (`<i>`, `<sup>`, a
    span with another style, ...) is Unsupported; any other is kept as text: an unescaped token such as "<unk>" or
    "</s>" (which plotly would drop, or read as a strikethrough)."""
    if re.search(r"<\s*/?\s*(i|em|sup|sub|a)\b", text, re.IGNORECASE) or (
            len(re.findall(r"<\s*/?\s*span\b", text, re.IGNORECASE)) != len(
                [m for m in _TAG.finditer(text) if m.group(2).lower() == "span"])):
        raise Unsupported(f"HTML in {text[:60]!r}")
    lines: list[list[Run]] = [[]]
    bold = False
    colours: list[str] = []  # the open spans' colours, innermost last
    position = 0
    for match in [*_TAG.finditer(text), None]:
        end = match.start() if match else len(text)
        if end > position:
            lines[-1].append((html.unescape(text[position:end]), bold, colours[-1] if colours else None))
        if match is None:
            break
        position = match.end()
        tag, closing = match.group(2).lower(), match.group(1) == "/"
        if tag == "br":
            lines.append([])
        elif tag == "b":
            bold = not closing
        elif closing:
            colours = colours[:-1]
        elif match.group(4) is None:
            raise Unsupported(f"a span without a colour in {text[:60]!r}")
        else:
            colours.append(match.group(4))
    return lines


def plain(text: str) -> str:
    """The text without its markup, lines joined by newlines: what the hover box shows."""
    return "\n".join("".join(run[0] for run in line) for line in lines_of(text))


def text_width(text: str, font_px: float) -> float:
    """About how wide a label of plain text is, in px."""
    return CHAR_EM * font_px * len(text)


def label_width(text: str, font_px: float) -> float:
    return max((text_width("".join(run[0] for run in line), font_px) for line in lines_of(text)), default=0.0)


def number(value: Any, spec: str | None) -> str:
    """value as d3-format's spec writes it (the subset our figures use: `.3f`, `+.2f`, `.1%`), minus as U+2212."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if value != value:  # NaN
        return "NaN"
    if not spec:
        text = f"{value:.4g}" if isinstance(value, float) and not float(value).is_integer() else f"{value:g}"
        return text.replace("-", "\u2212")
    match = _FORMAT.fullmatch(spec)
    if not match:
        raise Unsupported(f"number format {spec!r}")
    sign, digits, kind = match.groups()
    if kind == "%":
        text = f"{value * 100:{sign}.{digits or 0}f}%"
    elif kind == "f" or digits is not None:
        text = f"{value:{sign}.{digits or 6}f}"
    else:
        text = f"{value:{sign}g}"
    return text.replace("-", "\u2212")


def fill_template(template: str, values: Mapping[str, Any]) -> str:
    """A plotly template with its fields filled from values (x, y, z, text, customdata) and `<extra>…</extra>`
    dropped; a field it has no value for is Unsupported."""
    template = re.sub(r"<extra>.*?</extra>", "", template, flags=re.DOTALL)

    def one(match: re.Match) -> str:
        name, index, spec = match.groups()
        if name not in values:
            raise Unsupported(f"template field {name}")
        value = values[name]
        if index is not None:
            value = value[int(index)] if isinstance(value, (list, tuple)) and int(index) < len(value) else ""
        elif isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        return number(value, spec)

    filled = _FIELD.sub(one, template)
    if "%{" in filled:
        raise Unsupported(f"template {template[:40]!r}")
    return filled


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def text_svg(x: float, y: float, text: str, font_px: float, *, anchor: str = "start", angle: float = 0,
             colour: str = "#31333f", baseline: str = "central", bold: bool = False, cls: str = "",
             line_px: float | None = None) -> str:
    """Plotly's text at (x, y) as one SVG <text> (one <tspan> per line and bold run), turned by angle degrees about
    (x, y); the lines are centred on y."""
    lines = lines_of(text)
    step = line_px or 1.25 * font_px
    first = -(len(lines) - 1) * step / 2
    parts = []
    for i, line in enumerate(lines):
        for j, (run, heavy, tint) in enumerate(line):
            place = f' x="{x:.1f}" dy="{(first if i == 0 else step):.1f}"' if j == 0 else ""
            weight = ' font-weight="bold"' if heavy else ""
            fill = f' fill="{escape(tint)}"' if tint else ""
            parts.append(f"<tspan{place}{weight}{fill}>{escape(run)}</tspan>")
        if not line:
            parts.append(f'<tspan x="{x:.1f}" dy="{(first if i == 0 else step):.1f}"></tspan>')
    turn = f' transform="rotate({angle:g} {x:.1f} {y:.1f})"' if angle else ""
    klass = f' class="{cls}"' if cls else ""
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text{klass} x="{x:.1f}" y="{y:.1f}" font-size="{font_px:g}" fill="{colour}" text-anchor="{anchor}" '
            f'dominant-baseline="{baseline}"{weight}{turn}>{"".join(parts)}</text>')


def rotated_extent(width: float, font_px: float, angle: float) -> tuple[float, float]:
    """(horizontal, vertical) px a label of this width takes when turned by angle degrees."""
    a = math.radians(angle)
    height = 1.2 * font_px
    return abs(width * math.cos(a)) + abs(height * math.sin(a)), abs(width * math.sin(a)) + abs(height * math.cos(a))

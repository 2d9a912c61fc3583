"""The pieces of an SVG heatmap figure (`ui.shared.svg_figure`): colour scales, cells as a pixelated image, tick
labels and axis titles, the colour bar, shapes, markers, notes and the title. Pure functions, no streamlit."""

from __future__ import annotations

import base64
import hashlib
import io
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.colors as pc

from ui.shared.svg_text import Unsupported, fill_template, label_width, lines_of, plain, rotated_extent, text_svg

TICK_GAP = 4  # px between a tick label and its plot area
DASHES = {"solid": "", "dot": "3,3", "dash": "9,9", "longdash": "15,15", "dashdot": "9,3,3,3"}


def _rgb(colour: str) -> tuple[float, float, float]:
    colour = colour.strip()
    if colour.startswith("#"):
        digits = colour[1:]
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))  # type: ignore[return-value]
    match = re.fullmatch(r"rgba?\(([^)]*)\)", colour)
    if match:
        return tuple(float(v) for v in match.group(1).split(",")[:3])  # type: ignore[return-value]
    named = {"black": (0, 0, 0), "white": (255, 255, 255), "red": (255, 0, 0), "grey": (128, 128, 128),
             "gray": (128, 128, 128)}
    if colour in named:
        return named[colour]
    raise Unsupported(f"colour {colour!r}")


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(v))):02x}" for v in rgb)


def colour_scale(scale: Any) -> list[tuple[float, tuple[float, float, float]]]:
    """A plotly colour scale (a name such as "Blues" or "RdBu_r", or [[position, colour], ...]) as (position, rgb)."""
    if isinstance(scale, str):
        scale = pc.get_colorscale(scale)
    return [(float(pos), _rgb(str(col))) for pos, col in scale]


def colour_at(scale: list[tuple[float, tuple[float, float, float]]], t: float) -> str:
    """The colour at t in 0..1 (clipped), interpolated in RGB between the scale's stops as plotly does."""
    t = min(1.0, max(0.0, t))
    for (p0, c0), (p1, c1) in zip(scale, scale[1:]):
        if t <= p1:
            f = 0.0 if p1 == p0 else (t - p0) / (p1 - p0)
            return _hex(tuple(a + f * (b - a) for a, b in zip(c0, c1)))  # type: ignore[arg-type]
    return _hex(scale[-1][1])


def dark(colour: str) -> bool:
    r, g, b = _rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b < 140  # plotly's cell text turns white on dark cells




def nice_step(raw: float, integer: bool = False) -> float:
    """The smallest of 1, 2, 5 x 10^k not under raw (at least 1 when integer)."""
    raw = max(raw, 1e-12)
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if m * base >= raw - 1e-12)
    return max(step, 1.0) if integer else step


def number_label(value: float, step: float) -> str:
    """A tick number as plotly writes it: the step's decimals without trailing zeros, minus as U+2212."""
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    text = f"{value:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if float(text) == 0 else text.replace("-", "\u2212")




def colours_at(scale: list[tuple[float, tuple[float, float, float]]], t: np.ndarray) -> np.ndarray:
    """`colour_at` of every value of t at once: (..., 4) RGBA bytes, alpha 0 where t is not finite."""
    positions = [p for p, _ in scale]
    finite = np.isfinite(t)
    clipped = np.clip(np.where(finite, t, 0.0), 0.0, 1.0)
    rgba = np.zeros((*t.shape, 4), dtype=np.uint8)  # (rows, columns, RGBA)
    for k in range(3):
        rgba[..., k] = np.rint(np.interp(clipped, positions, [c[k] for _, c in scale]))
    rgba[..., 3] = np.where(finite, 255, 0)
    return rgba


def png_cells(pixels: np.ndarray, x: float, y: float, width: float, height: float, flip_x: bool,
              flip_y: bool) -> str:
    """Cells (rows x columns x RGBA bytes) as one pixelated PNG image over the box: as plotly draws a large heatmap,
    and a fraction of the size of one element per cell."""
    from PIL import Image

    if flip_x:
        pixels = pixels[:, ::-1]
    if flip_y:
        pixels = pixels[::-1]
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGBA").save(buffer, "PNG")
    data = base64.b64encode(buffer.getvalue()).decode()
    return (f'<image class="cells" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" '
            f'preserveAspectRatio="none" style="image-rendering:pixelated" href="data:image/png;base64,{data}"/>')


def tick_parts(a: Any, edge: float, base: float, colour: str) -> str:
    """An axis's tick labels beside its plot area (edge: px of the plot's side they stand on) and its title."""
    ticks = a.ticks()
    font = a.layout.tickfont.size or base
    horizontal = a.name.startswith("x")
    out = []
    room = 0.0
    if horizontal:
        top = a.layout.side == "top"
        spacing = abs(a.p1 - a.p0) / max(len(ticks), 1)
        angle = a.tick_angle(ticks, spacing, font)
        for value, text in ticks:
            x = a.px(value)
            if not min(a.p0, a.p1) - 1 <= x <= max(a.p0, a.p1) + 1:
                continue
            if angle == 0:
                y = edge - TICK_GAP - 0.6 * font if top else edge + TICK_GAP + 0.6 * font
                out.append(text_svg(x, y, text, font, anchor="middle", colour=colour, cls="xt"))
            else:
                y = edge - TICK_GAP if top else edge + TICK_GAP
                start = (angle < 0) == top
                out.append(text_svg(x, y, text, font, anchor="start" if start else "end", angle=angle,
                                    colour=colour, cls="xt"))
            room = max(room, rotated_extent(label_width(text, font), font, angle)[1])
    else:
        for value, text in ticks:
            y = a.px(value)
            if min(a.p0, a.p1) - 1 <= y <= max(a.p0, a.p1) + 1:
                out.append(text_svg(edge - TICK_GAP, y, text, font, anchor="end", colour=colour, cls="yt"))
                room = max(room, label_width(text, font))
    title = a.layout.title.text
    if title:
        size = a.layout.title.font.size or round(base * 14 / 12)
        middle = (a.p0 + a.p1) / 2
        offset = TICK_GAP + room + (a.layout.title.standoff or 6) + 0.65 * size
        if horizontal:
            y = edge - offset if a.layout.side == "top" else edge + offset
            out.append(text_svg(middle, y, title, size, anchor="middle", colour=colour, cls="at"))
        else:
            out.append(text_svg(max(edge - offset, 0.65 * size), middle, title, size, anchor="middle", angle=-90,
                                colour=colour, cls="at"))
    return "".join(out)


def colour_bar(trace: Any, scale: list[tuple[float, tuple[float, float, float]]], z_range: tuple[float, float],
               ticks: list[tuple[float, str]], plot: tuple[float, ...], base: float, colour: str) -> str:
    """A heatmap's colour bar to the right of the plot area plot = (left, top, right, bottom), as plotly places it
    (x 1.02 of the plot's width, the plot's height), with its numbers and title."""
    bar = trace.colorbar
    left, top, right, bottom = plot
    x = left + (bar.x if bar.x is not None else 1.02) * (right - left)
    thickness = bar.thickness or 30
    title = bar.title.text or ""
    title_font = bar.title.font.size or base
    side = bar.title.side or "top"
    out = []
    if title and side == "top":
        out.append(text_svg(x, top + 0.6 * title_font, title, title_font, colour=colour, cls="cbt"))
        top += 1.4 * title_font + 0.6 * (bar.tickfont.size or base)  # room for the top number's upper half
    lo, hi = z_range
    stops = "".join(f'<stop offset="{1 - p:.4f}" stop-color="{_hex(c)}"/>' for p, c in reversed(scale))
    uid = hashlib.blake2s(stops.encode(), digest_size=5).hexdigest()  # equal scales may share one id
    out.append(f'<defs><linearGradient id="g{uid}" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>'
               f'<rect class="cbar" x="{x:.1f}" y="{top:.1f}" width="{thickness:g}" height="{bottom - top:.1f}" '
               f'fill="url(#g{uid})"/>')
    font = bar.tickfont.size or base
    widest = 0.0
    for value, text in ticks:
        y = bottom - (value - lo) / (hi - lo) * (bottom - top)
        out.append(text_svg(x + thickness + TICK_GAP, y, text, font, colour=colour, cls="cbn"))
        widest = max(widest, label_width(text, font))
    if title and side == "right":
        out.append(text_svg(x + thickness + 2 * TICK_GAP + widest + 0.7 * title_font, (top + bottom) / 2, title,
                            title_font, anchor="middle", angle=90, colour=colour, cls="cbt"))
    return "".join(out)


def grid_parts(a: Any, across: tuple[float, float]) -> str:
    """A numeric axis's grid lines at its ticks, across the plot (across: px from, to), and its zero line."""
    if a.layout.showgrid is False:
        return ""
    out = []
    low, high = sorted((a.p0, a.p1))
    for value, _ in a.ticks():
        p = a.px(value)
        if low - 0.5 <= p <= high + 0.5:
            stroke = "#c3c7cf" if value == 0 and a.layout.zeroline is not False else "#e6e9ef"
            line = (f'x1="{p:.1f}" y1="{across[0]:.1f}" x2="{p:.1f}" y2="{across[1]:.1f}"' if a.name.startswith("x")
                    else f'x1="{across[0]:.1f}" y1="{p:.1f}" x2="{across[1]:.1f}" y2="{p:.1f}"')
            out.append(f'<line class="grid" {line} stroke="{stroke}" stroke-width="1"/>')
    return "".join(out)


def _ref_px(ref: str | None, value: Any, axes: dict[str, Any], paper: tuple[float, float], vertical: bool) -> float:
    """px of a shape's or note's coordinate: on an axis ("x2"), along an axis's domain ("x2 domain") or the plot
    area ("paper"; paper = (px at 0, px at 1))."""
    letter = "y" if vertical else "x"
    ref = ref or letter
    if ref == "paper":
        return paper[0] + float(value) * (paper[1] - paper[0])
    domain = ref.endswith(" domain")
    name = ref.removesuffix(" domain")
    if name not in axes:
        raise Unsupported(f"reference {ref}")
    a = axes[name]
    if domain:
        start, end = (a.p1, a.p0) if vertical else (a.p0, a.p1)  # a y axis's p0 is its top
        return start + float(value) * (end - start)
    return a.px(a.position(value))


def shape_parts(shapes: Any, axes: dict[str, Any], paper_x: tuple[float, float], paper_y: tuple[float, float]) -> list:
    out = []
    for shape in shapes or ():
        x0, x1 = (_ref_px(shape.xref, v, axes, paper_x, False) for v in (shape.x0, shape.x1))
        y0, y1 = (_ref_px(shape.yref, v, axes, paper_y, True) for v in (shape.y0, shape.y1))
        line = shape.line
        stroke = line.color or "#444"
        width = 2 if line.width is None else line.width
        dash = DASHES.get(line.dash or "solid")
        if dash is None:
            raise Unsupported(f"dash {line.dash}")
        style = f'stroke="{stroke}" stroke-width="{width:g}"' + (f' stroke-dasharray="{dash}"' if dash else "")
        if shape.type == "line":
            out.append(f'<line class="shape" x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" {style}/>')
        else:
            fill = shape.fillcolor or "none"
            out.append(f'<rect class="shape" x="{min(x0, x1):.1f}" y="{min(y0, y1):.1f}" width="{abs(x1 - x0):.1f}" '
                       f'height="{abs(y1 - y0):.1f}" fill="{fill}" {style}/>')
    return out


@dataclass(frozen=True)
class PointData:
    """What a trace's points are drawn and hovered from, read from its trace once: plotly checks every
    attribute it is asked for (~10 µs a read), and a trace has hundreds of points."""

    x: Any
    y: Any
    customdata: Any
    text: Any
    hovertemplate: str | None
    hovers: bool  # whether its points take the hover (hoverinfo "skip" or "none" without a template: not)

    @classmethod
    def of(cls, trace: Any) -> PointData:
        template = trace.hovertemplate
        return cls(trace.x, trace.y, trace.customdata, trace.text, template,
                   bool(template) or trace.hoverinfo not in ("skip", "none"))


def marker_parts(index: int, trace: Any, ax: Any, ay: Any, points: list[dict]) -> tuple[str, list]:
    """A scatter trace of markers: the visible ones drawn, and each point that takes hovers and clicks as (px x,
    px y, hover text, its index in points), where its point (as Streamlit's selection reports it) is appended."""
    marker = trace.marker
    size = 6 if marker.size is None else marker.size
    visible = (marker.opacity is None or marker.opacity > 0) and (trace.opacity is None or trace.opacity > 0)
    symbol = marker.symbol or "circle"
    fill = marker.color or "#1f77b4"
    if not isinstance(size, (int, float)) or not isinstance(fill, str):
        raise Unsupported("markers of several sizes or colours")
    out, marks = [], []
    data = PointData.of(trace)
    custom, texts = data.customdata, data.text
    width = 2 if marker.line.width is None else marker.line.width
    paint = f'fill="none" stroke="{fill}" stroke-width="{width:g}"' if symbol.endswith("-open") else f'fill="{fill}"'
    for j, (xv, yv) in enumerate(zip(data.x, data.y)):
        x, y = ax.px(ax.position(xv)), ay.px(ay.position(yv))
        if visible:
            if symbol.startswith("circle"):
                out.append(f'<circle class="mk" cx="{x:.1f}" cy="{y:.1f}" r="{size / 2:g}" {paint}/>')
            else:
                out.append(f'<rect class="mk" x="{x - size / 2:.1f}" y="{y - size / 2:.1f}" width="{size:g}" '
                           f'height="{size:g}" {paint}/>')
        if not data.hovers:
            continue
        point = {"curve_number": index, "point_number": j, "point_index": j, "x": _plain_value(xv),
                 "y": _plain_value(yv)}
        values: dict[str, Any] = {"x": xv, "y": yv}
        if custom is not None:
            point["customdata"] = values["customdata"] = _plain_value(custom[j])
        if texts is not None:
            values["text"] = texts if isinstance(texts, str) else texts[j]
        hover = plain(fill_template(data.hovertemplate or "(%{x}, %{y})", values))
        marks.append((x, y, hover, len(points)))
        points.append(point)
    return "".join(out), marks


def _plain_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain_value(v) for v in value]
    return value.item() if hasattr(value, "item") else value


def note_parts(notes: Any, axes: dict[str, Any], paper_x: tuple[float, float], paper_y: tuple[float, float],
               base: float, colour: str) -> list:
    """Text notes without arrows (make_subplots' row and column titles among them), placed by their anchors."""
    out = []
    for note in notes or ():
        font = note.font.size or base
        text = note.text or ""
        x = _ref_px(note.xref, note.x, axes, paper_x, False) + (note.xshift or 0)
        y = _ref_px(note.yref, note.y, axes, paper_y, True) - (note.yshift or 0)
        angle = float(note.textangle or 0)
        w, h = label_width(text, font), 1.25 * font * len(lines_of(text))
        if abs(angle) == 90:
            w, h = h, w
        elif angle:
            raise Unsupported("a note at an angle")
        x += {"left": w / 2, "right": -w / 2}.get(note.xanchor, 0)
        y += {"top": h / 2, "bottom": -h / 2}.get(note.yanchor, 0)
        out.append(text_svg(x, y, text, font, anchor="middle", angle=angle, colour=note.font.color or colour,
                            cls="note"))
    return out


def title_parts(title: Any, W: float, H: float, paper_x: tuple[float, float], margin_top: float, base: float,
                colour: str) -> list:
    """The figure's title and its subtitle under it: where its x, y and anchors put it (plotly's default: left, in
    the middle of the top margin)."""
    text = title.text
    if not text:
        return []
    font = title.font.size or round(base * 17 / 12)
    lines = len(lines_of(text))
    sub = title.subtitle.text
    sub_font = title.subtitle.font.size or round(font * 0.7)  # plotly's subtitle: 0.7 of the title's size
    sub_height = 1.25 * sub_font * len(lines_of(sub)) + 4 if sub else 0
    height = 1.25 * font * lines + sub_height
    xv = 0.05 if title.x is None else title.x
    x = xv * W if title.xref != "paper" else paper_x[0] + xv * (paper_x[1] - paper_x[0])
    anchor = {"left": "start", "center": "middle", "right": "end"}.get(
        title.xanchor, "start" if xv < 1 / 3 else "middle" if xv < 2 / 3 else "end")
    if isinstance(title.y, (int, float)) and title.yanchor == "top":
        top = (1 - title.y) * H + (title.pad.t or 0) - ((font + 6) if lines > 1 else 0)
        middle = max(top, 2) + height / 2
    else:
        middle = max(margin_top / 2, height / 2 + 2)
    title_middle = middle - sub_height / 2  # the title above, the subtitle below the block's middle
    out = [text_svg(x, title_middle, text, font, anchor=anchor, colour=colour, cls="title")]
    if sub:
        out.append(text_svg(x, middle + height / 2 - sub_height / 2 + 2, sub, sub_font, anchor=anchor,
                            colour=title.subtitle.font.color or colour, cls="subtitle"))
    return out


def z_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    step = nice_step((hi - lo) / 5)
    first = math.ceil(lo / step - 1e-9) * step
    return [(float(v), number_label(float(v), step)) for v in np.arange(first, hi + step * 1e-6, step)]



"""The traces of an SVG figure (`ui.shared.svg_figure`): a heatmap's cells and their numbers, bars, lines and
markers, each with the hover texts and click points the browser needs, and the legend. Pure functions, no
streamlit."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ui.shared.svg_parts import PointData, colour_scale, colours_at, dark, png_cells
from ui.shared.svg_text import Unsupported, fill_template, label_width, plain, text_svg

PLOTLY_COLOURS = ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"]
STREAMLIT_COLOURS = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a"]
Mark = tuple[float, float, str, int]  # px x, px y, hover text, index of its point


def z_range(trace: Any, z: np.ndarray) -> tuple[float, float]:
    """A heatmap's colour range: zmin..zmax, else the data's, centred on zmid when only that is given."""
    finite = z[np.isfinite(z)]
    lo = trace.zmin if trace.zmin is not None else float(finite.min(initial=0.0))
    hi = trace.zmax if trace.zmax is not None else float(finite.max(initial=1.0))
    if trace.zmid is not None and trace.zmin is None and trace.zmax is None:
        half = max(abs(hi - trace.zmid), abs(trace.zmid - lo))
        lo, hi = trace.zmid - half, trace.zmid + half
    return float(lo), float(hi) if hi != lo else float(lo) + 1.0


def colour_scale_of(trace: Any) -> list[tuple[float, tuple[float, float, float]]]:
    scale = colour_scale(trace.colorscale or "Plasma")
    return [(1 - p, c) for p, c in reversed(scale)] if trace.reversescale else scale


MAX_RECTS = 2500  # cells drawn one <rect> each; more, and each heatmap is one pixelated image (as plotly does)


def heatmap_parts(trace: Any, ax: Any, ay: Any, xs: list[float], ys: list[float], z: np.ndarray, image: bool,
               base: float) -> str:
    scale = colour_scale_of(trace)
    lo, hi = z_range(trace, z)
    gap_x, gap_y = (trace.xgap or 0) / 2, (trace.ygap or 0) / 2
    left, right = sorted((ax.px(xs[0] - 0.5), ax.px(xs[-1] + 0.5)))
    top, bottom = sorted((ay.px(ys[0] - 0.5), ay.px(ys[-1] + 0.5)))
    rgba = colours_at(scale, (z - lo) / (hi - lo))  # (rows, columns, RGBA)
    image = image and not gap_x and not gap_y
    colours = ([["#" + bytes(pixel[:3]).hex() if pixel[3] else None for pixel in row] for row in rgba]
               if trace.texttemplate or not image else [])  # the cells' colours as SVG writes them
    out = []
    if image:
        flip_x, flip_y = ax.px(xs[0]) > ax.px(xs[-1]), ay.px(ys[0]) > ay.px(ys[-1])
        out.append(png_cells(rgba, left, top, right - left, bottom - top, flip_x, flip_y))
    else:
        for r, y in enumerate(ys):
            y0, y1 = sorted((ay.px(y - 0.5), ay.px(y + 0.5)))
            for c, x in enumerate(xs):
                if colours[r][c] is None:
                    continue
                x0, x1 = sorted((ax.px(x - 0.5), ax.px(x + 0.5)))
                out.append(f'<rect class="cell" x="{x0 + gap_x:.1f}" y="{y0 + gap_y:.1f}" '
                           f'width="{max(x1 - x0 - 2 * gap_x, 0.5):.1f}" height="{max(y1 - y0 - 2 * gap_y, 0.5):.1f}" '
                           f'fill="{colours[r][c]}" data-r="{r}" data-c="{c}"/>')
    if trace.texttemplate:
        font = trace.textfont.size or base
        texts = np.asarray(trace.text, dtype=object) if trace.text is not None else None
        for r, y in enumerate(ys):
            for c, x in enumerate(xs):
                values = {"z": z[r, c], "x": trace.x[c] if trace.x is not None else c,
                          "y": trace.y[r] if trace.y is not None else r,
                          "text": "" if texts is None else texts[r][c]}
                label = fill_template(trace.texttemplate, values)
                fill = "white" if colours[r][c] and dark(colours[r][c]) else "#262730"
                out.append(text_svg(ax.px(x), ay.px(y), label, font, anchor="middle", colour=fill, cls="ct"))
    return "".join(out)


_SIMPLE_FIELD = re.compile(r"%\{(?:x|y|z:\+?\.\d+f)\}")


def heatmap_hovers(trace: Any, xs: list[float], ys: list[float], z: np.ndarray) -> dict[str, Any]:
    """A heatmap's hover texts for the browser: {"text": rows x columns of texts}, or, when its template reads only
    whole-number or category x and y and z to a fixed number of decimals, the template with z rounded to them
    ({"template", "z", "xs", "ys"}; the browser fills it in: a 60 x 128 table is 30 kB instead of 300)."""
    template = trace.hovertemplate or "x: %{x}<br>y: %{y}<br>z: %{z}"
    x_values = list(trace.x) if trace.x is not None else list(range(len(xs)))
    y_values = list(trace.y) if trace.y is not None else list(range(len(ys)))
    whole = all(isinstance(_item(v), (int, str)) for v in x_values + y_values)
    fields = re.findall(r"%\{[^}]*\}", template)
    digits = {int(d) for d in re.findall(r"%\{z:\+?\.(\d+)f\}", template)}
    if whole and fields and all(_SIMPLE_FIELD.fullmatch(f) for f in fields) and len(digits) <= 1:
        d = digits.pop() if digits else 0
        rounded = [[round(float(v), d) if math.isfinite(v) else None for v in row] for row in z]
        return {"template": plain(re.sub(r"<extra>.*?</extra>", "", template, flags=re.DOTALL)), "z": rounded,
                "xs": [_item(v) for v in x_values], "ys": [_item(v) for v in y_values]}
    custom = trace.customdata
    texts = trace.text
    out = []
    for r in range(len(ys)):
        row = []
        for c in range(len(xs)):
            values = {"z": z[r, c], "x": x_values[c], "y": y_values[r]}
            if custom is not None:
                values["customdata"] = _item(custom[r][c])
            if texts is not None and not isinstance(texts, str):
                values["text"] = texts[r][c]
            row.append(plain(fill_template(template, values)))
        out.append(row)
    return {"text": out}


def _item(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [v.item() if hasattr(v, "item") else v for v in value.tolist()]
    return value.item() if hasattr(value, "item") else value


def point_values(data: PointData, j: int) -> dict[str, Any]:
    """The template fields of a bar's or line's point j."""
    values: dict[str, Any] = {"x": _item(data.x[j]), "y": _item(data.y[j])}
    for name, column in (("customdata", data.customdata), ("text", data.text)):
        if column is not None:
            values[name] = column if isinstance(column, str) else _item(column[j])
    return values


def _hover(data: PointData, j: int, default: str) -> str | None:
    if not data.hovers:
        return None
    return plain(fill_template(data.hovertemplate or default, point_values(data, j)))


def _per_point(value: Any, j: int) -> Any:
    return value[j] if isinstance(value, (list, tuple, np.ndarray)) else value


def bar_parts(index: int, trace: Any, slot: tuple[int, int], gap: float, ax: Any, ay: Any, colour: str, base: float,
              points: list[dict]) -> tuple[str, list[Mark]]:
    """A bar trace, slot = (its place, number of traces) in a group of bars at each position; its numbers outside
    the bars (textposition "outside") or none."""
    horizontal = trace.orientation == "h"
    data = PointData.of(trace)
    values, places = (data.x, data.y) if horizontal else (data.y, data.x)
    axis_v, axis_p = (ax, ay) if horizontal else (ay, ax)
    place, count = slot
    width = (1 - gap) / count
    out, marks = [], []
    fill = trace.marker.color if trace.marker.color is not None else colour
    line = trace.marker.line
    font = trace.textfont.size or base
    outside = trace.textposition == "outside"
    inside = trace.texttemplate is None and trace.textposition not in (None, "none")
    for j, (v, p) in enumerate(zip(values, places)):
        centre = axis_p.position(p) - (1 - gap) / 2 + (place + 0.5) * width
        a0, a1 = sorted((axis_p.px(centre - width / 2), axis_p.px(centre + width / 2)))
        v0, v1 = sorted((axis_v.px(0.0), axis_v.px(float(v))))
        stroke = _per_point(line.color, j) if line.color is not None else None
        stroke_w = _per_point(line.width, j) if line.width is not None else 0
        paint = f'fill="{_per_point(fill, j)}"' + (f' stroke="{stroke}" stroke-width="{stroke_w:g}"'
                                                  if stroke and stroke_w else "")
        box = (v0, a0, v1 - v0, a1 - a0) if horizontal else (a0, v0, a1 - a0, v1 - v0)
        out.append(f'<rect class="bar" x="{box[0]:.1f}" y="{box[1]:.1f}" width="{max(box[2], 0):.1f}" '
                   f'height="{max(box[3], 0):.1f}" {paint}/>')
        if data.text is not None and outside:
            label = str(_per_point(data.text, j))
            if horizontal:
                end = axis_v.px(float(v))
                out.append(text_svg(end + 3 if v >= 0 else end - 3, (a0 + a1) / 2, label, font,
                                    anchor="start" if v >= 0 else "end", cls="bt"))
            else:
                out.append(text_svg((a0 + a1) / 2, axis_v.px(float(v)) - 0.7 * font, label, font, anchor="middle",
                                    cls="bt"))
        elif data.text is not None and inside:
            raise Unsupported("bar text inside")
        hover = _hover(data, j, "%{x}, %{y}")
        if hover is not None:
            # one mark per bar at the middle of the value axis: the pointer anywhere across a bar's row takes it
            middle = (axis_v.p0 + axis_v.p1) / 2
            marks.append((middle, (a0 + a1) / 2, hover, len(points)) if horizontal
                          else ((a0 + a1) / 2, middle, hover, len(points)))
            points.append({"curve_number": index, "point_number": j, "point_index": j, "x": _item(data.x[j]),
                           "y": _item(data.y[j])})
    return "".join(out), marks


def line_parts(index: int, trace: Any, ax: Any, ay: Any, colour: str, points: list[dict]) -> tuple[str, list[Mark]]:
    """A scatter trace drawn as lines (and markers, for "lines+markers"); each point takes the hover."""
    stroke = trace.line.color or colour
    width = 2 if trace.line.width is None else trace.line.width
    data = PointData.of(trace)
    xy = [(ax.px(ax.position(x)), ay.px(ay.position(y))) for x, y in zip(data.x, data.y)
          if y is not None and not (isinstance(y, float) and math.isnan(y))]
    dash = {"dash": ' stroke-dasharray="9,9"', "dot": ' stroke-dasharray="3,3"'}.get(trace.line.dash or "", "")
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(xy))
    out = [f'<path class="line" d="{path}" fill="none" stroke="{stroke}" stroke-width="{width:g}"{dash}/>']
    if "markers" in (trace.mode or ""):
        size = trace.marker.size or 6
        out += [f'<circle class="mk" cx="{x:.1f}" cy="{y:.1f}" r="{size / 2:g}" fill="{stroke}"/>' for x, y in xy]
    marks = []
    default = f"{plain(trace.name or '')}: (%{{x}}, %{{y}})"
    for j, (x, y) in enumerate(zip(data.x, data.y)):
        hover = _hover(data, j, default)
        if hover is None or y is None:
            continue
        marks.append((ax.px(ax.position(x)), ay.px(ay.position(y)), hover, len(points)))
        points.append({"curve_number": index, "point_number": j, "point_index": j, "x": _item(x), "y": _item(y)})
    return "".join(out), marks


def legend_entries(fig: Any, colours: list[str]) -> list[tuple[str, str, str]]:
    """(name, colour, kind: "bar" or "line") of each trace the legend lists: plotly's rule, two traces or more
    (or layout.showlegend), each unless it says showlegend=False."""
    listed = [(i, t) for i, t in enumerate(fig.data) if t.type in ("bar", "scatter") and t.showlegend is not False]
    if fig.layout.showlegend is False or (fig.layout.showlegend is None and len(listed) < 2):
        return []
    out = []
    for i, trace in listed:
        colour = (trace.marker.color if trace.type == "bar" else trace.line.color) or colours[i % len(colours)]
        if not isinstance(colour, str):
            raise Unsupported("a legend of several colours")
        out.append((plain(trace.name or f"trace {i}"), colour, "bar" if trace.type == "bar" else "line"))
    return out


def legend_size(entries: list[tuple[str, str, str]], font: float, horizontal: bool, room: float) -> tuple[float, float]:
    """(width, height) px of the legend: one row (wrapped to `room` px) when horizontal, else a column."""
    items = [40 + label_width(name, font) + 10 for name, _, _ in entries]
    line = 1.6 * font
    if not horizontal:
        return max(items, default=0.0), line * len(entries) + 4
    rows, x = 1, 0.0
    for w in items:
        if x and x + w > room:
            rows, x = rows + 1, 0.0
        x += w
    return min(sum(items), room), rows * line + 4


def legend_parts(entries: list[tuple[str, str, str]], x: float, y: float, font: float, horizontal: bool,
                 room: float, colour: str) -> str:
    """The legend with its top left corner at (x, y)."""
    out, cx, cy = [], x, y + 0.8 * font
    for name, swatch, kind in entries:
        w = 40 + label_width(name, font) + 10
        if horizontal and cx > x and cx + w > x + room:
            cx, cy = x, cy + 1.6 * font
        if kind == "bar":
            out.append(f'<rect x="{cx + 8:.1f}" y="{cy - 6:.1f}" width="14" height="12" fill="{swatch}"/>')
        else:
            out.append(f'<line x1="{cx + 2:.1f}" y1="{cy:.1f}" x2="{cx + 32:.1f}" y2="{cy:.1f}" stroke="{swatch}" '
                       'stroke-width="2"/>')
        out.append(text_svg(cx + 38, cy, name, font, colour=colour, cls="lg"))
        if horizontal:
            cx += w
        else:
            cy += 1.6 * font
    return "".join(out)

"""Every label a page draws, as the browser lays it out: the text of each chart (Vega-Lite's SVG, drawn by
st.altair_chart) and of each SVG view (in its iframe), with its four corners on screen and its font size in
screen pixels, and the pairs of labels that overlap. Rotated labels are compared as rotated boxes (separating axes),
so that turned column labels do not count as overlapping their neighbours' upright bounding boxes. Used by the
browser tests of class mode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Per group (a chart, or an SVG view's document): its visible labels.
LABELS_JS = """root => { const groups = [];
const visible = t => t.textContent.trim() && t.checkVisibility({opacityProperty: true, visibilityProperty: true})
  && getComputedStyle(t).fillOpacity !== '0';
const label = t => { const b = t.getBBox(), m = t.getScreenCTM(); if (!m || b.width === 0) return null;
  const pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
    .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  const zoom = parseFloat(getComputedStyle(document.body).zoom || '1') || 1;
  const scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
  return {text: t.textContent, font: parseFloat(getComputedStyle(t).fontSize) * scale * (scale > 1.001 ? 1 : zoom),
          pts}; };
const roots = [root, ...[...root.querySelectorAll('*')].filter(e => e.shadowRoot).map(e => e.shadowRoot)];
const charts = roots.flatMap(r => [...r.querySelectorAll('[data-testid="stVegaLiteChart"], div.tv')]);
const seen = new Set();
for (const c of charts) { const texts = [...c.querySelectorAll('svg text')].filter(t => !seen.has(t));
  texts.forEach(t => seen.add(t)); const labels = texts.filter(visible).map(label).filter(Boolean);
  const box = c.getBoundingClientRect();
  if (labels.length) groups.push({plot: c.dataset.testid === 'stVegaLiteChart', labels,
    box: [box.left, box.top, box.right, box.bottom]}); }
return groups; }"""


@dataclass(frozen=True)
class Label:
    text: str
    font: float  # px on screen
    corners: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Group:
    """The labels of one chart or view; box: (left, top, right, bottom) of a chart, None for a view (which
    may scroll inside itself)."""

    labels: list[Label]
    box: tuple[float, float, float, float] | None


def groups_of(found: list[dict]) -> list[Group]:
    return [Group([Label(g["text"], g["font"], tuple(map(tuple, g["pts"]))) for g in group["labels"]],
                  tuple(group["box"]) if group["plot"] else None) for group in found]


def clipped(group: Group, slack: float = 2.0) -> list[str]:
    """Labels of a chart that run past its edges (the chart's box cuts them there)."""
    if group.box is None:
        return []
    left, top, right, bottom = group.box
    return [label.text for label in group.labels
            if any(x < left - slack or x > right + slack or y < top - slack or y > bottom + slack
                   for x, y in label.corners)]


def _axes(corners: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    (x0, y0), (x1, y1), _, (x3, y3) = corners
    return [(x1 - x0, y1 - y0), (x3 - x0, y3 - y0)]


def _project(corners, axis) -> tuple[float, float]:
    norm = (axis[0] ** 2 + axis[1] ** 2) ** 0.5 or 1.0
    values = [(x * axis[0] + y * axis[1]) / norm for x, y in corners]
    return min(values), max(values)


def overlap_depth(a: Label, b: Label) -> float:
    """How deep two labels' boxes run into each other (px, along the axis where they overlap least); 0 if apart."""
    depth = float("inf")
    for axis in _axes(a.corners) + _axes(b.corners):
        a0, a1 = _project(a.corners, axis)
        b0, b1 = _project(b.corners, axis)
        depth = min(depth, min(a1, b1) - max(a0, b0))
        if depth <= 0:
            return 0.0
    return depth


def overlapping(labels: Sequence[Label], slack: float = 0.2) -> list[tuple[str, str]]:
    """Pairs of labels that run into each other by more than `slack` of the smaller font (a glyph box holds the
    font's ascent and descent, which neighbouring lines of text may share)."""
    return [(a.text, b.text) for i, a in enumerate(labels) for b in labels[i + 1:]
            if overlap_depth(a, b) > slack * min(a.font, b.font)]


def measure(page) -> list[Group]:
    """Every label group of the page and of its frames (the SVG views are drawn in iframes)."""
    groups = []
    for frame in page.frames:
        try:
            groups += groups_of(frame.evaluate(f"({LABELS_JS})(document)"))
        except Exception:  # noqa: BLE001  a frame that navigated away or is not ready: nothing of it to measure
            continue
    return groups

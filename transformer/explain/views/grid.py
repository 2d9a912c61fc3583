"""Attention heatmaps as SVG: one small map per layer and head (rows queries, columns keys, darker = more weight on
one fixed 0..1 scale), for a notebook or a report where plotly.js is not at hand. Each cell's title holds its
query, key and weight; cells under lines.MIN_WEIGHT are left white (not drawn), as the head view leaves out
their lines. Right-to-left key labels are set with direction="rtl" and the columns run right to left.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import transformer.explain.checks as checks
from transformer.explain.views.lines import MIN_WEIGHT, as_maps
from transformer.explain.views.svg import (
    BASE_CSS,
    HOVER_CHARS,
    View,
    anchored,
    column_is_rtl,
    esc,
    is_rtl,
    shorten,
    text_width,
)

CELL = 12  # px of one weight
LABEL_CHARS = 14
CSS = BASE_CSS + ".hm svg text{font-size:10px}.hm .maps{display:flex;flex-wrap:wrap;gap:10px}"


def heatmap_svg(matrix, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str = "",
                row_labels: bool = True) -> tuple[str, int, int]:
    """One map (Lq, Lk) as SVG: a rect per weight with fill-opacity = weight."""
    rtl_k = column_is_rtl(key_labels)
    left = (min(max((text_width(t, 10) for t in query_labels), default=10), text_width("x" * LABEL_CHARS, 10)) + 6
            if row_labels else 4)
    top = min(max((text_width(t, 10) for t in key_labels), default=10), text_width("x" * LABEL_CHARS, 10)) + 22
    n_q, n_k = len(query_labels), len(key_labels)
    matrix = np.asarray(matrix, dtype=float)
    checks.finite_weights(matrix, dims=("query", "key"))
    matrix = matrix.tolist()
    width, height = int(left + n_k * CELL + 4), int(top + n_q * CELL + 4)
    parts = [f'<text x="{left}" y="11" font-weight="600">{esc(title)}</text>']
    col_x = (lambda j: left + (n_k - 1 - j) * CELL) if rtl_k else (lambda j: left + j * CELL)
    for j, label in enumerate(key_labels):
        x = col_x(j) + CELL / 2 + 3
        parts.append(f'<text class="col" data-j="{j}" transform="translate({x:.1f},{top - 4}) rotate(-90)"'
                     f"><title>{esc(shorten(label, HOVER_CHARS))}</title>{esc(shorten(label, LABEL_CHARS))}</text>")
    for i, label in enumerate(query_labels):
        if row_labels:
            parts.append(f'<text class="row" data-i="{i}" x="{left - 4}" y="{top + i * CELL + CELL - 2}" '
                         f'{anchored("right", is_rtl(label))}><title>{esc(shorten(label, HOVER_CHARS))}</title>'
                         f"{esc(shorten(label, LABEL_CHARS))}</text>")
        for j in range(n_k):
            w = float(matrix[i][j])
            if w < MIN_WEIGHT:
                continue
            parts.append(f'<rect x="{col_x(j)}" y="{top + i * CELL}" width="{CELL - 1}" height="{CELL - 1}" '
                         f'fill="#08306b" fill-opacity="{w:.3f}" data-i="{i}" data-j="{j}"><title>'
                         f"{esc(shorten(label, HOVER_CHARS))} → {esc(shorten(key_labels[j], HOVER_CHARS))}: "
                         f"{w:.3f}</title></rect>")
    parts.append(f'<rect x="{left - 0.5}" y="{top - 0.5}" width="{n_k * CELL}" height="{n_q * CELL}" fill="none" '
                 'stroke="#ccc"/>')
    return (f'<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'data-rtl="{int(rtl_k)}">{"".join(parts)}</svg>', width, height)


def heatmaps_from(weights, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str = "",
                  layers: Sequence[int] | None = None) -> View:
    """Every head of every layer (or of `layers`) as a small heatmap, a row of heads per layer."""
    maps = as_maps(weights, len(query_labels), len(key_labels))
    layers = checks.indices(layers, "layers", maps.shape[0])
    rows, height, width = [], 30, 0
    for layer in (range(maps.shape[0]) if layers is None else layers):
        svgs = [heatmap_svg(maps[layer, h], query_labels, key_labels, title=f"layer {layer}, head {h}",
                            row_labels=h == 0) for h in range(maps.shape[1])]
        rows.append('<div class="maps">' + "".join(s for s, _, _ in svgs) + "</div>")
        height += max(h for _, _, h in svgs) + 10
        width = max(width, sum(w for _, w, _ in svgs) + 10 * len(svgs))
    heading = f"<div><b>{esc(title)}</b></div>" if title else ""
    html = f'<style>{CSS}</style><div class="tv hm">{heading}{"".join(rows)}</div>'
    return View("heatmaps", html, height, width, 10)

"""Eq. 1 as one picture: softmax(q K^T / sqrt(d_k)) V for one query of one head, drawn left to right with the
model's own numbers (Vaswani et al., 2017, Section 3.2.1; in the manner of Transformer Explainer, Cho et al.,
2024, which follows one query from its embedding to the weighted sum).

The stages, each a group of the SVG that the buttons reveal one at a time or all at once: the query's input ->
q (and every key's k and v, as short bar vectors) -> the score of every key -> the mask -> the softmax
weights -> every value times its weight -> their sum, the head's output. The clicked key's row is highlighted
through every stage; clicking another row moves the highlight. The numbers come from
`transformer.explain.arithmetic.cell_arithmetic` and are printed as they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import transformer.explain.checks as checks
from transformer.charts.theme import GRID, HIGHLIGHT, MUTED, NEGATIVE, PICKED, POSITIVE, WEIGHT_DARK
from transformer.explain.arithmetic import CellArithmetic
from transformer.explain.views.svg import (
    BASE_CSS,
    NOTE_PX,
    View,
    data_json,
    esc,
    new_id,
    num,
    shorten,
    text_width,
)
from transformer.labels import fit

ROW, TOP = 22, 58  # px per key; the y of the first key row
BAR_H = 16  # px of a key's bar vector
IN_DIMS = 48  # dimensions of the query's input drawn (d_model is several hundred)
BOLD_PX = NOTE_PX + 1  # the px a bold heading is measured at: its text's size, a px wider for the weight
# stage -> (x of its column, width, heading)
COLUMNS = {  # the query's input and q share the first column, input on top
    "input": (8, 100, "input x"), "q": (8, 100, "q = x W^Q"), "key": (124, 84, "key"),
    "k": (212, 70, "k = x W^K"), "v": (290, 70, "v = x W^V"), "score": (368, 66, "q·k / √d_k"),
    "mask": (440, 56, "mask"), "weight": (502, 96, "softmax"), "wv": (608, 70, "weight × v"),
    "output": (688, 116, "Σ weight × v"),
}
Q_TOP = TOP + 124  # y of q's bars, under the input's
# compact (class mode, zoomed 1.5x in a 770 px column): input, q and the output side by side in a band on top, the
# key rows under it in narrower columns, so that the whole picture is under 510 px wide
COMPACT = {
    "input": (8, 100, "input x"), "q": (124, 100, "q = x W^Q"), "output": (240, 116, "Σ weight × v"),
    "key": (8, 80, "key"), "k": (98, 48, "k"), "v": (150, 48, "v"), "score": (202, 70, "q·k / √d_k"),
    "mask": (278, 44, "mask"), "weight": (328, 78, "softmax"), "wv": (410, 56, "weight × v"),
}
BAND = 136  # px of the compact layout's top band, above its first key row
GUTTER = 93  # x of the compact layout's line from q down to the key rows, between the key labels and the k bars
STAGES = (("input", ["input"]), ("qkv", ["q", "key", "k", "v"]), ("score", ["score"]), ("mask", ["mask"]),
          ("softmax", ["weight"]), ("weighted", ["wv"]), ("sum", ["output"]))
CSS = BASE_CSS + f""".eq svg text{{font-size:{NOTE_PX}px}}.eq [data-j]{{cursor:pointer}}.eq text.on{{font-weight:700}}
.eq text.off{{fill:{MUTED}}}.eq .cap{{min-height:2.8em;margin:4px 0}}.eq .head{{font-weight:600}}"""
FLOW_JS = """function(root,data){const svg=root.querySelector('svg.eq');const cap=root.querySelector('.cap');
const stages=[...svg.querySelectorAll('g.st')];let shown=data.reveal==='all'?stages.length:1,key=data.key;
const f=x=>x===null?'−∞':x.toFixed(3);
const text=()=>{const k=data.keys[key],s=Math.min(shown,stages.length)-1;const w=[
'The input at query «'+data.query+'»: '+data.input,
'It is multiplied by W^Q to give q; every key\\'s input by W^K and W^V gives its k and v ('+data.dk+' numbers each).',
'The score of «'+k.label+'» is q·k / √'+data.dk+' = '+f(k.score)+'.',
k.allowed?'«'+k.label+'» may be attended to: its score stays '+f(k.score)+'.':
'«'+k.label+'» is masked: its score becomes −∞, so its weight will be exactly 0.',
'softmax turns the row into weights that sum to 1: «'+k.label+'» gets '+k.weight.toFixed(3)+'.',
'Each value is scaled by its weight: «'+k.label+'»\\'s v times '+k.weight.toFixed(3)+'.',
'The head\\'s output for «'+data.query+'» is the sum of the weighted values (before W^O mixes the heads).'];
cap.textContent='Step '+(s+1)+' of '+stages.length+'. '+w[s];};
const draw=()=>{stages.forEach((g,i)=>g.style.display=i<shown?'':'none');
svg.querySelectorAll('[data-j]').forEach(e=>e.classList.toggle('on',e.dataset.j==key));
const hl=svg.querySelector('rect.hl');hl.setAttribute('y',data.top+key*data.row-data.row/2);
const y=data.top+key*data.row;svg.querySelector('path.qk').setAttribute('d','M'+data.line.map(
([x,p])=>x+','+(p===null?y:p)).join('L'));text();};
root.querySelector('.next').onclick=()=>{shown=Math.min(shown+1,stages.length);draw();};
root.querySelector('.all').onclick=()=>{shown=stages.length;draw();};
root.querySelector('.first').onclick=()=>{shown=1;draw();};
svg.querySelectorAll('[data-j]').forEach(r=>r.addEventListener('click',()=>{key=+r.dataset.j;draw();}));draw();}"""


def _np(t) -> np.ndarray:
    return np.asarray(t.float().cpu() if hasattr(t, "cpu") else t, dtype=float)


def bars(values: np.ndarray, x: float, y: float, width: float, height: float, scale: float, extra: str = "") -> str:
    """A vector as a row of thin bars about a baseline at mid-height, red up and blue down (the theme's positive
    and negative), scaled by `scale`:
    one path per sign (a vertical stroke per number), so that a long sentence's 120 vectors stay small."""
    n = max(len(values), 1)
    step, mid = width / n, y + height / 2
    scale = scale or 1.0
    strokes = {True: [], False: []}
    values = np.asarray(values, dtype=float).tolist()  # Python floats: formatting numpy scalars is slow
    for i, v in enumerate(values):
        h = max(min(abs(v) / scale, 1.0) * height / 2, 0.3)
        strokes[v >= 0].append(f"M{x + (i + 0.5) * step:.1f},{mid:.1f}v{-h if v >= 0 else h:.1f}")
    paths = "".join(f'<path d="{"".join(d)}" stroke="{POSITIVE if up else NEGATIVE}" stroke-width="{step * 0.8:.2f}"/>'
                    for up, d in strokes.items() if d)
    shown = ", ".join(f"{v:.3f}" for v in values[:8])
    return (f'<g class="vec"{extra}><title>{shown}{", …" if len(values) > 8 else ""}</title>'
            f'<line x1="{x:.1f}" y1="{mid:.1f}" x2="{x + width:.1f}" y2="{mid:.1f}" stroke="{GRID}"/>{paths}</g>')


def input_name(family: str, layer: int) -> str:
    """Where the query's input comes from, for a pre-LN model."""
    if family == "cross":
        return f"LayerNorm of decoder layer {layer}'s stream after its self-attention (keys: the encoder's output)"
    below = "its embedding + position" if layer == 0 else f"the output of layer {layer - 1}"
    return f"LayerNorm of {below}"


def flow_view(cell: CellArithmetic, query_label: str, key_labels: Sequence[str], key: int | None = None, *,
              reveal: str = "all", title: str = "", compact: bool = False) -> View:
    """Eq. 1 for `cell` (one head, one query) with `key` highlighted (default: the key of highest weight).
    reveal "all" shows every stage at once, "steps" only the first (Next shows the others). `compact` puts the
    query's input, q and the output in a band above the key rows (narrow enough for class mode's zoom)."""
    scores, weights, mask = _np(cell.scores), _np(cell.weights), np.asarray(cell.mask.cpu(), dtype=bool)
    k, v, q, out = _np(cell.k), _np(cell.v), _np(cell.q), _np(cell.output)
    x_in = _np(cell.query_input)
    if len(key_labels) != len(scores):
        raise ValueError(f"{len(key_labels)} key labels for the {len(scores)} keys of the cell")
    checks.finite_weights(weights, "the cell's weights", dims=("key",))
    if reveal not in ("all", "steps"):
        raise ValueError(f"reveal is 'all' or 'steps', not {reveal!r}")
    key = int(np.argmax(weights)) if key is None else checks.position(key, "key", len(scores))
    d_k, n = len(q), len(scores)
    kv_scale = max(float(np.abs(k).max()), float(np.abs(v).max()), 1e-9)
    wv = weights[:, None] * v  # (L_k, Dh)
    wv_scale = max(float(np.abs(wv).max()), float(np.abs(out).max()), 1e-9)
    col = COMPACT if compact else COLUMNS
    top = TOP + BAND if compact else TOP  # y of the first key row
    q_top = TOP if compact else Q_TOP
    height = int(top + max(n, 1 if compact else 9) * ROW + 30)
    width = math.ceil(max(x + max(w, text_width(heading, BOLD_PX)) for x, w, heading in col.values())) + 6
    groups: dict[str, list[str]] = {name: [] for name, _ in STAGES}

    def add(stage: str, markup: str) -> None:
        groups[stage].append(markup)

    for stage, cols in STAGES:
        for c in cols:
            x, w, heading = col[c]
            y = q_top if c == "q" else TOP if c in ("input", "output") else top
            add(stage, f'<text class="head" x="{x}" y="{y - 30}">{esc(heading)}</text>')
    xi, wi, _ = col["input"]
    add("input", bars(x_in[:IN_DIMS], xi, TOP - 12, wi, 48, float(np.abs(x_in).max()) or 1.0))
    add("input", f'<text x="{xi}" y="{TOP + 54}">«{esc(shorten(query_label, 14))}»</text>'
                 f'<text x="{xi}" y="{TOP + 70}" class="note">first {min(IN_DIMS, len(x_in))} of {len(x_in)}</text>')
    xq, wq, _ = col["q"]
    add("qkv", bars(q, xq, q_top - 12, wq, 48, float(np.abs(q).max()) or 1.0, ' data-part="q"'))
    add("qkv", f'<text x="{xq}" y="{q_top + 54}" class="note">d_k = {d_k}</text>')
    # from q to the highlighted key row (y None: that row's, which a click moves): straight from beside q to the key
    # labels, or in the compact layout down from under q, along the gutter left of the k bars and into the row
    elbow = top - 46  # under the band's notes, above the columns' headings
    line = ([(xq + 6, q_top + 60), (xq + 6, elbow), (GUTTER, elbow), (GUTTER, None), (col["k"][0] - 2, None)]
            if compact else [(xq + wq, Q_TOP + 12), (col["key"][0] - 4, None)])
    d = "L".join(f"{x},{top + key * ROW if y is None else y}" for x, y in line)
    add("qkv", f'<path class="qk" d="M{d}" fill="none" stroke="{PICKED}" stroke-width="1.5"/>')
    key_room = col["key"][1] - 6  # px for a key's label: it ends before the line's gutter and the k bars
    for j in range(n):
        y = top + j * ROW
        allowed = bool(mask[j])
        cls = "" if allowed else " off"
        add("qkv", f'<g class="row" data-j="{j}"><rect x="{col["key"][0]}" y="{y - ROW / 2}" '
                   f'width="{col["wv"][0] + col["wv"][1] - col["key"][0]}" height="{ROW}" fill="transparent"/>'
                   f'<text class="key{cls}" data-j="{j}" x="{col["key"][0] + 4}" y="{y}" dominant-baseline="middle">'
                   f"<title>{esc(key_labels[j])}</title>{esc(fit(key_labels[j], key_room, NOTE_PX))}</text></g>")
        add("qkv", bars(k[j], col["k"][0], y - BAR_H / 2, col["k"][1], BAR_H, kv_scale, f' data-j="{j}"'))
        add("qkv", bars(v[j], col["v"][0], y - BAR_H / 2, col["v"][1], BAR_H, kv_scale, f' data-j="{j}"'))
        add("score", f'<text class="score{cls}" data-j="{j}" x="{col["score"][0] + col["score"][1] - 8}" y="{y}" '
                     f'text-anchor="end" dominant-baseline="middle">{num(float(scores[j]))}</text>')
        add("mask", f'<text class="mask{cls}" data-j="{j}" x="{col["mask"][0] + 4}" y="{y}" dominant-baseline="middle">'
                    + ("✓" if allowed else "✗ → −∞") + "</text>")
        xw, ww, _ = col["weight"]
        add("softmax", f'<rect x="{xw}" y="{y - 6}" width="{max(weights[j] * (ww - 46), 0):.2f}" height="12" '
                       f'fill="{WEIGHT_DARK}" data-j="{j}"/><text class="w{cls}" data-j="{j}" x="{xw + ww}" y="{y}" '
                       f'text-anchor="end" dominant-baseline="middle">{weights[j]:.3f}</text>')
        add("weighted", bars(wv[j], col["wv"][0], y - BAR_H / 2, col["wv"][1], BAR_H, wv_scale, f' data-j="{j}"'))
    xo, wo, _ = col["output"]
    add("sum", bars(out, xo, TOP - 12, 96, 48, wv_scale, ' data-part="output"'))
    agree = float(np.abs(weights - _np(cell.model_weights)).max()) if n else 0.0
    add("sum", f'<text x="{xo}" y="{TOP + 54}" class="note">{len(out)} numbers</text>'
               f'<text x="{xo}" y="{TOP + 70}" class="note">Σ weights = {weights.sum():.3f}</text>'
               f'<text x="{xo}" y="{TOP + 86}" class="note">vs model: Δ {agree:.0e}</text>')
    x0, x1 = col["key"][0], col["wv"][0] + col["wv"][1]
    body = [f'<rect class="hl" x="{x0}" y="{top + key * ROW - ROW / 2}" width="{x1 - x0}" height="{ROW}" '
            f'fill="{HIGHLIGHT}"/>']
    body += [f'<g class="st" data-stage="{name}">{"".join(groups[name])}</g>' for name, _ in STAGES]
    svg = (f'<svg class="eq" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">{"".join(body)}</svg>')
    data = {"reveal": reveal, "key": key, "query": query_label, "dk": d_k, "top": top, "row": ROW, "line": line,
            "input": input_name(cell.family, cell.layer),
            "keys": [{"label": key_labels[j], "allowed": bool(mask[j]),
                      "score": float(scores[j]) if math.isfinite(scores[j]) else None, "weight": float(weights[j])}
                     for j in range(n)]}
    root = new_id("eq")
    heading = f"<div><b>{esc(title)}</b></div>" if title else ""
    html = (f'<style>{CSS}</style><div class="tv eq" id="{root}">{heading}<div><button class="first">Step through'
            '</button><button class="next">Next step</button><button class="all">All steps</button>'
            '<span class="note">Click a key\'s row to follow it through every stage; hover a bar vector for its '
            f'first numbers.</span></div><div class="cap"></div><div style="overflow-x:auto">{svg}</div></div>'
            f"<script>({FLOW_JS})(document.getElementById('{root}'),{data_json(data)});</script>")
    return View("Eq. 1", html, height + 110, width, NOTE_PX)

"""The head view and the model view: attention as lines between two columns of tokens (Vig, 2019, "A Multiscale
Visualization of Attention in the Transformer Model", BertViz's head view and model view).

A line runs from each query (left column) to each key (right column) with opacity = the weight, one colour per
head; heads can be toggled, a layer picked, and hovering (or clicking) a token keeps only its lines. When the
query column reads right to left (Arabic) the drawing is mirrored: queries on the right, keys on the left, and
right-to-left labels are set with direction="rtl". Every line is in the SVG as the server wrote it (the script
only shows and hides), so a test can read each weight back from its stroke-opacity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import transformer.explain.checks as checks
from transformer.bidi import is_rtl
from transformer.charts.theme import GRID, MUTED, TEXT
from transformer.explain.views.svg import (
    BASE_CSS,
    BODY_PX,
    LABEL_CHARS,
    NOTE_PX,
    View,
    anchored,
    column_is_rtl,
    esc,
    head_colour,
    new_id,
    shorten,
    text_width,
)

MIN_WEIGHT = 0.005  # lines fainter than this are invisible at opacity = weight, and left out
ROW = 20  # px per token
GAP = 240  # px between the two columns, where the lines run
THUMB_W, THUMB_H = 96, 140  # px of a model view drawing
HIDDEN = ' style="display:none"'
CHROME_PX = 62  # px above and below the drawing: the layer and heads line, the note, the frame's padding

CSS = BASE_CSS + f"""
.hv text.tq,.hv text.tk{{cursor:pointer}}.hv text.on{{font-weight:700}}.hv text.dim{{fill:{MUTED}}}
.hv .heads label{{margin-right:10px;white-space:nowrap}}.hv .sw{{display:inline-block;width:10px;height:10px;
margin:0 3px 0 2px;border-radius:2px}}.mv .grid{{display:grid;gap:6px 10px;align-items:end;margin-bottom:12px}}
.mv .cell{{cursor:pointer;text-align:center;font-size:{NOTE_PX}px;color:{MUTED}}}.mv .cell svg{{border:1px solid {GRID};
background:white}}.mv .cell:hover svg,.mv .cell.open svg{{border-color:{TEXT}}}"""

HEAD_JS = """function(root){const svg=root.querySelector('svg.hv');const sel=root.querySelector('select.layer');
const boxes=[...root.querySelectorAll('input.head')];let locked=null;
const show=l=>svg.querySelectorAll('g.ly').forEach(g=>g.style.display=g.dataset.layer==l?'':'none');
const heads=()=>boxes.forEach(b=>svg.querySelectorAll('g.hd[data-head="'+b.value+'"]').forEach(
g=>g.style.display=b.checked?'':'none'));
const focus=(kind,i)=>{svg.querySelectorAll('line').forEach(ln=>ln.style.display=
(kind===null||ln.dataset[kind]==i)?'':'none');svg.querySelectorAll('text.tq,text.tk').forEach(t=>
t.classList.toggle('on',kind!==null&&t.dataset.kind==kind&&t.dataset.i==i));};
svg.querySelectorAll('text.tq,text.tk').forEach(t=>{const kind=t.dataset.kind,i=t.dataset.i;
t.addEventListener('mouseenter',()=>{if(!locked)focus(kind,i)});
t.addEventListener('mouseleave',()=>{if(!locked)focus(null)});
t.addEventListener('click',()=>{if(locked===kind+i){locked=null;focus(null)}else{locked=kind+i;focus(kind,i)}});});
if(sel)sel.onchange=()=>show(sel.value);boxes.forEach(b=>b.onchange=heads);
if(root.dataset.focus!==undefined){locked='q'+root.dataset.focus;focus('q',root.dataset.focus)}
root.open=(l,h)=>{if(sel)sel.value=l;show(l);boxes.forEach(b=>b.checked=h===null||b.value==h);heads();};}"""

MODEL_JS = """function(root){root.querySelectorAll('.cell').forEach(c=>c.addEventListener('click',()=>{
root.querySelectorAll('.cell').forEach(o=>o.classList.toggle('open',o===c));const hv=root.querySelector('.hv');
hv.open(c.dataset.layer,c.dataset.head);hv.scrollIntoView({behavior:'smooth',block:'nearest'});}));}"""


def as_maps(weights, n_queries: int, n_keys: int) -> np.ndarray:
    """Attention maps as a float array (L, H, Lq, Lk), checked against the labels and to be finite."""
    maps = np.asarray(weights.float().cpu() if hasattr(weights, "cpu") else weights, dtype=float)
    if maps.ndim != 4:
        raise ValueError(f"expected maps of shape (layers, heads, queries, keys), got {maps.shape}")
    if maps.shape[2:] != (n_queries, n_keys):
        raise ValueError(f"the maps are {maps.shape[2]} queries x {maps.shape[3]} keys but there are "
                         f"{n_queries} query and {n_keys} key labels")
    checks.finite_weights(maps)
    return maps


def _label(kind: str, i: int, text: str, x: float, y: float, edge: str, dim: bool = False) -> str:
    """A token label whose `edge` ("left" or "right") sits at x; right-to-left text anchors the other way round
    (decided per label: "</s>" or "." in an Arabic column still reads left to right)."""
    shown = shorten(text, LABEL_CHARS)
    cls = f"t{kind}" + (" dim" if dim else "")
    return (f'<text class="{cls}" data-kind="{kind}" data-i="{i}" x="{x:.1f}" y="{y:.1f}" '
            f'{anchored(edge, is_rtl(text))} dominant-baseline="middle"><title>{esc(text)}</title>'
            f"{esc(shown)}</text>")


def _lines(maps: np.ndarray, layer: int, head: int, positions: Sequence[int], x_q: float, x_k: float,
           y0: float, row: float) -> str:
    out, rows = [], maps[layer, head].tolist()  # Python floats: formatting numpy scalars is slow
    for r, q in enumerate(positions):
        for k, w in enumerate(rows[r]):
            if w >= MIN_WEIGHT:
                out.append(f'<line x1="{x_q:g}" y1="{y0 + q * row:g}" x2="{x_k:g}" y2="{y0 + k * row:g}" '
                           f'stroke-opacity="{w:.3f}" data-q="{q}" data-k="{k}"/>')
    return "".join(out)


def _head_boxes(n_heads: int, on: set[int]) -> str:
    if n_heads == 1:  # one map per layer (a layer-level lens): no head to switch
        return ""
    boxes = "".join(f'<label><input type="checkbox" class="head" value="{h}"{" checked" if h in on else ""}>'
                    f'<span class="sw" style="background:{head_colour(h)}"></span>head {h}'
                    "</label>" for h in range(n_heads))
    return f'<span class="heads">{boxes}</span>'


def head_view_from(weights, query_labels: Sequence[str], key_labels: Sequence[str], *, layer: int = 0,
                   heads: Sequence[int] | None = None, focus: int | None = None,
                   query_positions: Sequence[int] | None = None, title: str = "", query_name: str = "queries",
                   key_name: str = "keys", layer_picker: bool = True) -> View:
    """The head view of maps (L, H, Q, Lk): Q rows of queries at `query_positions` of query_labels (all of them by
    default), keys in key_labels. `heads` start switched on (all by default), `focus` is a query position whose
    lines alone are shown at first (the current query of a decoding step). Without `layer_picker` (a page whose
    own Layer picker drives the view) only `layer` is drawn, named, with no picker of its own to disagree."""
    positions = checks.indices(query_positions, "query_positions", len(query_labels))
    positions = list(range(len(query_labels))) if positions is None else positions
    focus = None if focus is None else checks.position(focus, "focus", len(query_labels))
    maps = as_maps(weights, len(positions), len(key_labels))
    n_layers, n_heads = maps.shape[:2]
    layer = checks.layer_index(layer, "layer", n_layers)
    heads = checks.indices(heads, "heads", n_heads)
    on = set(range(n_heads) if heads is None else heads)
    mirrored = column_is_rtl(query_labels)  # a right-to-left target reads from the right: its queries stand there
    longest = text_width("x" * LABEL_CHARS, BODY_PX)
    w_q = min(max((text_width(t, BODY_PX) for t in query_labels), default=20), longest)
    w_k = min(max((text_width(t, BODY_PX) for t in key_labels), default=20), longest)
    w_q, w_k = max(w_q, text_width(query_name, NOTE_PX)), max(w_k, text_width(key_name, NOTE_PX))  # headings fit
    left_w, right_w = (w_k, w_q) if mirrored else (w_q, w_k)
    x_left, x_right = round(left_w + 10), round(left_w + 10 + GAP)  # the inner edges of the two label columns
    x_q, x_k = (x_right, x_left) if mirrored else (x_left, x_right)
    y0, rows = 34, max(len(query_labels), len(key_labels))
    width, height = int(x_right + right_w + 12), int(y0 + rows * ROW + 6)
    active = set(positions)
    q_edge, k_edge = ("left", "right") if mirrored else ("right", "left")
    gap = 6  # between a label and the end of its lines
    q_x, k_x = (x_q + gap, x_k - gap) if mirrored else (x_q - gap, x_k + gap)
    parts = [f'<text x="{q_x:.1f}" y="14" text-anchor="{"start" if mirrored else "end"}" class="note">'
             f"{esc(query_name)}</text>",
             f'<text x="{k_x:.1f}" y="14" text-anchor="{"end" if mirrored else "start"}" class="note">'
             f"{esc(key_name)}</text>"]
    parts += [_label("q", i, t, q_x, y0 + i * ROW, q_edge, dim=i not in active) for i, t in enumerate(query_labels)]
    parts += [_label("k", j, t, k_x, y0 + j * ROW, k_edge) for j, t in enumerate(key_labels)]
    for lay in range(n_layers) if layer_picker else [layer]:
        groups = "".join(
            f'<g class="hd" data-head="{h}" stroke="{head_colour(h)}" stroke-width="2"'
            f'{"" if h in on else HIDDEN}>{_lines(maps, lay, h, positions, x_q, x_k, y0, ROW)}</g>'
            for h in range(n_heads))
        parts.append(f'<g class="ly" data-layer="{lay}"{"" if lay == layer else HIDDEN}>{groups}</g>')
    svg = (f'<svg class="hv" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" data-mirrored="{int(mirrored)}">{"".join(parts)}</svg>')
    options = "".join(f'<option value="{lay}"{" selected" if lay == layer else ""}>layer {lay}</option>'
                      for lay in range(n_layers))
    picker = (f'<select class="layer">{options}</select>' if layer_picker else
              f'<span class="layer" data-layer="{layer}" style="margin-right:10px">layer {layer}</span>')
    root = new_id("hv")
    focus_attr = f' data-focus="{focus}"' if focus is not None else ""
    heading = f"<div><b>{esc(title)}</b></div>" if title else ""
    body = (f'<div class="tv hv" id="{root}"{focus_attr}>{heading}<div class="top">{picker}'
            f"{_head_boxes(n_heads, on)}</div>"
            '<div class="note">Hover a token to see only its lines; click it to keep them (click again to let go). '
            "Line opacity is the weight.</div>"
            f'<div style="overflow-x:auto">{svg}</div></div>')
    script = f"<script>({HEAD_JS})(document.getElementById('{root}'));</script>"
    return View("head view", f"<style>{CSS}</style>{body}{script}", height + CHROME_PX, width, NOTE_PX)


def model_view_from(weights, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str = "",
                    query_name: str = "queries", key_name: str = "keys") -> View:
    """Every layer x head as a small line drawing (a row per layer); clicking one opens it in the head view below."""
    maps = as_maps(weights, len(query_labels), len(key_labels))
    n_layers, n_heads = maps.shape[:2]
    rows = max(len(query_labels), len(key_labels), 1)
    row = THUMB_H / rows
    cells = []
    for lay in range(n_layers):
        cells.append(f'<div class="note" style="align-self:center">layer {lay}</div>')
        for h in range(n_heads):
            colour = head_colour(h)
            lines = _lines(maps, lay, h, range(len(query_labels)), 4, THUMB_W - 4, round(row / 2, 2), round(row, 2))
            cells.append(f'<div class="cell" data-layer="{lay}" data-head="{h}"><svg class="thumb" width="{THUMB_W}" '
                         f'height="{THUMB_H}" viewBox="0 0 {THUMB_W} {THUMB_H}" data-layer="{lay}" data-head="{h}">'
                         f'<g stroke="{colour}" stroke-width="1">{lines}</g></svg><div>L{lay} H{h}</div></div>')
    grid = (f'<div class="grid" style="grid-template-columns:max-content repeat({n_heads},{THUMB_W + 2}px);'
            'justify-content:start">'
            + "".join(cells) + "</div>")
    head = head_view_from(maps, query_labels, key_labels, title="", query_name=query_name, key_name=key_name)
    root = new_id("mv")
    heading = f"<div><b>{esc(title)}</b></div>" if title else ""
    body = (f'<div class="tv mv" id="{root}">{heading}<div class="note">Every layer and head, queries on the left, '
            f"keys on the right; click a drawing to open it below.</div>{grid}{head.html}</div>")
    script = f"<script>({MODEL_JS})(document.getElementById('{root}'));</script>"
    height = 60 + n_layers * (THUMB_H + 24) + head.height
    return View("model view", body + script, height, max(head.width, 40 + n_heads * (THUMB_W + 12)), NOTE_PX)

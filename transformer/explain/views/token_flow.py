"""One output token through the whole model as one page (`transformer.explain.flow.token_flow`): every stage a
strip of d_model cells (red positive, blue negative, each strip on its own scale, its norm beside it; hover a cell
for its number) with the equation that made it, grouped by layer, each layer one panel that opens on a click; then
the final norm, the logits of the top candidates and the softmax with a temperature slider that redraws the
probabilities and says which token greedy search and sampling would take (in the manner of Transformer Explainer,
Cho et al., IEEE VIS 2024).

HTML with PNG strips (a strip is a 1 x D image, so that 100 strips of 512 numbers stay small), one
self-contained fragment with no CDN. It reflows to the width it is given (strips stretch, rows wrap), so a layer
never scrolls sideways; `font_px` sets every text (class mode draws it at 18 px). Font and colours are the charts'
theme's (`transformer.charts.theme`). Pieces sit in <bdi> elements, so Arabic reads right to left inside a
left-to-right page.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Callable, Sequence

from transformer.charts.theme import FONT, GRID, HIGHLIGHT, MUTED, NEGATIVE, NORMAL, PICKED, POSITIVE, TEXT, WEIGHT_DARK
from transformer.explain.flow import TEMPERATURES, NeuronExamples, Stage, TokenFlow
from transformer.explain.views.svg import View, data_json, esc, new_id, shorten


def rgb(colour: str) -> tuple[int, int, int]:
    """"#rrggbb" as (r, g, b)."""
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


POS, NEG = rgb(POSITIVE), rgb(NEGATIVE)  # a strip's colours at its largest positive and negative number
Pieces = Callable[[Sequence[int]], list[str]]
CSS = f""".tf{{font-family:{FONT};font-size:%(px)spx;color:{TEXT};line-height:1.35;max-width:100%%}}
.tf details{{border:1px solid {GRID};border-radius:6px;margin:0 0 6px;padding:2px 8px}}
.tf summary{{cursor:pointer;font-weight:600}}.tf .sum{{font-weight:400;color:{MUTED}}}
.tf .stage{{margin:6px 0;padding:4px 6px;border-left:4px solid {GRID}}}.tf .stage.on{{border-left-color:{PICKED};
background:{HIGHLIGHT}}}.tf .title{{font-weight:600}}.tf .row{{display:flex;flex-wrap:wrap;align-items:center;
gap:2px 10px;margin:3px 0}}.tf .name{{flex:0 0 %(name)spx}}.tf .strip{{flex:1 1 200px;min-width:160px;
position:relative}}.tf .strip img{{width:100%%;height:%(strip)spx;image-rendering:pixelated;display:block;
border:1px solid {GRID}}}.tf .norm{{flex:0 0 7em;font-variant-numeric:tabular-nums}}.tf .eq{{color:{MUTED};
font-style:italic}}.tf .hv{{color:{MUTED};font-variant-numeric:tabular-nums}}.tf .bar{{display:inline-block;
height:0.8em;background:{WEIGHT_DARK};vertical-align:middle}}.tf table{{border-collapse:collapse}}
.tf td,.tf th{{padding:1px 8px;text-align:left}}.tf td.n{{text-align:right;font-variant-numeric:tabular-nums}}
.tf input[type=range]{{width:min(420px,90%%)}}.tf .say{{font-weight:600;margin:4px 0}}"""
TF_JS = """function(root,data){
root.querySelectorAll('.strip img').forEach(img=>{const v=data.vectors[+img.dataset.v];const hv=img.parentElement
.parentElement.querySelector('.hv');img.addEventListener('mousemove',e=>{const i=Math.min(v.length-1,Math.floor(
e.offsetX/img.clientWidth*v.length));hv.textContent='d'+i+' = '+v[i].toFixed(4);img.title=hv.textContent;});});
const slider=root.querySelector('input.temp');const rows=root.querySelectorAll('tr.cand');
const say=root.querySelector('.say');const tv=root.querySelector('.tval');
const draw=()=>{const t=data.temps[+slider.value];tv.textContent=t.t.toFixed(2);
rows.forEach((r,i)=>{const p=t.p[i];r.querySelector('.p').textContent=p.toFixed(4);
r.querySelector('.bar').style.width=(p*data.barpx).toFixed(1)+'px';});
root.querySelector('.rest').textContent=t.rest.toFixed(4);
say.textContent='Greedy search takes «'+data.greedy+'». Sampling at temperature '+t.t.toFixed(2)+' (seed '+data.seed+
') would draw «'+t.label+'», of probability '+t.sp.toFixed(4)+'.';};
slider.addEventListener('input',draw);draw();
const on=root.querySelector('.stage.on');const doc=document.scrollingElement;
if(on&&data.scroll&&doc&&window.self!==window.top)doc.scrollTop=on.closest('details').getBoundingClientRect().top+doc.scrollTop;}"""


def strip_png(values: Sequence[float]) -> str:
    """A vector as a 1 x D PNG data URI: white at 0, red up to the largest positive, blue to the largest negative
    (the theme's positive and negative; the strip's own scale: max |v|)."""
    values = [float(v) for v in values]
    scale = max((abs(v) for v in values), default=0.0) or 1.0
    pixels = bytearray(b"\x00")  # the row's filter byte
    for v in values:
        t, colour = min(abs(v) / scale, 1.0), POS if v >= 0 else NEG
        pixels += bytes(round(255 + (c - 255) * t) for c in colour)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", len(values), 1, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(bytes(pixels))) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _group(stage: Stage) -> str:
    if stage.layer is not None:
        return f"{'enc' if stage.side == 'source' else 'dec'}.{stage.layer}"
    return {"src.embed": "src", "memory": "memory", "tgt.embed": "tgt"}.get(stage.key, "output")


def _piece(label: str) -> str:
    return f'<bdi dir="auto" title="{esc(label)}">{esc(shorten(label))}</bdi>'


def _added(stage: Stage) -> str:
    if stage.added is None:
        return "normalises the stream (adds nothing)"
    return f"adds |a| = {stage.added_norm:.2f}, {100 * stage.share:.0f}% of the last stream"


def _stage_html(stage: Stage, on: bool, vectors: list[list[float]], key_pieces: list[str],
                neuron_pieces: dict[int, list[str]]) -> str:
    rows = []
    for vec in stage.vectors:
        vectors.append([round(float(v), 5) for v in vec.values])
        # a norm's and a residual add's equations are in their names' hover, so that a layer fits on a projector
        shown = stage.layer is None or vec.name.startswith("a = ")
        rows.append(f'<div class="row"><span class="name" title="{esc(vec.equation)}">{esc(vec.name)}</span>'
                    f'<span class="strip"><img alt="" data-v="{len(vectors) - 1}" src="{strip_png(vectors[-1])}">'
                    f'</span><span class="norm">|v| = {float(vec.values.norm()):.2f}</span><span class="hv"></span>'
                    '</div>' + (f'<div class="eq">{esc(vec.equation)}</div>' if shown else ""))
    if stage.attention is not None:
        mean = stage.attention.mean(0)  # (L_k,): the heads' average
        top = mean.topk(min(3, mean.numel())).indices.tolist()
        said = ", ".join(f"{_piece(key_pieces[j])} {float(mean[j]):.2f}" for j in top)
        rows.append(f"<div>Attends most to (mean of {stage.attention.size(0)} heads): {said}</div>")
    if stage.neurons:
        said = []
        for n in stage.neurons:
            fires = neuron_pieces.get(n.index)
            where = f", fires most on {' '.join(_piece(p) for p in fires)}" if fires else ""
            said.append(f"<b>{n.index}</b> ({n.activation:.2f}, adds {n.contribution:.2f}{where})")
        rows.append(f"<div>The neurons that fire most (activation, the norm of what each adds): "
                    f"{' · '.join(said)}</div>")
    return (f'<div class="stage{" on" if on else ""}" data-key="{esc(stage.key)}"><div class="title">'
            f'{esc(stage.title)} <span class="sum">{_added(stage)}</span></div>{"".join(rows)}</div>')


def _output_html(flow: TokenFlow, pieces: Pieces, seed: int, on: bool) -> tuple[str, dict]:
    out = flow.output
    cands = out.candidates
    labels = pieces([c.token for c in cands])
    temps = []
    for t in TEMPERATURES:
        probs = out.probabilities(t)
        drawn = out.sampled(t, seed)
        shown = [float(probs[c.token]) for c in cands]
        temps.append({"t": t, "p": shown, "rest": max(0.0, 1.0 - sum(shown)), "label": pieces([drawn])[0],
                      "sp": float(probs[drawn])})
    rows = "".join(f'<tr class="cand"><td>{_piece(label)}</td><td class="n">{c.logit:.3f}</td><td class="n">'
                   f'{c.log_prob:.3f}</td><td class="n p"></td><td><span class="bar"></span></td></tr>'
                   for c, label in zip(cands, labels))
    start = TEMPERATURES.index(1.0)
    html = (f'<div class="stage{" on" if on else ""}" data-key="output"><div class="title">Logits and softmax</div>'
            '<div class="eq">logit z_w = h · W_out[w] (one number per word of the vocabulary); '
            'p_T(w) = exp(log p(w) / T) / Σ_v exp(log p(v) / T), as sampling computes it</div>'
            f'<div class="row"><label>Temperature T = <b class="tval"></b> <input class="temp" type="range" min="0" '
            f'max="{len(TEMPERATURES) - 1}" value="{start}" step="1"></label></div><div class="say"></div>'
            '<table><tr><th>piece</th><th>logit</th><th>log p</th><th>p at T</th><th></th></tr>'
            f'{rows}<tr><td>every other piece</td><td></td><td></td><td class="n rest"></td><td></td></tr>'
            '</table></div>')
    data = {"temps": temps, "greedy": pieces([out.greedy])[0], "seed": seed}
    return html, data


def token_flow_view(flow: TokenFlow, source_pieces: Pieces, target_pieces: Pieces, *, stage: str | None = None,
                    neurons: Sequence[NeuronExamples] = (), seed: int = 0,
                    font_px: int = NORMAL.body, title: str = "") -> View:
    """The flow of `flow` with `stage` (one of flow.keys; default: the decoder's last layer) highlighted, its layer
    open and scrolled to; neurons: where the stages' neurons fire most in some sentences
    (`transformer.explain.flow.neuron_examples`), named beside each;
    font_px: every text's size (at least 12; class mode: 18)."""
    if not 12 <= font_px <= 40:
        raise ValueError(f"font_px must be from 12 to 40, got {font_px}")
    keys = flow.keys
    stage = stage if stage is not None else next(k for k in reversed(keys) if k.startswith("dec.") or k == "tgt.embed")
    if stage not in keys:
        raise ValueError(f"stage must be one of {', '.join(keys)}; got {stage!r}")
    src_pieces, dec_pieces = source_pieces(flow.source_ids), target_pieces(flow.decoder_input)
    open_group = "output" if stage in ("output", "final_norm") else _group(flow.stage(stage))
    vectors: list[list[float]] = []
    groups: dict[str, list[Stage]] = {}
    for s in flow.stages:
        groups.setdefault(_group(s), []).append(s)
    names = {"src": f"The source piece {_piece(src_pieces[flow.source_position])} (position {flow.source_position})",
             "memory": "The encoder's output", "tgt": f"The decoder input {_piece(dec_pieces[flow.position])} "
             f"(position {flow.position})", "output": "The output: final norm, logits, softmax"}
    panels = []
    for group, stages in groups.items():
        if group == "output":
            continue
        side, _, layer = group.partition(".")
        name = names.get(group) or f"{'Encoder' if side == 'enc' else 'Decoder'} layer {layer}"
        summary = " · ".join(f"{s.title.split(': ')[-1]} |a| {s.added_norm:.1f} ({100 * s.share:.0f}%)"
                             for s in stages if s.layer is not None)
        body = "".join(_stage_html(s, s.key == stage, vectors, dec_pieces if s.key.startswith("dec.") and
                                   s.key.endswith("self_attn") else src_pieces,
                                   {ex.neuron: (source_pieces if ex.side == "source" else target_pieces)(
                                       [f.token for f in ex.firings]) for ex in neurons
                                    if ex.side == s.side and ex.layer == s.layer}) for s in stages)
        panels.append(f'<details{" open" if group == open_group else ""} data-group="{group}"><summary>{name}'
                      f'{" <span class=sum>" + esc(summary) + "</span>" if summary else ""}</summary>{body}</details>')
    output_html, data = _output_html(flow, target_pieces, seed, stage == "output")
    final = "".join(_stage_html(s, s.key == stage, vectors, [], {}) for s in groups.get("output", []))
    panels.append(f'<details{" open" if open_group == "output" else ""} data-group="output"><summary>'
                  f'{names["output"]}</summary>{final}{output_html}</details>')
    # scrolled to its stage only inside a frame of its own (the app's), never a notebook's or a report's page
    data.update(vectors=vectors, barpx=12 * font_px, scroll=stage != keys[0])
    css = CSS % {"px": font_px, "name": 12 * font_px, "strip": max(16, int(1.4 * font_px))}
    target = target_pieces([flow.output.greedy])[0]
    note = ("pre-LN: the embedding and the sublayers' outputs sum to the last stream, so the shares sum to 100%"
            if flow.norm_first else "post-LN: each sublayer's sum is normalised again, so the shares need not sum "
            "to 100%")
    heading = (f"<div><b>{esc(title)}</b></div>" if title else "") + (
        f"<div>Predicting the token after {_piece(dec_pieces[flow.position])} (output position {flow.position}; the "
        f"model's most probable next piece: {_piece(target)}). Each strip is a vector of d_model = "
        f"{len(flow.output.state)} numbers, red positive, blue negative, on its own scale; hover it for a number. "
        f"|a|: the norm of what a sublayer adds to the residual stream, (%): its share of the stack's last stream "
        f"({note}). LayerNorm(x) = γ ⊙ (x − mean(x)) / √(var(x) + ε) + β.</div>")
    root = new_id("tf")
    html = (f'<style>{css}</style><div class="tf" id="{root}">{heading}{"".join(panels)}</div>'
            f"<script>({TF_JS})(document.getElementById('{root}'),{data_json(data)});</script>")
    n_rows = sum(len(s.vectors) for s in groups.get(open_group, [])) * 2 + len(groups) + 20
    return View("token flow", html, int(n_rows * font_px * 1.6 + 120), 1200)


def stage_label(key: str) -> str:
    """A stage key as a reader says it: "enc.0.self_attn" -> "encoder layer 0: self-attention"."""
    named = {"src.embed": "source embedding", "memory": "encoder output (memory)", "tgt.embed": "decoder embedding",
             "final_norm": "final norm", "output": "logits and softmax"}
    if key in named:
        return named[key]
    side, layer, kind = key.split(".")
    return f"{'encoder' if side == 'enc' else 'decoder'} layer {layer}: " + {
        "self_attn": "self-attention", "cross_attn": "cross-attention", "feed_forward": "feed-forward"}[kind]


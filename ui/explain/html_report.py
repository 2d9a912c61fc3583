"""A self-contained HTML report of one translated sentence: the translation, the n-best list, every family's
token lines (the head view) and attention maps (with hover) and the statistics of every head, readable in any
browser without the app. No streamlit.

plotly.js, inlined, was 4.8 MB of a 5.5 MB report (BENCHMARKS.md): it travels gzip-compressed (1.4 MB, base64
1.9 MB) and the page unpacks it with the browser's own DecompressionStream before drawing the figures, whose
scripts wait for it."""

from __future__ import annotations

import base64
import functools
import gzip
import html
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from transformer.bidi import piece_labels
from transformer.decoding.translate import Translation, Translator
from transformer.explain import STATISTICS, HeadStatistics, head_labels, views
from transformer.explain.contrast import Contrast
from transformer.explain.flow import token_flow, translation_inputs
from transformer.explain.forced_comparison import ForcedComparison
from transformer.explain.lenses import LABELS, LensMaps
from ui.explain import attribution_figures, head_maps
from ui.shared import heatmaps
from ui.shared.attention import families
from ui.shared.attention.families import FAMILIES
from ui.shared.text.plain import html_text

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}.map{display:inline-block;vertical-align:top}
.note{color:#666;font-size:.9em}"""
NAMES = {"enc_self": ("source query", "source key"), "dec_self": ("target query", "target key"),
         "cross": ("target query", "source key")}


_FIGURE_SCRIPT = re.compile(r'<script(?: type="text/javascript")?>(\s*window\.PLOTLYENV.*?)</script>', re.S)


@functools.cache
def _packed_plotlyjs() -> str:
    """plotly.js gzip-compressed in base64, and a script that unpacks and runs it: `window.plotlyReady` resolves
    when Plotly is defined."""
    packed = base64.b64encode(gzip.compress(get_plotlyjs().encode(), 9, mtime=0)).decode()
    return ('<script>window.plotlyReady=(async()=>{const b=atob("' + packed + '");const a=new Uint8Array(b.length);'
            "for(let i=0;i<b.length;i++)a[i]=b.charCodeAt(i);const s=new Blob([a]).stream().pipeThrough("
            "new DecompressionStream('gzip'));(0,eval)(await new Response(s).text());})();</script>")


def _json_object(text: str, start: int) -> int:
    """The index just past the JSON object that opens at text[start] ("{")."""
    depth, quoted, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if quoted:
            quoted, escaped = (c != '"' or escaped), (c == "\\" and not escaped)
        elif c == '"':
            quoted = True
        elif c in "{}":
            depth += 1 if c == "{" else -1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced JSON object")


def _after_plotly(body: str) -> str:
    """Every figure's script (plotly's `Plotly.newPlot`) run once plotly.js is unpacked, and plotly's template
    (6 kB of the same JSON in every figure) written once and named in each."""
    at = body.find('"template":{')
    if at >= 0:
        template = body[at + 11:_json_object(body, at + 11)]
        body = body.replace(f'"template":{template}', '"template":window.plotlyTemplate')
        body = f"<script>window.plotlyTemplate={template};</script>" + body
    return _FIGURE_SCRIPT.sub(lambda m: f"<script>window.plotlyReady.then(()=>{{{m.group(1)}}});</script>", body)


def _figure(fig: go.Figure) -> str:
    """A figure's HTML, its heatmaps' weights to the 3 decimals the hover shows, in 4-byte floats."""
    for trace in fig.data:
        if trace.type == "heatmap" and trace.z is not None and np.asarray(trace.z).dtype.kind == "f":
            trace.z = np.round(np.asarray(trace.z), 3).astype(np.float32)
    return f'<div class="map">{pio.to_html(fig, include_plotlyjs=False, full_html=False)}</div>'


def _rows(cells: list[list[str]], header: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells)
    return f"<table><tr>{head}</tr>{body}</table>"


def sentence_report(translation: Translation, *, model: str, stats: HeadStatistics | None = None,
                    extra: Sequence[str] = ()) -> str:
    """The whole report as one HTML document; stats are the heads' statistics (of this sentence or a sample),
    extra more HTML sections at the end (`ui.explain.attribution_figures.report_sections`)."""
    att = translation.attention
    parts = [f"<h1>{html.escape(translation.source)}</h1>",
             f"<p><b>Translation:</b> {html_text(translation.text)}<br><span class='note'>model {html.escape(model)}"
             f"; log-probability {translation.score:.3f}</span></p>"]
    nbest = [(translation.text, translation.score, translation.normalized_score)]
    nbest += [(a.text, a.score, a.normalized_score) for a in translation.alternatives]
    parts.append("<h2>Hypotheses</h2>" + _rows([[html_text(t), f"{s:.3f}", f"{n:.3f}"] for t, s, n in nbest],
                                                ["translation", "log-probability", "normalised score"]))
    parts.append("<h2>Output pieces</h2>" + _rows(
        [[html_text(p), f"{q:.3f}"] for p, q in zip(piece_labels(translation.target_pieces), translation.token_probs)],
        ["piece", "probability when chosen"]))
    if stats is not None:
        parts.append("<h2>Head statistics</h2><p class='note'>Hover a cell for every number; the bold line is the "
                     "role a clear-cut statistic suggests.</p>")
        for family in FAMILIES:
            labels = head_labels(stats, family)
            roles = [[lab.role for lab in row] for row in labels]
            hover = [[_hover(family, layer, head, lab.numbers) for head, lab in enumerate(row)]
                     for layer, row in enumerate(labels)]
            name = "spread" if family != "cross" else "diagonal"
            parts.append(_figure(head_maps.heads_map(
                stats.get(family, name).numpy(), title=f"{families.FAMILIES[family]}: {STATISTICS[name]}",
                hover=hover, labels=roles, zmax=1.0)))
    for family in FAMILIES:
        parts.append(f"<h2>{html.escape(families.FAMILIES[family])}</h2>")
        parts.append(views.head_view(att, family).html)  # token lines, then every head's map
        maps = families.stacked(att, family)  # (L, H, Lq, Lk)
        rows, cols = families.labels(att, family)
        for layer in range(maps.shape[0]):
            for head in range(maps.shape[1]):
                fig = heatmaps.attention_heatmap(
                    maps[layer, head], rows, cols, title=f"layer {layer}, head {head}", query_name=NAMES[family][0],
                    key_name=NAMES[family][1], row_px=16)
                fig.update_layout(width=520)
                parts.append(_figure(fig))
    body = _after_plotly("\n".join([*parts, *extra]))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(translation.source)}</title>"
            f"<style>{STYLE}</style>{_packed_plotlyjs()}</head><body>{body}</body></html>")


def lens_sections(translation: Translation, maps: Mapping[str, LensMaps], skipped: Sequence[str] = ()) -> list[str]:
    """One section per lens: the cross-attention of every layer as that lens reads it (the mean of the heads where
    the lens keeps heads), for `extra` of sentence_report; skipped lenses are named with why."""
    if not maps and not skipped:
        return []
    parts = ["<h2>Cross-attention through the lenses</h2><p class='note'>Each map is one layer's cross-attention "
             "as the lens reads it (Kobayashi et al. 2020; Chen et al. 2020; Abnar &amp; Zuidema 2020; Ferrando et "
             "al. 2022; Mohebbi et al. 2023): the mean of the heads where the lens keeps heads.</p>"]
    rows, cols = families.labels(translation.attention, "cross")
    for lens, lensed in maps.items():
        parts.append(f"<h3>{html.escape(LABELS[lens])}</h3>")
        for layer, m in enumerate(lensed.cross):  # (H', T, S)
            fig = heatmaps.attention_heatmap(m.float().mean(0).cpu().numpy(), rows, cols, title=f"layer {layer}",
                                            query_name="target query", key_name="source key", row_px=16)
            fig.update_layout(width=520)
            parts.append(_figure(fig))
    parts.extend(f"<p class='note'>{html.escape(note)}</p>" for note in skipped)
    return parts


def flow_sections(translator: Translator, translation: Translation) -> list[str]:
    """One token through the whole model (`transformer.explain.views.token_flow`), for `extra` of sentence_report:
    the output token the model was least sure of, with every stage open to a click and the temperature slider."""
    if not translation.token_ids:
        return []
    token = min(range(len(translation.token_ids)), key=lambda i: translation.token_probs[i])
    flow = token_flow(translator.model, *translation_inputs(translation, translator.specials), token,
                      specials=translator.specials)
    tok = translator.tokenizer
    labels = lambda pieces: [piece_labels([p])[0] for p in pieces]  # noqa: E731  (each piece on its own)
    view = views.token_flow_view(flow, lambda ids: labels(tok.source_pieces(ids)),
                                 lambda ids: labels(tok.target_pieces(ids)))
    return [f"<h2>One token through the whole model</h2><p class='note'>Output token {token}, "
            f"{html_text(piece_labels(translation.target_pieces)[token])}, the one the model was least sure of "
            f"(probability {translation.token_probs[token]:.3f}): every stage from the embeddings to the softmax, "
            "with the model's numbers (open a layer's panel; hover a strip for a number).</p>", view.html]


def forced_sections(both: ForcedComparison) -> list[str]:
    """What if the model had said X (`transformer.explain.forced_comparison`), for `extra` of sentence_report: the
    model's own translation and the forced one with their totals, each piece's log-probability (forced ones marked),
    and own − forced of every layer's cross-attention (the mean of its heads) over the rows both have."""
    sides = (("own", both.own), ("forced", both.forced))
    prefix = " ".join(piece_labels(both.forced.pieces)[: len(both.prefix)])
    parts = ["<h2>What if the model had said it? Own and forced translations</h2>"
             f"<p class='note'>Forced prefix: {html_text(prefix)}. Both decoded to the end with the same search; "
             "forcing changes the total log-probability by "
             f"{both.forced.score - both.own.score:+.3f}.</p>",
             _rows([[name, html_text(side.text), f"{side.score:.3f}"] for name, side in sides],
                   ["translation", "text", "total log-probability"])]
    for name, side in sides:
        cells = [f"<b>{html_text(p)}</b> (forced)" if f else html_text(p)
                 for p, f in zip(piece_labels(side.pieces), side.forced)]
        parts.append(_rows([[c, f"{lp:.3f}"] for c, lp in zip(cells, side.log_probs)],
                           [f"{name}: piece", "log-probability"]))
    parts.append(f"<p class='note'>{html.escape(both.note)}</p>")
    if both.difference is not None and not both.same:
        rows = both.rows
        labels = [o if o == f else f"{o}→{f}" for o, f in zip(both.own.pieces[:rows], both.forced.pieces[:rows])]
        for layer in range(both.difference.shape[0]):
            fig = head_maps.difference_heatmap(
                both.own.cross_map(layer)[:rows].numpy(), both.forced.cross_map(layer)[:rows].numpy(), labels,
                list(both.source_pieces), title=f"own − forced, layer {layer} (mean of heads)", names=("own", "forced"),
                divergence=min(both.shared + 1, rows))
            fig.update_layout(width=520)
            parts.append(_figure(fig))
    return parts


def contrast_sections(contrast: Contrast, output_pieces: Sequence[str]) -> list[str]:
    """"Why this token rather than that word?" (`transformer.explain.foil.contrast`), for `extra` of sentence_report:
    f = log p(token) − log p(foil) and its attribution to the source words and the target prefix."""
    result, foil = contrast.attribution, contrast.foil
    token = piece_labels(output_pieces)[result.position]
    note = f" {html.escape(foil.note)}." if foil.several else ""
    check = attribution_figures.completeness_line(result)
    return [f"<h2>Why <bdi>{html_text(token)}</bdi> rather than <bdi>{html_text(foil.word)}</bdi>?</h2>"
            f"<p>Output token {result.position}: f = log p({html_text(token)}) − log p({html_text(foil.piece)}) = "
            f"{result.log_prob:.3f} − ({result.foil_log_prob:.3f}) = {result.f:.3f}.{note}"
            + (f"<br><span class='note'>Integrated gradients: {html.escape(check)}</span>" if check else "")
            + "</p>", _figure(attribution_figures.attribution_bars(result))]


def _hover(family: str, layer: int, head: int, numbers: dict[str, float]) -> str:
    shown = "<br>".join(f"{STATISTICS[k]}: {v:.2f}" for k, v in numbers.items() if not math.isnan(v))
    return f"{family} layer {layer}, head {head}<br>{shown}"

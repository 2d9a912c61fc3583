"""A self-contained HTML report of one translated sentence: the translation, the n-best list, every family's
token lines (the head view) and attention maps (with hover) and the statistics of every head, readable in any
browser without the app (plotly.js is inlined: about 5 MB). No streamlit."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from transformer.decoding.translate import Translation, Translator
from transformer.explain import STATISTICS, HeadStatistics, head_labels, views
from transformer.explain.flow import token_flow, translation_inputs
from transformer.explain.lenses import LABELS, LensMaps
from ui.explain import head_maps
from ui.shared import attention_maps, heatmaps
from ui.shared.attention_maps import FAMILIES
from ui.shared.bidi import piece_labels
from ui.shared.text import html_text

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}.map{display:inline-block;vertical-align:top}
.note{color:#666;font-size:.9em}"""
NAMES = {"enc_self": ("source query", "source key"), "dec_self": ("target query", "target key"),
         "cross": ("target query", "source key")}


def _figure(fig: go.Figure) -> str:
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
                stats.get(family, name).numpy(), title=f"{attention_maps.FAMILIES[family]}: {STATISTICS[name]}",
                hover=hover, labels=roles, zmax=1.0)))
    for family in FAMILIES:
        parts.append(f"<h2>{html.escape(attention_maps.FAMILIES[family])}</h2>")
        parts.append(views.head_view(att, family).html)  # token lines, then every head's map
        maps = attention_maps.stacked(att, family)  # (L, H, Lq, Lk)
        rows, cols = attention_maps.labels(att, family)
        for layer in range(maps.shape[0]):
            for head in range(maps.shape[1]):
                fig = heatmaps.attention_heatmap(
                    maps[layer, head], rows, cols, title=f"layer {layer}, head {head}", query_name=NAMES[family][0],
                    key_name=NAMES[family][1], row_px=16)
                fig.update_layout(width=520)
                parts.append(_figure(fig))
    body = "\n".join([*parts, *extra])
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(translation.source)}</title>"
            f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>{body}</body></html>")


def lens_sections(translation: Translation, maps: Mapping[str, LensMaps], skipped: Sequence[str] = ()) -> list[str]:
    """One section per lens: the cross-attention of every layer as that lens reads it (the mean of the heads where
    the lens keeps heads), for `extra` of sentence_report; skipped lenses are named with why."""
    if not maps and not skipped:
        return []
    parts = ["<h2>Cross-attention through the lenses</h2><p class='note'>Each map is one layer's cross-attention "
             "as the lens reads it (Kobayashi et al. 2020; Chen et al. 2020; Abnar &amp; Zuidema 2020; Ferrando et "
             "al. 2022; Mohebbi et al. 2023): the mean of the heads where the lens keeps heads.</p>"]
    rows, cols = attention_maps.labels(translation.attention, "cross")
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


def _hover(family: str, layer: int, head: int, numbers: dict[str, float]) -> str:
    shown = "<br>".join(f"{STATISTICS[k]}: {v:.2f}" for k, v in numbers.items() if not math.isnan(v))
    return f"{family} layer {layer}, head {head}<br>{shown}"

"""A self-contained HTML report of one translated sentence: the translation, the n-best list, every family's
token lines (the head view) and attention maps and the statistics of every head, readable in any browser without
the app, offline. No streamlit.

Every chart is a static SVG drawn by vl-convert (`transformer.charts.render`) from the same Altair builders as the
page, inline in the HTML: no script at all, text as text (searchable, selectable), and each cell's numbers in its
hover (an SVG title)."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

from transformer.bidi import piece_labels
from transformer.charts.heatmap import heatmap
from transformer.decoding.translate import Translation, Translator
from transformer.explain import STATISTICS, HeadStatistics, head_labels, views
from transformer.explain.contrast import Contrast
from transformer.explain.flow import token_flow, translation_inputs
from transformer.explain.forced_comparison import ForcedComparison
from transformer.explain.lenses import LABELS, LensMaps
from ui.explain import attribution_figures, head_maps, report_svg
from ui.shared.attention import families
from ui.shared.attention.families import FAMILIES
from ui.shared.text.plain import html_text

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}.note{color:#666;font-size:.9em}""" + report_svg.STYLE
NAMES = {"enc_self": ("source query", "source key"), "dec_self": ("target query", "target key"),
         "cross": ("target query", "source key")}


def _small_maps(matrices, rows: Sequence[str], cols: Sequence[str], titles: Sequence[str], family: str) -> list[str]:
    """Maps of one family side by side, two to a row of the report."""
    return report_svg.figures([(heatmap(m, rows, cols, title=t, row_title=NAMES[family][0],
                                        col_title=NAMES[family][1], sizes=report_svg.SMALL), report_svg.MAP_WIDTH)
                               for m, t in zip(matrices, titles)])


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
        charts = []
        for family in FAMILIES:
            labels = head_labels(stats, family)
            name = "spread" if family != "cross" else "diagonal"
            charts.append((head_maps.heads_map(
                stats.get(family, name).numpy(), title=families.FAMILIES[family], subtitle=STATISTICS[name],
                hover=_statistic_lines(labels), labels=[[lab.role for lab in row] for row in labels], zmax=1.0,
                scale_title=STATISTICS[name], select=None), None))
        parts += report_svg.figures(charts)
    for family in FAMILIES:
        parts.append(f"<h2>{html.escape(families.FAMILIES[family])}</h2>")
        parts.append(views.head_view(att, family).html)  # token lines, then every head's map
        maps = families.stacked(att, family)  # (L, H, Lq, Lk)
        rows, cols = families.labels(att, family)
        layers, heads = maps.shape[:2]
        parts += _small_maps([maps[a, b] for a in range(layers) for b in range(heads)], rows, cols,
                             [f"layer {a}, head {b}" for a in range(layers) for b in range(heads)], family)
    body = "\n".join([*parts, *extra])
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(translation.source)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")


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
        parts += _small_maps([m.float().mean(0).cpu().numpy() for m in lensed.cross],  # (H', T, S) each
                             rows, cols, [f"layer {layer}" for layer in range(len(lensed.cross))], "cross")
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
        parts += report_svg.figures([(head_maps.difference_heatmap(
            both.own.cross_map(layer)[:rows].numpy(), both.forced.cross_map(layer)[:rows].numpy(), labels,
            list(both.source_pieces), title=f"own − forced, layer {layer} (mean of heads)", names=("own", "forced"),
            divergence=min(both.shared + 1, rows), query_name=NAMES["cross"][0], key_name=NAMES["cross"][1],
            sizes=report_svg.SMALL), report_svg.MAP_WIDTH)
            for layer in range(both.difference.shape[0])])
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
            + "</p>", report_svg.figure(attribution_figures.attribution_bars(result))]


def _statistic_lines(labels) -> list[list[dict[str, str]]]:
    """Each head's statistics for its hover ({name: number}), head_labels' (L, H) labels."""
    return [[{STATISTICS[k]: f"{v:.2f}" for k, v in lab.numbers.items() if not math.isnan(v)} for lab in row]
            for row in labels]

"""Plotly figures and HTML report sections of the attribution views: every method's scores of one output token
as bars, the logit lens as a positions x layers table of top tokens, DecoderLens's translation per encoder layer,
and the activation-patching maps. Pure functions of `transformer.explain` results and labels, no streamlit: kept
apart from `ui.explain.attribution`, which draws them on the page, so that tests read each figure's JSON alone.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from transformer.bidi import isolate
from transformer.explain.attribution import METHODS, TokenAttribution
from transformer.explain.logit_lens import LogitLens
from transformer.explain.patching import PatchingMap
from transformer.labels import HOVER_CHARS
from ui.explain.head_maps import DIVERGING
from ui.shared.heatmaps import escape, label_text, label_texts, short

POSITIVE, NEGATIVE = "#c0392b", "#2e6da4"  # red: raises f, blue: lowers it (as DIVERGING)
FAMILY_NAMES = {"enc_self": "encoder self-attention", "dec_self": "decoder self-attention", "cross": "cross-attention"}
AXIS_TITLES = {"saliency": "gradient norm", "occlusion": "drop of f"}  # the others: contribution to f
MIN_SCALE = 0.05  # Δ log p: the smallest end of a patching map's colour scale (the cells print two decimals)


def question(token: str, foil: str | None) -> str:
    """The explained quantity in words: "log p(token)", or contrastively "log p(token) − log p(foil)"."""
    return f"log p({token})" + ("" if foil is None else f" − log p({foil})")


def _question_label(token: str, foil: str | None) -> str:
    """question() of two pieces as plotly draws it: escaped, a right-to-left piece isolated in the line."""
    return question(*(None if p is None else isolate(label_text(p)) for p in (token, foil)))


def attribution_title(token: str, foil: str | None) -> str:
    """The attribution bars' title: the explained f, with the token's and the foil's pieces."""
    return f"f = {_question_label(token, foil)}"


def completeness_line(attribution: TokenAttribution) -> str:
    """Integrated gradients' completeness check in words (plain text)."""
    check = attribution.completeness
    if check is None:
        return ""
    return (f"Σ attributions {check.attributed:.4f} vs f(input) − f(baseline) = {check.f_input:.4f} − "
            f"{check.f_baseline:.4f} = {check.f_input - check.f_baseline:.4f}: gap {check.gap:+.4f} "
            f"({100 * check.relative_gap:.2f}%, {check.steps} steps)")


def attribution_bars(attribution: TokenAttribution, *, title: str = "") -> go.Figure:
    """One row of bars per method: the source words on the left, the words of the target prefix on the right.
    Each method has its own scale (a gradient norm and a log-probability drop are different units)."""
    methods = list(attribution.methods)
    prefix_title = ("target prefix" if attribution.prefix_words else  # two short lines: the column is narrow
                    "target prefix<br>(empty: read only &lt;s&gt;)")
    n_src = max(len(attribution.source_words), 1)
    n_tgt = max(len(attribution.prefix_words), 0.4 * n_src, 3)  # room for the title above a short prefix
    fig = make_subplots(rows=len(methods), cols=2, shared_yaxes=True, horizontal_spacing=0.03,
                        vertical_spacing=0.5 / max(len(methods), 1) if len(methods) > 1 else 0.0,
                        column_widths=[n_src / (n_src + n_tgt), n_tgt / (n_src + n_tgt)],
                        subplot_titles=[t for m in methods for t in (f"{METHODS[m]}: source words", prefix_title)])
    src_labels, tgt_labels = label_texts(attribution.source_words), label_texts(attribution.prefix_words)
    for row, method in enumerate(methods, start=1):
        scores = attribution.methods[method]
        for col, (labels, values) in enumerate(((src_labels, scores.source), (tgt_labels, scores.prefix)), start=1):
            fig.add_trace(go.Bar(
                x=list(range(len(values))), y=list(values), customdata=labels, showlegend=False,
                marker_color=[POSITIVE if v >= 0 else NEGATIVE for v in values],
                hovertemplate=f"{escape(METHODS[method])}<br>%{{customdata}}: %{{y:.4f}}<extra></extra>"),
                row=row, col=col)
            fig.update_xaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=[short(t) for t in labels],
                             tickangle=-60, tickfont=dict(size=10 if len(labels) < 25 else 8), row=row, col=col,
                             title=dict(text="source word" if col == 1 else "target word", standoff=4))
        fig.update_yaxes(title=dict(text=AXIS_TITLES.get(method, "contribution to f"), standoff=4), row=row, col=1)
    fig.update_layout(title=title or None, height=140 + 230 * len(methods),
                      margin=dict(l=50, r=10, t=70 + (0 if attribution.prefix_words else 20), b=80),
                      bargap=0.25)
    return fig


def lens_table(lens: LogitLens, output_pieces: Sequence[str], piece_of, *, title: str = "") -> go.Figure:
    """The logit lens as a table: a row per output position (the query that emits output_pieces[t]), a column
    per layer; each cell holds that layer's top token, coloured by its probability, with the top k in the hover.
    piece_of(token id) -> its piece."""
    probs = np.array([[cell.probs[0] for cell in row] for row in lens.cells]).T  # (T, L + 1)
    text = [[short(label_text(piece_of(cell.tokens[0]))) for cell in row] for row in lens.cells]
    text = [list(col) for col in zip(*text)]  # (T, L + 1)
    outputs = [short(t, HOVER_CHARS) for t in label_texts(output_pieces)]  # (T,) in each cell's hover
    hover = [[f"{lens.layers[layer]}, emits {outputs[t]}<br>" + "<br>".join(
        f"{short(label_text(piece_of(tok)), HOVER_CHARS)}: {p:.3f}" for tok, p in zip(cell.tokens, cell.probs))
        + f"<br>the emitted token: p {cell.output_prob:.3f}, rank {cell.output_rank}"
        for layer, cell in enumerate(column)] for t, column in enumerate(zip(*lens.cells))]
    ticks = [short(t) for t in outputs]
    bold = [[f"<b>{tx}</b>" if lens.cells[layer][t].output_rank == 0 else tx for layer, tx in enumerate(row)]
            for t, row in enumerate(text)]
    fig = go.Figure(go.Heatmap(
        z=probs, x=list(range(len(lens.layers))), y=list(range(len(outputs))), text=bold, texttemplate="%{text}",
        customdata=hover, hovertemplate="%{customdata}<extra></extra>", zmin=0, zmax=1, colorscale="Blues",
        xgap=2, ygap=1, colorbar=dict(title="p(top)", thickness=12), textfont=dict(size=11)))
    fig.update_layout(
        title=title or None, height=110 + 24 * len(outputs), margin=dict(l=30 + 7 * max(map(len, ticks), default=4),
                                                                          r=10, t=60 if title else 30, b=10),
        xaxis=dict(tickmode="array", tickvals=list(range(len(lens.layers))), ticktext=list(lens.layers), side="top"),
        yaxis=dict(tickmode="array", tickvals=list(range(len(outputs))), ticktext=ticks, autorange="reversed"))
    return fig


def patching_map(values: Sequence[Sequence[float]], row_labels: Sequence[str], col_labels: Sequence[str], *,
                 title: str, scale: float, measure: str = "", unit: str = "Δ log p") -> go.Figure:
    """Effects (rows x columns) on a diverging scale centred at 0 and running to ±scale (e.g. the full
    clean-minus-counterfactual difference, so that a cell at the end of the scale restores all of it), never to
    less than ±MIN_SCALE: differences of rounding noise stay near white instead of filling the scale. measure: what
    changes, with its words (`question`), on a second line of the title and in the hover; unit: the colour bar's."""
    z = np.asarray(values, dtype=np.float64)
    top = max(float(scale), float(np.abs(z).max(initial=0.0)), MIN_SCALE)
    text = [[f"{v:+.2f}" for v in row] for row in z]
    rotated = z.shape[1] > 8
    rows, cols = [short(t) for t in row_labels], [short(t) for t in col_labels]  # the axes'; hovers: up to HOVER_CHARS
    longest = max((len(c) for c in cols), default=1)
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(z.shape[1])), y=list(range(z.shape[0])), zmin=-top, zmax=top, zmid=0, colorscale=DIVERGING,
        text=text, texttemplate="%{text}" if z.shape[1] <= 16 else None, xgap=1, ygap=1,
        customdata=[[f"{short(row_labels[r], HOVER_CHARS)} · {short(col_labels[c], HOVER_CHARS)}"
                     for c in range(z.shape[1])] for r in range(z.shape[0])],
        hovertemplate=f"%{{customdata}}<br>Δ {measure or 'log p'}: %{{z:+.4f}}<extra></extra>",
        colorbar=dict(title=unit, thickness=12)))
    lines = 20 * (1 + measure.count("<br>")) if measure else 0  # px of the subtitle
    fig.update_layout(
        title=dict(text=title, y=1, yanchor="top", pad=dict(t=8),
                   subtitle=dict(text=f"Δ {measure}" if measure else None)),  # in the page's font size
        height=150 + 40 * z.shape[0] + 6 * longest + lines,
        margin=dict(l=20 + 7 * max(map(len, rows), default=4),
                    r=10, t=50 + (8 * longest if rotated else 20) + lines, b=10),
        xaxis=dict(tickmode="array", tickvals=list(range(z.shape[1])), ticktext=cols, side="top",
                   tickangle=-60 if rotated else 0),
        yaxis=dict(tickmode="array", tickvals=list(range(z.shape[0])), ticktext=rows,
                   autorange="reversed"))
    return fig


def position_labels(clean_pieces: Sequence[str], other_pieces: Sequence[str]) -> list[str]:
    """Column labels of a patching map: the clean piece, and "clean→other" where the two sources differ."""
    clean, other = label_texts(clean_pieces), label_texts(other_pieces)
    return [c if a == b else f"{c}→{o}" for a, b, c, o in zip(clean_pieces, other_pieces, clean, other)]


def patching_figures(result: PatchingMap, clean_pieces: Sequence[str], other_pieces: Sequence[str],
                     token: str = "", foil: str | None = None) -> list[go.Figure]:
    """The residual map (encoder layer x source position) and one layers x heads map per attention family; token
    and foil: the pieces of the measure (`result.foil`'s), said in each title."""
    scale = abs(result.difference)
    words = dict(measure=_question_label(token, foil) if token else "",
                 unit="Δ log p" if foil is None else "Δ log ratio")
    figs = [patching_map(result.residual, list(result.layers), position_labels(clean_pieces, other_pieces),
                         title="encoder residual stream at each source position", scale=scale, **words)]
    words["measure"] = words["measure"].replace(" − ", "<br>− ")  # the heads' maps share a row: two short lines
    for family, rows in result.heads.items():
        figs.append(patching_map(rows, [f"layer {i}" for i in range(len(rows))],
                                 [f"h{h}" for h in range(len(rows[0]))], title=f"{FAMILY_NAMES[family]} heads",
                                 scale=scale, **words))
    return figs


# ----------------------------------------------------------------------------- the HTML report


def _figure(fig: go.Figure) -> str:
    return f'<div class="map">{pio.to_html(fig, include_plotlyjs=False, full_html=False)}</div>'


def _html_question(token: str, foil: str | None) -> str:
    return question(*(None if p is None else f"<bdi>{html.escape(p)}</bdi>" for p in (token, foil)))


def report_sections(*, attribution: TokenAttribution | None, token: str, foil: str | None, lens: LogitLens,
                    output_pieces: Sequence[str], piece_of, layer_translations: Sequence[tuple[str, str, float]],
                    patching: PatchingMap | None = None, pair: tuple[str, str] | None = None,
                    pair_pieces: tuple[Sequence[str], Sequence[str]] | None = None, patched_token: str = "",
                    patched_foil: str | None = None) -> list[str]:
    """HTML sections for `ui.explain.html_report.sentence_report(extra=...)`: attribution, logit lens, DecoderLens,
    patching."""
    out = []
    if attribution is not None:
        out.append(f"<h2>Attribution of output token {attribution.position}: <bdi>{html.escape(token)}</bdi></h2>"
                   f"<p>f = {_html_question(token, foil)} = {attribution.f:.4f}. Integrated gradients: "
                   f"{html.escape(completeness_line(attribution))}</p>"
                   + _figure(attribution_bars(attribution, title=attribution_title(token, foil))))
    out.append("<h2>Logit lens (decoder)</h2><p class='note'>Each decoder layer's state through the final norm "
               "and the output projection; bold: the token the model emitted.</p>"
               + _figure(lens_table(lens, output_pieces, piece_of)))
    rows = "".join(f"<tr><td>{html.escape(layer)}</td><td dir='auto'>{html.escape(text)}</td><td>{score:.3f}</td></tr>"
                   for layer, text, score in layer_translations)
    out.append("<h2>DecoderLens (encoder)</h2><p class='note'>The decoder reads each encoder layer's output "
               "(through the encoder's final norm).</p><table><tr><th>encoder layer</th><th>translation</th>"
               f"<th>log-probability</th></tr>{rows}</table>")
    if patching is not None and pair is not None and pair_pieces is not None:
        out.append(f"<h2>Activation patching</h2><p>Clean: <bdi>{html.escape(pair[0])}</bdi><br>Counterfactual: "
                   f"<bdi>{html.escape(pair[1])}</bdi></p>"
                   f"<p>{_html_question(patched_token, patched_foil)}: clean {patching.clean_log_prob:.3f}, "
                   f"counterfactual {patching.counterfactual_log_prob:.3f}. Each cell: the change when that "
                   "activation is copied from the clean run into the counterfactual one.</p>"
                   + "".join(_figure(f) for f in patching_figures(patching, *pair_pieces, patched_token,
                                                                  patched_foil)))
    return out

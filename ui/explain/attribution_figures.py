"""Altair charts and HTML report sections of the attribution views: every method's scores of one output token as
bars, the logit lens as a positions x layers table of top tokens, DecoderLens's translation per encoder layer, and
the activation-patching maps. Pure functions of `transformer.explain` results and labels, no streamlit: kept apart
from `ui.explain.attribution`, which draws them on the page, so that tests read each chart's spec alone.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import altair as alt
import numpy as np
import pandas as pd

from transformer.bidi import isolate, piece_labels
from transformer.charts import theme
from transformer.charts.heatmap import (
    CHAR_WIDTH,
    WEIGHTS,
    colour_legend,
    column_angle,
    diverging,
    heatmap,
    label_array,
    message,
)
from transformer.charts.theme import NORMAL, Sizes
from transformer.explain.attribution import METHODS, TokenAttribution
from transformer.explain.logit_lens import LogitLens
from transformer.explain.patching import PatchingMap
from transformer.labels import HOVER_CHARS, LABEL_CHARS, shorten
from ui.explain.report_svg import MAP_WIDTH, SMALL, figure, figures

FAMILY_NAMES = {"enc_self": "encoder self-attention", "dec_self": "decoder self-attention", "cross": "cross-attention"}
AXIS_TITLES = {"saliency": "gradient norm", "occlusion": "drop of f"}  # the others: contribution to f
MIN_SCALE = 0.05  # Δ log p: the smallest end of a patching map's colour scale (the cells print two decimals)
EMPTY_PREFIX = ("target prefix", "(empty: read only <s>)")  # two short lines: the panel is narrow


def question(token: str, foil: str | None) -> str:
    """The explained quantity in words: "log p(token)", or contrastively "log p(token) − log p(foil)"."""
    return f"log p({token})" + ("" if foil is None else f" − log p({foil})")


def _label(piece: str) -> str:
    """A piece as a chart draws it inside a line: right-to-left marked (`piece_labels`) and isolated."""
    return isolate(piece_labels([piece])[0])


def _question_label(token: str, foil: str | None) -> str:
    """question() of two pieces as a chart's title draws it."""
    return question(*(None if p is None else _label(p) for p in (token, foil)))


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


def _bars(words: Sequence[str], values: Sequence[float], *, method: str, title: str | Sequence[str], x_title: str,
          y_title: str | None, width: float, sizes: Sizes) -> alt.Chart:
    """One panel of bars: a bar per word, red where it raises f, blue where it lowers it."""
    shown = piece_labels(words)
    scores = np.asarray(values, dtype=np.float64)
    names = [shorten(w, HOVER_CHARS) for w in shown]
    data = pd.DataFrame({"index": range(len(scores)), "value": scores, "word": names,
                         "summary": [f"{w}: {v:+.4f}" for w, v in zip(names, scores)]})
    longest = max((len(shorten(w)) for w in shown), default=1)
    angle = column_angle(len(shown), longest, sizes, width)
    x = alt.X("index:O", title=x_title, scale=alt.Scale(domain=list(range(len(shown)))), axis=alt.Axis(
        labelExpr=label_array(shown), labelAngle=angle, labelAlign="right" if angle else "center",
        labelBaseline="middle" if angle else "top"))
    y = alt.Y("value:Q", title=y_title, axis=alt.Axis() if y_title is not None else None)
    colour = alt.condition("datum.value >= 0", alt.value(theme.POSITIVE), alt.value(theme.NEGATIVE))
    return alt.Chart(data, title=alt.Title(list(title) if not isinstance(title, str) else title,
                                           fontSize=sizes.label)).mark_bar().encode(
        x=x, y=y, color=colour, description="summary:N",
        tooltip=[alt.Tooltip("word:N", title=x_title), alt.Tooltip("value:Q", title=METHODS[method], format=".4f")]
    ).properties(width=width, height=max(140, 9 * sizes.label))


def attribution_bars(attribution: TokenAttribution, *, title: str = "", sizes: Sizes = NORMAL
                     ) -> alt.TopLevelMixin:
    """One row of bars per method: the source words on the left, the words of the target prefix on the right, on
    the row's one scale. Each method has its own scale (a gradient norm and a log-probability drop are different
    units)."""
    methods = list(attribution.methods)
    if not methods:
        return message("No attribution method ran.", title=title, sizes=sizes)
    n_src = max(len(attribution.source_words), 1)
    n_tgt = max(len(attribution.prefix_words), 0.4 * n_src, 3)  # room for the title above a short prefix
    room = sizes.page - 6 * sizes.label - 30  # beside the y axis's numbers and title, and the gap
    widths = room * n_src / (n_src + n_tgt), room * n_tgt / (n_src + n_tgt)
    prefix_title = "target prefix" if attribution.prefix_words else EMPTY_PREFIX
    rows = []
    for method in methods:
        scores = attribution.methods[method]
        source = _bars(attribution.source_words, scores.source, method=method,
                       title=f"{METHODS[method]}: source words", x_title="source word",
                       y_title=AXIS_TITLES.get(method, "contribution to f"), width=widths[0], sizes=sizes)
        prefix = _bars(attribution.prefix_words, scores.prefix, method=method, title=prefix_title,
                       x_title="target word", y_title=None, width=widths[1], sizes=sizes)
        rows.append(alt.hconcat(source, prefix, spacing=sizes.label).resolve_scale(y="shared"))
    chart = alt.vconcat(*rows, spacing=2 * sizes.label, title=title or alt.Undefined)
    return theme.sized(chart, sizes)


def lens_table(lens: LogitLens, output_pieces: Sequence[str], piece_of: Callable[[int], str], *, title: str = "",
               sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """The logit lens as a table: a row per output position (the query that emits output_pieces[t]), a column
    per layer; each cell holds that layer's top token (bold where it is the token the model emitted), coloured by
    its probability, with the top k in the tooltip. piece_of(token id) -> its piece."""
    n_cols, n_rows = len(lens.cells), len(output_pieces)
    if n_cols == 0 or n_rows == 0:
        return message("Nothing to show: no output tokens.", title=title, sizes=sizes)
    outputs = piece_labels(output_pieces)
    k = max(len(cell.tokens) for column in lens.cells for cell in column)
    def label(token: int, limit: int) -> str:
        return shorten(piece_labels([piece_of(token)])[0], limit)

    records = []
    for layer, column in enumerate(lens.cells):
        for t, cell in enumerate(column):
            tops = list(zip(cell.tokens, cell.probs))
            emitted = f"p {cell.output_prob:.3f}, rank {cell.output_rank}"
            records.append({
                "row": t, "col": layer, "value": float(cell.probs[0]), "text": label(cell.tokens[0], LABEL_CHARS),
                "emitted": cell.output_rank == 0, "layer": lens.layers[layer],
                "output": shorten(outputs[t], HOVER_CHARS), "output_line": emitted,
                **{f"top_{i}": f"{label(tok, HOVER_CHARS)}: {p:.3f}" if i < len(tops) else ""
                   for i, (tok, p) in enumerate(tops + [(None, 0.0)] * (k - len(tops)))},
                # the cell in one line (a static SVG's hover), its pieces shortened as on the axes
                "summary": f"{lens.layers[layer]}, emits {shorten(outputs[t])}: "
                           + ", ".join(f"{label(tok, LABEL_CHARS)} {p:.3f}" for tok, p in tops)
                           + f"; the emitted token: {emitted}"})
    data = pd.DataFrame(records)
    x = alt.X("col:O", title=None, scale=alt.Scale(domain=list(range(n_cols))),
              axis=alt.Axis(orient="top", labelExpr=label_array(lens.layers), labelAngle=0))
    y = alt.Y("row:O", title="emits", scale=alt.Scale(domain=list(range(n_rows))),
              axis=alt.Axis(labelExpr=label_array(outputs)))
    tooltip = [alt.Tooltip("layer:N", title="read after"), alt.Tooltip("output:N", title="emits"),
               *[alt.Tooltip(f"top_{i}:N", title=f"top {i + 1}") for i in range(k)],
               alt.Tooltip("output_line:N", title="the emitted token")]
    base = alt.Chart(data).encode(x=x, y=y)
    legend = colour_legend("p(top)", n_rows * (sizes.row + 2), sizes)
    rect = base.mark_rect().encode(color=alt.Color("value:Q", scale=WEIGHTS.encoding(), legend=legend),
                                   tooltip=tooltip, description="summary:N")
    px = sizes.cell
    fits = alt.condition(f"bandwidth('x') >= {CHAR_WIDTH * px:.2f} * length(datum.text) + 4", alt.value(1),
                         alt.value(0))
    ink = alt.condition("datum.value > 0.6", alt.value("white"), alt.value(theme.TEXT))
    texts = [base.mark_text(fontSize=px, fontWeight=weight).encode(text="text:N", color=ink, opacity=fits)
             .transform_filter("datum.emitted" if weight == "bold" else "!datum.emitted")
             for weight in ("bold", "normal")]
    chart = alt.layer(rect, *texts, title=title or alt.Undefined).properties(width="container",
                                                                             height={"step": sizes.row + 2})
    return theme.sized(chart, sizes)


def patching_map(values: Sequence[Sequence[float]], row_labels: Sequence[str], col_labels: Sequence[str], *,
                 title: str, scale: float, measure: str | Sequence[str] = "", unit: str = "Δ log p",
                 row_title: str = "", col_title: str = "", sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Effects (rows x columns) on a diverging scale centred at 0 and running to ±scale (e.g. the full
    clean-minus-counterfactual difference, so that a cell at the end of the scale restores all of it), never to
    less than ±MIN_SCALE: differences of rounding noise stay near white instead of filling the scale. measure: what
    changes, with its words (`question`), under the title (lines: a list); unit: the colour legend's. Each cell
    prints its effect where it fits (up to 16 columns)."""
    z = np.asarray(values, dtype=np.float64)
    top = max(float(scale), float(np.abs(z).max(initial=0.0)), MIN_SCALE)
    lines = [measure] if isinstance(measure, str) else list(measure)
    subtitle = [f"Δ {lines[0]}", *lines[1:]] if lines and lines[0] else ""
    texts = np.vectorize(lambda v: f"{v:+.2f}")(z) if z.size and z.shape[1] <= 16 else None
    return heatmap(z, list(row_labels), list(col_labels), title=title, subtitle=subtitle, row_title=row_title,
                   col_title=col_title, scale=diverging(top, unit), fmt="+.4f", texts=texts, sizes=sizes)


def position_labels(clean_pieces: Sequence[str], other_pieces: Sequence[str]) -> list[str]:
    """Column labels of a patching map: the clean piece, and "clean→other" where the two sources differ."""
    clean, other = piece_labels(clean_pieces), piece_labels(other_pieces)
    return [c if a == b else f"{c}→{o}" for a, b, c, o in zip(clean_pieces, other_pieces, clean, other)]


def patching_figures(result: PatchingMap, clean_pieces: Sequence[str], other_pieces: Sequence[str],
                     token: str = "", foil: str | None = None, sizes: Sizes = NORMAL,
                     head_sizes: Sizes | None = None) -> list[alt.TopLevelMixin]:
    """The residual map (encoder layer x source position) and one layers x heads map per attention family; token
    and foil: the pieces of the measure (`result.foil`'s), said under each title. head_sizes: the heads' maps'
    (they share a row of the page)."""
    scale = abs(result.difference)
    measure = _question_label(token, foil) if token else ""
    unit = "Δ log p" if foil is None else "Δ log ratio"
    charts = [patching_map(result.residual, list(result.layers), position_labels(clean_pieces, other_pieces),
                           title="encoder residual stream at each source position", scale=scale, measure=measure,
                           unit=unit, row_title="residual stream", col_title="source piece", sizes=sizes)]
    lines = measure.split(" − ")  # the heads' maps share a row: two short lines
    lines = [lines[0], *(f"− {line}" for line in lines[1:])]
    for family, rows in result.heads.items():
        charts.append(patching_map(rows, [f"layer {i}" for i in range(len(rows))],  # the title short: a third of
                                   [f"h{h}" for h in range(len(rows[0]))], title=FAMILY_NAMES[family],  # the page
                                   scale=scale, measure=lines if measure else "", unit=unit, row_title="layer",
                                   col_title="head", sizes=head_sizes or sizes))
    return charts


# ----------------------------------------------------------------------------- the HTML report


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
                   + figure(attribution_bars(attribution, title=attribution_title(token, foil))))
    out.append("<h2>Logit lens (decoder)</h2><p class='note'>Each decoder layer's state through the final norm "
               "and the output projection; bold: the token the model emitted.</p>"
               + figure(lens_table(lens, output_pieces, piece_of)))
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
                   + "".join(figures([(c, None if i == 0 else MAP_WIDTH) for i, c in enumerate(patching_figures(
                       patching, *pair_pieces, patched_token, patched_foil, head_sizes=SMALL))])))
    return out

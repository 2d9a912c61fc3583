"""The next-token candidates of a decoding step as bars with their numbers: the model's probabilities, and for
sampling the distribution after temperature and after top-k / top-p, the chosen (or drawn) token marked.
No streamlit: tested by decoding the figure's JSON.

The order is a rule, not an accident of the step: most probable first by the model's own probability, ties by
token id; the chart keeps one row per candidate slot and a fixed 0..1 axis, so that it does not jump between steps.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from ui.shared.heatmaps import label_text, short

MODEL, TEMPERED, SAMPLED = "#9aa5b1", "#e39a3b", "#3b75af"
CHOSEN, FORCED = "#c0392b", "#7b3fa0"  # the outline of the chosen bar; of a forced one (the beam tree's violet)
MARK = "▶ "  # before the chosen token's label
FORCED_MARK = "✎ "  # before a forced token's label (given to the decoder, not chosen), here and in the page's text


@dataclass(frozen=True)
class CandidateBars:
    """One step's candidates, in the order drawn: most probable first (ties by id)."""

    ids: list[int]
    labels: list[str]
    probs: list[float]
    chosen: list[bool]
    tempered: list[float] | None = None
    sampled: list[float] | None = None


def ordered(ids: Sequence[int], labels: Sequence[str], probs: Sequence[float], chosen: Collection[int],
            tempered: Sequence[float] | None = None, sampled: Sequence[float] | None = None) -> CandidateBars:
    """Candidates (any order) -> CandidateBars sorted by the model's probability, then id; chosen holds token ids."""
    order = sorted(range(len(ids)), key=lambda i: (-probs[i], ids[i]))

    def pick(values: Sequence | None) -> list | None:
        return None if values is None else [values[i] for i in order]

    return CandidateBars([ids[i] for i in order], [labels[i] for i in order], [float(probs[i]) for i in order],
                         [ids[i] in chosen for i in order], pick(tempered), pick(sampled))


def number(p: float) -> str:
    """A probability as printed beside its bar: 3 decimals, or 1 significant digit below 0.0005 (not "0.000")."""
    return f"{p:.3f}" if p >= 0.0005 or p == 0 else f"{p:.0e}"


def _bar(name: str, values: Sequence[float], labels: Sequence[str], colour: str, chosen: Sequence[bool],
         outline: str = CHOSEN) -> go.Bar:
    return go.Bar(name=name, x=list(values), y=list(range(len(values))), orientation="h", marker_color=colour,
                  marker_line=dict(color=[outline if c else colour for c in chosen],
                                   width=[2.5 if c else 0 for c in chosen]),
                  text=[number(v) for v in values], textposition="outside", cliponaxis=False,
                  customdata=list(labels), hovertemplate=f"%{{customdata}}<br>{name}: %{{x:.4f}}<extra></extra>")


def candidates_figure(bars: CandidateBars, *, rows: int | None = None, title: str = "", kept: int | None = None,
                      forced: bool = False) -> go.Figure:
    """Horizontal bars, one row per candidate (rows: the slots to keep, so the height does not change).

    Greedy and beam search: the model's probabilities. Sampling: three bars a token, the model's, after
    temperature, and the distribution the token was drawn from (kept: how many tokens it has). forced: the step
    emitted a forced piece, marked FORCED_MARK rather than MARK, its label and outline violet.
    """
    labels = [label_text(t) for t in bars.labels]  # whole in the hover, shortened on the axis
    outline = FORCED if forced else CHOSEN
    ticks = [(f"<span style='color:{FORCED}'>{FORCED_MARK}{short(t)}</span>" if forced else MARK + short(t)) if c
             else short(t) for t, c in zip(labels, bars.chosen)]  # a forced token's label violet, as in the text
    sampling = bars.sampled is not None
    traces = [_bar("model", bars.probs, labels, MODEL if sampling else SAMPLED, bars.chosen, outline)]
    if sampling:
        traces.append(_bar("temperature", bars.tempered, labels, TEMPERED, bars.chosen, outline))
        name = "drawn from" + (f" ({kept} token{'s' if kept != 1 else ''})" if kept is not None else "")
        traces.append(_bar(name, bars.sampled, labels, SAMPLED, bars.chosen, outline))
    n = max(rows or 0, len(ticks))
    per_row = 54 if sampling else 30
    fig = go.Figure(traces)
    top = (40 if title else 10) + (48 if sampling else 0)  # the legend (two lines in a narrow column) under the title
    # The title at the top of the figure, the legend on the plot: plotly would centre the title in the margin,
    # over the legend.
    heading = dict(text=title, y=1, yref="container", yanchor="top", pad=dict(t=8)) if title else None
    fig.update_layout(title=heading, height=70 + per_row * n + top, barmode="group",
                      margin=dict(l=10, r=10, t=top, b=10), bargap=0.25, showlegend=sampling,
                      legend=dict(orientation="h", x=0, y=1, yanchor="bottom", traceorder="normal"),
                      xaxis=dict(title="probability", range=[0, 1.12], tickvals=[0, 0.25, 0.5, 0.75, 1]),
                      yaxis=dict(tickmode="array", tickvals=list(range(len(ticks))), ticktext=ticks,
                                 range=[n - 0.5, -0.5]))
    return fig

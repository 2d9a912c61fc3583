"""The next-token candidates of a decoding step as bars with their numbers: the model's probabilities, and for
sampling the distribution after temperature and after top-k / top-p, the chosen (or drawn) token marked.
Altair, no streamlit: tested by reading the chart's spec and data.

The order is a rule, not an accident of the step: most probable first by the model's own probability, ties by
token id; the chart keeps one row per candidate slot and a fixed 0..1 axis, so that it does not jump between steps.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import altair as alt
import pandas as pd

from transformer.bidi import piece_labels
from transformer.charts import theme
from transformer.charts.heatmap import CHAR_WIDTH, label_array
from transformer.charts.theme import NORMAL, Sizes
from transformer.labels import LABEL_CHARS, shorten

# The model's probability grey beside the two sampling steps; alone (greedy, beam) it is the blue of what is drawn.
MODEL, TEMPERED, SAMPLED = theme.MUTED, theme.CATEGORIES[1], theme.CATEGORIES[0]
CHOSEN, FORCED = theme.PICKED, theme.FORCED  # the outline of the chosen bar; of a forced one (the beam tree's violet)
MARK = "▶ "  # before the chosen token's label
FORCED_MARK = "✎ "  # before a forced token's label (given to the decoder, not chosen), here and in the page's text
OUTLINE_PX = 2.5  # the chosen bar's outline


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


def series(bars: CandidateBars, kept: int | None = None) -> list[tuple[str, list[float], str]]:
    """(name, values, colour) of each bar a token has: the model's alone, or for sampling the model's, after
    temperature, and the distribution the token was drawn from (kept: how many tokens it has)."""
    if bars.sampled is None:
        return [("model", bars.probs, SAMPLED)]
    drawn = "drawn from" + (f" ({kept} token{'s' if kept != 1 else ''})" if kept is not None else "")
    return [("model", bars.probs, MODEL), ("temperature", list(bars.tempered or []), TEMPERED),
            (drawn, list(bars.sampled), SAMPLED)]


def bar_table(bars: CandidateBars, kept: int | None = None) -> pd.DataFrame:
    """One row per bar: its slot (0: most probable), series, value, printed number, token (whole, for the tooltip)
    and whether the token was chosen."""
    # candidates are alternatives, not a sequence: each piece marked alone, never joined to its neighbour; whole in
    # the tooltip (a few rows, unlike a map's n x n cells)
    tokens = [piece_labels([t])[0] for t in bars.labels]
    rows = [(slot, name, float(v), number(v), tokens[slot], bars.chosen[slot])
            for name, values, _ in series(bars, kept) for slot, v in enumerate(values)]
    return pd.DataFrame(rows, columns=["slot", "series", "value", "text", "token", "chosen"])


def tick_labels(bars: CandidateBars, forced: bool = False) -> list[str]:
    """The axis labels: each token shortened, the chosen one after MARK (a forced one after FORCED_MARK)."""
    mark = FORCED_MARK if forced else MARK
    return [(mark if chosen else "") + shorten(piece_labels([t])[0], LABEL_CHARS)
            for t, chosen in zip(bars.labels, bars.chosen)]


def candidates_chart(bars: CandidateBars, *, rows: int | None = None, title: str = "", subtitle: str = "",
                     kept: int | None = None, forced: bool = False, sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """Horizontal bars, one row per candidate (rows: the slots to keep, so the height does not change).

    Greedy and beam search: the model's probabilities. Sampling: three bars a token, the model's, after
    temperature, and the distribution the token was drawn from (kept: how many tokens it has), with a legend.
    forced: the step emitted a forced piece, marked FORCED_MARK rather than MARK, its label and outline violet.
    """
    drawn = series(bars, kept)
    sampling = len(drawn) > 1
    data = bar_table(bars, kept)
    n = max(rows or 0, len(bars.ids), 1)
    ticks = tick_labels(bars, forced)
    ticks += [""] * (n - len(ticks))  # the empty slots of a step with fewer candidates
    chosen = [i for i, c in enumerate(bars.chosen) if c]
    test = " || ".join(f"datum.value == {i}" for i in chosen) or "false"
    axis = alt.Axis(labelExpr=label_array(ticks, LABEL_CHARS + len(MARK)), title=None, ticks=False,
                    labelFontWeight={"condition": {"test": test, "value": "bold"}, "value": "normal"},
                    labelColor={"condition": {"test": test, "value": FORCED if forced else theme.TEXT},
                                "value": theme.TEXT})
    y = alt.Y("slot:O", scale=alt.Scale(domain=list(range(n)), paddingInner=0.25 if sampling else 0.2), axis=axis)
    # quarters where the plot has room for them beside the labels and numbers (not in class mode's half page)
    ticks_at = [0, 0.25, 0.5, 0.75, 1] if sizes.page >= 24 * sizes.label else [0, 0.5, 1]
    x = alt.X("value:Q", title="probability", scale=alt.Scale(domain=[0, 1], clamp=True),
              axis=alt.Axis(values=ticks_at, format=".2~f"))
    names = [name for name, _, _ in drawn]
    # the legend in a row where it fits the chart, else one name a line (class mode's half page)
    in_a_row = sum(CHAR_WIDTH * sizes.label * len(name) + 2 * sizes.label for name in names) < sizes.page - 40
    colour = alt.Color("series:N", scale=alt.Scale(domain=names, range=[c for _, _, c in drawn]),
                       legend=alt.Legend(orient="top", direction="horizontal", columns=0 if in_a_row else 1,
                                         rowPadding=sizes.label // 3, labelLimit=sizes.page - 40, title=None,
                                         symbolType="square", symbolStrokeWidth=0) if sampling else None)
    offset = {"yOffset": alt.YOffset("series:N", scale=alt.Scale(domain=names))} if sampling else {}
    tooltip = [alt.Tooltip("token:N", title="token"), alt.Tooltip("series:N", title="bar"),
               alt.Tooltip("value:Q", title="probability", format=".4f")]
    base = alt.Chart(data).encode(x=x, y=y, **offset)
    bar = base.mark_bar(stroke=FORCED if forced else CHOSEN).encode(
        color=colour, tooltip=tooltip,
        strokeWidth=alt.condition("datum.chosen", alt.value(OUTLINE_PX), alt.value(0)))
    text = base.mark_text(align="left", baseline="middle", dx=4, fontSize=sizes.cell, color=theme.TEXT).encode(
        text="text:N", tooltip=tooltip)
    # a bar's height holds its number at the cell font (for sampling, the step is one of a row's three bars)
    step = sizes.cell + 6 if sampling else sizes.row + 4
    # the numbers beside a bar near 1 stand right of the axis: the padding keeps room for them
    heading = alt.Title(title, subtitle=subtitle or alt.Undefined) if title else alt.Undefined
    chart = alt.layer(bar, text, title=heading).properties(
        width="container", height={"step": step}, padding={"left": 5, "top": 5, "bottom": 5, "right": 4 * sizes.cell})
    return theme.sized(chart, sizes)

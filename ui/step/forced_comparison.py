"""The step page's side by side, for a session with a forced prefix: the model's own translation and the forced one,
each with its total log-probability and its forced pieces marked, the cross-attention of both for a chosen layer
and head (or the mean of the heads), and the difference own − forced over the rows both have
(`transformer.explain.forced_comparison` computes every number). The charts are pure functions of that result.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import streamlit as st

from transformer.charts.heatmap import diverging, heatmap
from transformer.charts.theme import NORMAL, Sizes
from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import TranslationError, Translator
from transformer.explain.forced_comparison import ComparedOutput, ForcedComparison, compare_forced
from ui.shared.charts.show import chart
from ui.shared.models.loading import decode_turn
from ui.shared.models.translation_gate import decode_slot
from ui.shared.state import class_mode
from ui.shared.text.plain import piece_line, plain, score
from ui.step.candidate_bars import FORCED, FORCED_MARK
from ui.step.forcing import piece_labels

MEAN = "mean"  # the head picker's first option: the mean of the layer's heads
MIN_SCALE = 0.1  # the difference map's colour scale runs to ± its largest cell, never less: noise stays pale
SIDE_BY_SIDE_PIECES = 20  # a longer source (or class mode): the two maps one under the other, at the page's width
PIECE_NOTES = {True: "forced (given to the decoder)", False: "the model's own choice"}  # a row's tooltip line


def _head_name(head: int | None, short: bool = False) -> str:
    return ("mean" if short else "mean of heads") if head is None else f"head {head}"


def cross_chart(output: ComparedOutput, source_pieces: list[str], layer: int, head: int | None, *, title: str,
                sizes: Sizes = NORMAL) -> alt.TopLevelMixin:
    """One output's cross-attention (rows its pieces, columns the source's); its forced rows' labels after ✎ and a
    violet dashed line under them."""
    n_forced = sum(output.forced)
    return heatmap(output.cross_map(layer, head).numpy(), _rows(output), source_pieces, title=title,
                   row_title="target query", col_title="source key", notes=[PIECE_NOTES[f] for f in output.forced],
                   note_title="this piece", divider=n_forced if 0 < n_forced < len(output.pieces) else None,
                   divider_colour=FORCED, sizes=sizes)


def _rows(output: ComparedOutput) -> list[str]:
    """An output's pieces as a map's row labels: the forced ones (its first pieces) after ✎, as the page marks them."""
    return piece_labels(output.pieces, 0, sum(output.forced))


def difference_chart(both: ForcedComparison, layer: int, head: int | None, *,
                     sizes: Sizes = NORMAL) -> alt.TopLevelMixin | None:
    """own − forced over the rows the comparison covers, on a diverging scale centred at 0 (red: more weight in the
    model's own output); rows labelled "own piece → forced piece" where they differ; a dashed line under the rows
    that read the same pieces. None when there is no difference, or it is 0 everywhere (the forced prefix is the
    model's own; both.note says why)."""
    diff = both.difference_map(layer, head)
    if diff is None or both.same:  # a blank map of every row says less than the note
        return None
    z = diff.double().numpy()  # (R, S)
    rows = z.shape[0]
    labels = [m if o == f else f"{o}→{m}"  # m: the forced output's piece, marked when forced
              for o, f, m in zip(both.own.pieces[:rows], both.forced.pieces, _rows(both.forced))]
    top = max(float(np.abs(z).max(initial=0.0)), MIN_SCALE)
    equal = min(both.shared + 1, rows)
    return heatmap(z, labels, list(both.source_pieces), title=f"own − forced, layer {layer}, {_head_name(head)}",
                   row_title="own→forced piece", col_title="source key", scale=diverging(top, "own − forced"),
                   fmt="+.3f", divider=equal if equal < rows else None, sizes=sizes)


def comparison(translator: Translator, session: DecodingSession) -> ForcedComparison:
    """The session's comparison, computed once per model, source, prefix and settings (kept in the session state)."""
    request = (str(translator.checkpoint.path), tuple(session.src_ids), tuple(session.prefix), session.settings)
    kept = st.session_state.get("step_fc_result")
    if kept is None or kept[0] != request:
        with decode_turn() as on_wait, decode_slot(on_wait):
            kept = (request, compare_forced(translator, session.src_ids, session.prefix, session.settings))
        st.session_state.step_fc_result = kept
    return kept[1]


def pieces_line(output: ComparedOutput) -> str:
    """The output's pieces as one line of Markdown, the forced ones on violet, ✎ before the first (the page's mark)."""
    # piece_line escapes every piece, so its background directives are the only ones in the line
    return piece_line(output.pieces, output.forced, colour="violet").replace(
        ":violet-background[", f":violet-background[{FORCED_MARK}", 1)


def _summary(container: Any, name: str, output: ComparedOutput) -> None:
    container.markdown(f"**{name}** · log-probability **{score(output.score)}**")
    container.markdown(pieces_line(output))


def side_by_side(translator: Translator, session: DecodingSession) -> None:
    """Own and forced translations side by side; nothing for a session without a forced prefix."""
    if not session.prefix:
        return
    try:
        both = comparison(translator, session)
    except (TranslationError, ValueError) as e:  # the server is busy; a prefix the model cannot be made to emit
        st.warning(plain(str(e)))
        return
    st.subheader("The model's own translation and the forced one")
    gap = both.forced.score - both.own.score
    st.caption(f"Both decoded to the end with this page's search settings. Forced pieces on violet. Forcing the prefix "
               f"changes the total log-probability by {gap:+.3f}" + (" (none: the model would have said it)."
                                                                    if both.same else "."))
    c1, c2 = st.columns(2)
    _summary(c1, "Own", both.own)
    _summary(c2, "Forced", both.forced)
    n_layers, n_heads = both.own.cross.shape[:2]
    p1, p2 = st.columns(2)
    layer = p1.selectbox("Decoder layer", range(n_layers), index=n_layers - 1, key="step_fc_layer")
    head = p2.selectbox("Head", [MEAN, *range(n_heads)], key="step_fc_head",
                        format_func=lambda h: _head_name(None if h == MEAN else h))
    head = None if head == MEAN else head
    sources = list(both.source_pieces)
    stacked = class_mode.is_on() or len(sources) > SIDE_BY_SIDE_PIECES  # half a page would thin the source labels
    places = [st, st] if stacked else st.columns(2)
    sizes = class_mode.sizes(share=1.0 if stacked else 0.5)
    for col, (name, output) in zip(places, (("own", both.own), ("forced", both.forced))):
        drawn = cross_chart(output, sources, layer, head, title=f"{name}: layer {layer}, {_head_name(head, True)}",
                            sizes=sizes)
        chart(col, drawn, key=f"step_fc_{name}", filename=f"{name}-cross-attention-layer-{layer}")
    difference = difference_chart(both, layer, head, sizes=class_mode.sizes())
    if difference is not None:
        chart(st, difference, key="step_fc_diff", filename=f"own-minus-forced-layer-{layer}")
    st.caption(plain(both.note) + (" Red: more weight in the model's own output, blue: more in the forced one."
                                   if difference is not None and not both.same else ""))

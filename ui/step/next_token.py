"""The step page's next-token panel: one hypothesis's candidate bars at a step with their numbers, and "Draw again"
taking the new draw to the step the old one was at."""

from __future__ import annotations

import dataclasses
from typing import Any

from transformer.bidi import isolate
from transformer.decoding.search import SearchStep
from transformer.decoding.session import DecodingSession
from ui.shared.charts.show import chart
from ui.shared.state import class_mode
from ui.shared.text.plain import code
from ui.step import candidate_bars


def redraw(previous: DecodingSession | None, session: DecodingSession) -> None:
    """After "Draw again" (the same sampling but the seed), take the new draw to the step the old one was at."""
    if previous is None or not session.settings.do_sample or \
            dataclasses.replace(previous.settings, seed=session.settings.seed) != session.settings or \
            previous.src_ids != session.src_ids or previous.model is not session.model:
        return
    while session.n_steps < previous.n_steps and session.step() is not None:
        pass


def step_candidates(container: Any, step: SearchStep, hyp_index: int, pieces, *, rows: int, key: str,
                    filename: str, forced: bool = False) -> list[int]:
    """One hypothesis's candidate bars at a step, with their numbers; its chosen (kept or drawn) tokens marked, or
    its forced one (forced: the step emitted a forced piece). Returns the candidates' ids in the order drawn."""
    hyp = step.live[hyp_index]
    c = hyp.candidates
    chosen = {n.token for n in step.nodes if n.parent == hyp_index and n.status != "pruned"}
    bars = candidate_bars.ordered(c.tokens, pieces(c.tokens), c.probs, chosen, c.tempered, c.sampled)
    sampling = c.sampled is not None
    title = "next token" if sampling else f"top {len(c.tokens)} next tokens"
    drawn = candidate_bars.candidates_chart(bars, rows=rows, title=title, kept=c.kept, forced=forced,
                                            subtitle="model → temperature → drawn from" if sampling else "",
                                            sizes=class_mode.sizes(share=0.5))  # the left one of two columns
    chart(container, drawn, key=key, filename=filename)
    marked = [code(isolate(piece)) for piece, mark in zip(bars.labels, bars.chosen) if mark]
    if forced:
        container.caption(f"{candidate_bars.FORCED_MARK}marks the forced token ({', '.join(marked)}): given to the "
                          "decoder, not chosen; its bar is the probability the model gave it. The model's own first "
                          f"choice here: {code(isolate(bars.labels[0]))} ({candidate_bars.number(bars.probs[0])}).")
    elif sampling:
        container.caption(f"{candidate_bars.MARK}marks the token drawn ({', '.join(marked)}). Grey: the model's "
                          "probability; orange: after temperature; blue: what is left after top-k and top-p, "
                          f"renormalised ({c.kept} token{'s' if c.kept != 1 else ''}), which the token was drawn from.")
    else:
        container.caption(f"{candidate_bars.MARK}marks the token{'s' if len(marked) > 1 else ''} chosen "
                          f"({', '.join(marked) or 'none: this hypothesis was pruned'}).")
    return bars.ids

"""Step through greedy search, sampling or beam search one token at a time, as the app's "Decode step by step"
page does.

The session runs the same `GreedySearch` / `SampleSearch` / `BeamSearch` engines as the one-shot functions in
`transformer.decoding.search`, so a session run to the end gives exactly their result (a sampling session
draws the same samples as `sample` with the same seed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from transformer.data.tokenizer import SpecialIds
from transformer.decoding.search import (
    DEFAULT_SETTINGS,
    DecodeResult,
    Hypothesis,
    SearchSettings,
    SearchStep,
    make_search,
)
from transformer.model.layers import Transformer


class DecodingSession:
    """Decode one sentence a step at a time: step(), back(), run_to_end(), reset().

    Keeps the search (with its KV cache), the light history of the steps taken (tokens, parents,
    scores, candidates: the beam tree) and the attention rows of the latest step only. Given a prefix, its steps
    (the first len(prefix)) emit the forced ids and the search goes on from there. back()
    replays the search from the source to one step earlier: decoding is deterministic (sampling too: its
    generators restart from the seed), and a replay costs a few cached steps.
    """

    def __init__(self, model: Transformer, src_ids: Sequence[int], settings: SearchSettings = DEFAULT_SETTINGS, *,
                 specials: SpecialIds, prefix: Sequence[int] = ()):
        if not src_ids:
            raise ValueError("a decoding session needs at least one source token")
        self.model, self.src_ids, self.settings, self.specials = model, list(src_ids), settings, specials
        self.prefix = list(prefix)  # the forced output ids: steps 0 .. len(prefix) - 1 emit them
        self.reset()  # the search checks the prefix (ValueError)

    def reset(self) -> None:
        src = torch.tensor([self.src_ids], device=next(self.model.parameters()).device)  # (1, S)
        self._search = make_search(self.model, src, self.settings, self.specials, self.prefix)
        self.history: list[SearchStep] = []  # every step taken, attention rows dropped
        self.current: SearchStep | None = None  # the latest step, with its attention rows

    @property
    def done(self) -> bool:
        return self._search.done

    @property
    def n_steps(self) -> int:
        return len(self.history)

    @property
    def live(self) -> list[Hypothesis]:
        """The hypotheses still growing (greedy: the prefix), best first."""
        return self._search.live(0)

    @property
    def finished(self) -> list[Hypothesis]:
        """Hypotheses ended so far, best first (for greedy, its output once done; for sampling, each sample once
        it ends, in the order drawn)."""
        return self._search.ranked(0)

    def step(self) -> SearchStep | None:
        """Take one step; None once done."""
        if self.done:
            return None
        self.current = self._search.step(record=True)[0]
        self.history.append(dataclasses.replace(self.current, live=[
            dataclasses.replace(h, self_attention=None, cross_attention=None) for h in self.current.live]))
        return self.current

    def back(self) -> None:
        """Undo the latest step (nothing to undo at the start)."""
        target = max(self.n_steps - 1, 0)
        self.reset()
        while self.n_steps < target:
            self.step()

    def run_to_end(self) -> DecodeResult:
        while self.step() is not None:
            pass
        return self.result()

    def result(self) -> DecodeResult:
        """The n-best hypotheses ended so far (the search's output once done) and the history."""
        n = self.settings.num_samples if self.settings.do_sample else self.settings.nbest
        return DecodeResult(self.finished[:n], list(self.history))

"""Greedy search, sampling and beam search over the KV-cached decoder (`transformer.decoding.session` steps
through them; beam search lives in `transformer.decoding.beam`, sampling's distributions in
`transformer.decoding.sampling`).

Neither search recomputes the prefix: `Transformer.start_cache` projects the encoder memory into
cross-attention keys and values once per source, and each `decode_step` appends one position's
self-attention keys and values. Beam search keeps its hypotheses as rows of the batch dimension and
reorders the cache by each survivor's parent row. Both are batched over sentences, and both drop a
sentence's rows from the batch as soon as it is done.

A forced prefix (`transformer.decoding.prefix`) fixes the first tokens of every output: each engine emits them
before choosing its own, with the model's log-probabilities. Before it come the tokenizer's own forced tokens
(`SpecialIds.forced`: a many-to-many model's target language, transformers' forced_bos_token_id), emitted with
probability 1 as transformers' logits processor makes them, so that scores and beams rank as generate's do.

Step t (from 0) feeds the token before output position t (the tokenizer's start token when t = 0: <s> for ours,
pad for Marian's) and emits output token t. The attention rows recorded at step t are those of that query: row t
of a teacher-forced pass over start + output[:-1]. Every engine takes the tokenizer's `SpecialIds`: where to
start, which token ends an output, which ids are never emitted. Scores are natural-log probabilities; an output
counts its </s> in its length.

`GreedySearch`, `SampleSearch` and `BeamSearch` advance one step at a time, so that the one-shot functions
(`greedy_decode`, `sample`, `beam_search`, `search`) and `DecodingSession` run the same code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch
from torch import Tensor

from transformer.data.tokenizer import SpecialIds
from transformer.decoding.beam import BeamSearch
from transformer.decoding.prefix import forced_prefix
from transformer.decoding.results import (  # re-exported: their old home
    STATUSES,  # noqa: F401
    Candidates,
    DecodeResult,
    Hypothesis,
    HypothesisStep,  # noqa: F401
    Node,
    Rows,
    SearchMaps,
    SearchStep,
    candidates,
    hypothesis,
    hypothesis_step,
    next_token_log_probs,
    source_lengths,
)
from transformer.decoding.sampling import draw, sample_generator, sampling_distribution, tempered, uniforms
from transformer.decoding.settings import (  # the settings' old home re-exports them
    DEFAULT_SETTINGS,
    LENGTH_PENALTIES,  # noqa: F401
    SearchSettings,
    length_penalty,  # noqa: F401
    max_output_lengths,
)
from transformer.model.layers import Transformer

# ----------------------------------------------------------------------------- greedy search


class GreedySearch:
    """Take the most probable token at every step, for a batch of sentences src (B, S).

    Each sentence has `samples` rows of the batch (greedy: one), sentence-major; a row leaves the batch when it
    ends. use_cache=False recomputes the whole prefix at every step (for tests and benchmarks). The first
    len(prefix) steps emit the forced prefix's ids (checked: `transformer.decoding.prefix.check_prefix`).
    """

    samples = 1

    @torch.inference_mode()
    def __init__(self, model: Transformer, src: Tensor, settings: SearchSettings, *, specials: SpecialIds,
                 use_cache: bool = True, prefix: Sequence[int] = (), maps: bool = False):
        self.model, self.src, self.settings, self.use_cache, self.maps = model, src, settings, use_cache, maps
        self.specials = specials
        self.src_lengths = source_lengths(model, src)
        self.max_new = max_output_lengths(self.src_lengths, settings, model.config.max_len)
        self.prefix = forced_prefix(prefix, specials, model.config.tgt_vocab_size, self.max_new)
        self.t = 0  # steps taken
        # maps: every attention map as the search goes, on the written-out attention path (whose probabilities differ
        # from the fused path's in the 7th digit); one pass where a teacher-forced one after it would read every
        # weight again, which is most of the time at NLLB's size (BENCHMARKS.md)
        encoded = model.encode(src, return_attention=maps)
        self.memory, self.encoder_maps = encoded.memory, encoded.attention  # (B, S, D), L x (B, H, S, S)
        n_rows = src.size(0) * self.samples
        self.sentence = [r // self.samples for r in range(n_rows)]  # the sentence of each row
        self.cache = model.start_cache(self.memory, src)
        if self.samples > 1:
            self.cache = self.cache.reorder(torch.tensor(self.sentence, device=src.device))
        self.active = list(range(n_rows))  # the rows still decoding
        self.feed = src.new_full((n_rows,), specials.start)  # (A,)
        self.tokens: list[list[int]] = [[] for _ in self.active]
        self.log_probs: list[list[float]] = [[] for _ in self.active]
        self.ended: list[bool] = [False for _ in self.active]
        self.rows: list[list[Rows]] = [[] for _ in self.active]  # maps: each step's attention rows, per row

    @property
    def done(self) -> bool:
        return not self.active

    def _advance(self, record: bool, project: bool = True) -> tuple[Tensor | None, Rows | None]:
        """Feed self.feed: logits (A, V) (None when not project) and, when record, per-layer attention rows of the
        new query."""
        if self.use_cache:
            out = self.model.decode_step(self.feed, self.cache, return_attention=record, project=project)
            self.cache = out.cache
            return out.logits, (out.self_attention, out.cross_attention) if record else None
        self.cache = dataclasses.replace(self.cache, tokens=torch.cat([self.cache.tokens, self.feed[:, None]], 1))
        sentences = torch.tensor([self.sentence[r] for r in self.active], device=self.src.device)
        out = self.model.decode(self.cache.tokens, self.memory[sentences], self.src[sentences],
                                return_attention=record)
        if not record:
            return out.logits[:, -1], None  # (A, V)
        last = ([w[:, :, -1] for w in out.self_attention], [w[:, :, -1] for w in out.cross_attention])
        return out.logits[:, -1], last  # (A, V), per-layer (A, H, T) and (A, H, S)

    def _choose(self, logp: Tensor, record: bool) -> tuple[Tensor, list[Candidates] | None]:
        """logp (A, V) -> the next token of each row (A,) and, when record, each row's candidates."""
        best = logp.argmax(-1)
        if not record:
            return best, None
        return best, [candidates(row, self.settings.candidates) for row in logp]

    @torch.inference_mode()
    def step(self, record: bool = False) -> dict[int, SearchStep]:
        """Emit one token per unfinished row; returns {sentence: SearchStep} when record."""
        # the tokenizer's forced token has probability 1: without candidates to record, its logits are not needed
        given = self.t < len(self.specials.forced)
        logits, rows = self._advance(record or self.maps, project=record or not given)
        if given and not record:
            chosen, found = torch.full_like(self.feed, self.prefix[self.t]), None  # (A,)
        elif self.t < len(self.prefix):  # forced: every row emits the prefix's token (sampling draws nothing)
            logp = next_token_log_probs(logits, self.specials)  # (A, V)
            forced = self.prefix[self.t]
            chosen = torch.full_like(self.feed, forced)  # (A,)
            found = [candidates(row, self.settings.candidates, forced) for row in logp] if record else None
        else:
            logp = next_token_log_probs(logits, self.specials)  # (A, V)
            chosen, found = self._choose(logp, record)
        chosen_logp = torch.zeros(len(chosen)) if given else logp.gather(1, chosen[:, None])[:, 0]  # (A,)
        self.t += 1
        records: dict[int, SearchStep] = {}
        keep = []
        for i, (r, token, lp) in enumerate(zip(self.active, chosen.tolist(), chosen_logp.tolist())):
            prefix_score = sum(self.log_probs[r])
            self.tokens[r].append(token)
            self.log_probs[r].append(lp)
            self.ended[r] = token == self.specials.eos
            at_limit = len(self.tokens[r]) >= self.max_new[self.sentence[r]]
            status = "finished" if self.ended[r] else "stopped" if at_limit else "live"
            if self.maps:
                self.rows[r].append(([w[i] for w in rows[0]], [w[i] for w in rows[1]]))
            if record:
                b = self.sentence[r]
                step = records.setdefault(b, SearchStep([], []))
                prefix = [self.specials.start, *self.tokens[r][:-1]]
                row = ([w[i] for w in rows[0]], [w[i] for w in rows[1]])
                slot = sum(self.sentence[self.active[j]] == b for j in keep) if status == "live" else -1
                step.nodes.append(Node(len(step.live), token, lp, prefix_score + lp, status, slot))
                step.live.append(hypothesis_step(prefix, prefix_score, found[i], row, self.src_lengths[b]))
            if status == "live":
                keep.append(i)
        if len(keep) < len(self.active):  # the cache of rows that go on (all of them, most steps: nothing to copy)
            index = torch.tensor(keep, dtype=torch.long, device=self.src.device)
            self.cache = self.cache.reorder(index)
            chosen = chosen.index_select(0, index)
        self.feed = chosen
        self.active = [self.active[i] for i in keep]
        return records

    def _rows(self, b: int) -> range:
        return range(b * self.samples, (b + 1) * self.samples)

    def live(self, b: int) -> list[Hypothesis]:
        """The prefixes of sentence b's rows still decoding."""
        return [hypothesis(list(self.tokens[r]), list(self.log_probs[r]), False, self.settings)
                for r in self._rows(b) if r in self.active]

    def ranked(self, b: int) -> list[Hypothesis]:
        """The hypotheses of sentence b's rows that have ended (samples in the order drawn)."""
        return [hypothesis(self.tokens[r], self.log_probs[r], self.ended[r], self.settings)
                for r in self._rows(b) if r not in self.active]

    def results(self) -> list[DecodeResult]:
        return [DecodeResult([hypothesis(self.tokens[r], self.log_probs[r], self.ended[r], self.settings)
                              for r in self._rows(b)], maps=self._maps(b) if self.maps else None)
                for b in range(len(self.src_lengths))]

    def _maps(self, b: int) -> SearchMaps:
        """Sentence b's maps (its first row's: greedy's only, sampling's sample 0), its padding cut off."""
        S, rows = self.src_lengths[b], self.rows[b * self.samples]
        T = len(rows)
        dec_self = []
        for layer in range(len(self.model.decoder_layers)):
            square = self.memory.new_zeros(rows[0][0][layer].size(0), T, T)  # (H, T, T): a query sees its past
            for t, (self_rows, _) in enumerate(rows):
                square[:, t, : t + 1] = self_rows[layer]
            dec_self.append(square)
        cross = [torch.stack([cross_rows[layer][:, :S] for _, cross_rows in rows], dim=1)  # (H, T, S)
                 for layer in range(len(self.model.decoder_layers))]
        return SearchMaps([w[b, :, :S, :S] for w in self.encoder_maps], dec_self, cross)


class SampleSearch(GreedySearch):
    """Draw every token from the model's distribution after temperature, top-k and top-p
    (`transformer.decoding.sampling`): settings.num_samples samples per sentence, rows of one KV-cached batch.

    Scores stay the model's own log-probabilities, comparable with greedy and beam search; the samples come
    back in the order they were drawn (sample 0 first), not ranked.
    """

    def __init__(self, model: Transformer, src: Tensor, settings: SearchSettings, *, specials: SpecialIds,
                 use_cache: bool = True, prefix: Sequence[int] = (), maps: bool = False):
        self.samples = settings.num_samples
        super().__init__(model, src, settings, specials=specials, use_cache=use_cache, prefix=prefix, maps=maps)
        self.generators = [sample_generator(settings.seed, r % self.samples) for r in self.active]

    def _choose(self, logp: Tensor, record: bool) -> tuple[Tensor, list[Candidates] | None]:
        s = self.settings
        probs = sampling_distribution(logp, s.temperature, s.top_k, s.top_p)  # (A, V)
        drawn = draw(probs, uniforms([self.generators[r] for r in self.active])).to(logp.device)  # (A,)
        if not record:
            return drawn, None
        warmed = tempered(logp, s.temperature)  # (A, V)
        return drawn, [candidates(logp[i], s.candidates, int(drawn[i]), warmed[i], probs[i])
                       for i in range(logp.size(0))]


# ----------------------------------------------------------------------------- one-shot functions


def make_search(model: Transformer, src: Tensor, settings: SearchSettings, specials: SpecialIds,
                prefix: Sequence[int] = (), maps: bool = False) -> GreedySearch | BeamSearch:
    """The engine the settings ask for: sampling, greedy search (beam_size 1) or beam search, from the forced
    prefix; maps: greedy search and sampling also keep every attention map (DecodeResult.maps)."""
    if settings.do_sample:
        return SampleSearch(model, src, settings, specials=specials, prefix=prefix, maps=maps)
    if settings.beam_size == 1:
        return GreedySearch(model, src, settings, specials=specials, prefix=prefix, maps=maps)
    return BeamSearch(model, src, settings, specials=specials, prefix=prefix)


def _run(search: GreedySearch | BeamSearch, record: bool) -> list[DecodeResult]:
    steps: list[list[SearchStep]] = [[] for _ in search.src_lengths]
    while not search.done:
        for b, step in search.step(record).items():
            steps[b].append(step)
    results = search.results()
    if record:
        for result, sentence_steps in zip(results, steps):
            result.steps = sentence_steps
    return results


def greedy_decode(model: Transformer, src: Tensor, settings: SearchSettings = DEFAULT_SETTINGS, *,
                  specials: SpecialIds, use_cache: bool = True, prefix: Sequence[int] = ()) -> list[DecodeResult]:
    """Greedy search for each sentence of src (B, S), right-padded; beam_size and nbest are ignored."""
    return _run(GreedySearch(model, src, settings, specials=specials, use_cache=use_cache, prefix=prefix),
                settings.record_steps)


def sample(model: Transformer, src: Tensor, settings: SearchSettings, *, specials: SpecialIds,
           use_cache: bool = True, prefix: Sequence[int] = ()) -> list[DecodeResult]:
    """settings.num_samples samples for each sentence of src (B, S), right-padded, in the order drawn."""
    return _run(SampleSearch(model, src, settings, specials=specials, use_cache=use_cache, prefix=prefix),
                settings.record_steps)


BEAM_SETTINGS = SearchSettings(beam_size=4)


def beam_search(model: Transformer, src: Tensor, settings: SearchSettings = BEAM_SETTINGS, *,
                specials: SpecialIds, prefix: Sequence[int] = ()) -> list[DecodeResult]:
    """Beam search for each sentence of src (B, S), right-padded: settings.nbest hypotheses each."""
    return _run(BeamSearch(model, src, settings, specials=specials, prefix=prefix), settings.record_steps)


def search(model: Transformer, src: Tensor, settings: SearchSettings = DEFAULT_SETTINGS, *,
           specials: SpecialIds, prefix: Sequence[int] = (), maps: bool = False) -> list[DecodeResult]:
    """Sampling when settings.do_sample, else greedy search when settings.beam_size is 1, else beam search; every
    output starts with the forced prefix. maps: greedy search and sampling keep every attention map as they go."""
    return _run(make_search(model, src, settings, specials, prefix, maps), settings.record_steps)

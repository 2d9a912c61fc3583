"""Beam search over the KV-cached decoder: the beams of all sentences share the batch, one cached step a token.

See `transformer.decoding.search` for the conventions (steps, scores, recorded attention rows).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch
from torch import Tensor

from transformer.data.tokenizer import SpecialIds
from transformer.decoding.prefix import forced_prefix
from transformer.decoding.results import (
    DecodeResult,
    Hypothesis,
    HypothesisStep,
    Node,
    SearchStep,
    candidates,
    hypothesis,
    hypothesis_step,
    next_token_log_probs,
    source_lengths,
)
from transformer.decoding.settings import SearchSettings, max_output_lengths
from transformer.model.layers import DecoderCache, StepOutput, Transformer

BLOCK = 64  # columns per block of best_of_rows


def best_of_rows(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The k largest values of each row of x (R, N) and their columns, best first: x.topk(k, dim=-1).

    For the K x V continuations of a beam (40,000 for K = 5, V = 8,000), topk's heap over every value costs more
    than the step's other bookkeeping together; here the row's k largest are found among the k blocks of BLOCK
    columns whose maxima are largest (and the last, shorter block): a value that is not in one of them has k larger
    ones before it. Equal values (ties) may come out in another order than topk's, as topk's own order among them
    is unspecified.
    """
    R, N = x.shape
    if N < 8 * k * BLOCK:  # too few blocks to leave many out
        return x.topk(k, dim=-1)
    n_blocks = N // BLOCK
    maxima = x[:, : n_blocks * BLOCK].view(R, n_blocks, BLOCK).amax(-1)  # (R, n_blocks)
    blocks = maxima.topk(k, dim=-1).indices  # (R, k)
    columns = (blocks[:, :, None] * BLOCK + torch.arange(BLOCK, device=x.device)).view(R, k * BLOCK)
    if N % BLOCK:
        columns = torch.cat([columns, torch.arange(n_blocks * BLOCK, N, device=x.device).expand(R, -1)], dim=1)
    values, at = x.gather(1, columns).topk(k, dim=-1)  # (R, k) each
    return values, columns.gather(1, at)


class BeamSearch:
    """Keep the beam_size best hypotheses per sentence; the beams of all sentences share the batch.

    Each step scores every continuation of every live hypothesis and looks at the 2K best (K = beam
    size): a </s> among the K best finishes its hypothesis, and the best K others stay live. A
    sentence is done when K hypotheses have finished (early stopping, as fairseq) or at its length
    limit, where the live ones are kept as "stopped". Finished hypotheses are ranked by normalised score.
    During the first len(prefix) steps the only continuation is the forced prefix's token.
    """

    @torch.inference_mode()
    def __init__(self, model: Transformer, src: Tensor, settings: SearchSettings, *, specials: SpecialIds,
                 prefix: Sequence[int] = ()):
        self.model, self.src, self.settings, self.K = model, src, settings, settings.beam_size
        self.specials = specials
        self.src_lengths = source_lengths(model, src)
        self.max_new = max_output_lengths(self.src_lengths, settings, model.config.max_len)
        self.prefix = forced_prefix(prefix, specials, model.config.tgt_vocab_size, self.max_new)
        B = src.size(0)
        rows = torch.arange(B, device=src.device).repeat_interleave(self.K)  # (B*K,) sentence of each row
        self.cache = model.start_cache(model.encode(src).memory, src).reorder(rows)
        self.active = list(range(B))  # sentences still searching, in the order of their rows
        self.scores = torch.full((B, self.K), -math.inf, device=src.device)  # cumulative log-probabilities
        self.scores[:, 0] = 0.0  # one live hypothesis, the start token, to start from
        self.t = 0  # steps taken
        self.log_probs: list[list[float]] = [[] for _ in range(B * self.K)]  # per row, per token: the history
        self.feed = src.new_full((B * self.K,), specials.start)
        self.finished: list[list[Hypothesis]] = [[] for _ in range(B)]

    @property
    def done(self) -> bool:
        return not self.active

    @torch.inference_mode()
    def step(self, record: bool = False) -> dict[int, SearchStep]:
        K, t = self.K, self.t
        out = self.model.decode_step(self.feed, self.cache, return_attention=record)
        logp = next_token_log_probs(out.logits, self.specials)  # (A*K, V)
        A, V = len(self.active), logp.size(-1)
        scored = logp  # what the scores add up; the steps record the model's own logp
        if t < len(self.specials.forced):  # the tokenizer's forced token: probability 1, as transformers' processor
            scored = torch.full_like(logp, -math.inf)  # (A*K, V)
            scored[:, self.prefix[t]] = 0.0
        choice = scored
        if t < len(self.prefix):  # forced: the prefix's token is the only continuation (of the one live hypothesis)
            choice = torch.full_like(logp, -math.inf)  # (A*K, V)
            choice[:, self.prefix[t]] = scored[:, self.prefix[t]]
        total = (self.scores.view(-1, 1) + choice).view(A, K * V)  # every continuation of every hypothesis
        top_scores, top_index = best_of_rows(total, min(2 * K, K * V))  # (A, 2K) each, best first
        top_logp = scored.view(A, K * V).gather(1, top_index)  # (A, 2K)
        choices = [[divmod(i, V) for i in row] for row in top_index.tolist()]  # (parent, token) of each

        # Each sentence's K slots for the next step: (score, parent row within the sentence, token, log-prob);
        # slots left empty feed </s> and score -inf, so they never produce a real hypothesis.
        slots = [[(-math.inf, 0, self.specials.eos, 0.0)] * K for _ in self.active]
        records, keep = {}, []
        for a, (b, row_scores, row_logp) in enumerate(zip(self.active, top_scores.tolist(), top_logp.tolist())):
            nodes, slot, at_limit = [], 0, t + 1 >= self.max_new[b]
            for rank, (s, lp, (p, tok)) in enumerate(zip(row_scores, row_logp, choices[a])):
                if s == -math.inf:
                    break  # continuations of empty slots
                if tok == self.specials.eos:
                    status = "finished" if rank < K and len(self.finished[b]) < K else "pruned"
                elif slot < K:
                    status = "stopped" if at_limit else "live"
                else:
                    status = "pruned"
                if status in ("finished", "stopped"):
                    row = a * K + p
                    self.finished[b].append(hypothesis(out.cache.tokens[row, 1:].tolist() + [tok],
                                                        self.log_probs[row] + [lp], status == "finished",
                                                        self.settings))
                if record:  # the beam tree's edges, for a recorded step only
                    nodes.append(Node(p, tok, lp, s, status, slot if status == "live" else -1))
                if status in ("live", "stopped"):
                    slots[a][slot] = (s, p, tok, lp)
                    slot += 1
            if not (at_limit or len(self.finished[b]) >= K or slot == 0):
                keep.append(a)
            elif record:  # done: the hypotheses it would have kept live go no further
                nodes = [dataclasses.replace(n, status="pruned", slot=-1) if n.status == "live" else n for n in nodes]
            if record:
                records[b] = SearchStep(self._live_steps(a, b, logp, out), nodes)

        # Survivors: each slot continues from its parent's row; done sentences leave the batch.
        device = logp.device
        kept = [(a * K + p, s, tok, lp) for a in keep for s, p, tok, lp in slots[a]]  # A' * K slots, sentence-major
        index = torch.tensor([row for row, *_ in kept], dtype=torch.long, device=device)  # (A'*K,) parent rows
        self.cache = self._reorder(out.cache, index, keep)
        self.log_probs = [self.log_probs[row] + [lp] for row, _, _, lp in kept]
        self.scores = torch.tensor([s for _, s, _, _ in kept], device=device).view(-1, K)  # (A', K)
        self.feed = torch.tensor([tok for _, _, tok, _ in kept], dtype=torch.long, device=device)
        self.active = [self.active[a] for a in keep]
        self.t += 1
        return records

    def _reorder(self, cache: DecoderCache, index: Tensor, keep: list[int]) -> DecoderCache:
        """The cache of the survivors, rows index: their prefixes' self-attention keys and values follow their
        parents, while the cross-attention keys and values, equal for every hypothesis of a sentence, are only
        copied when a sentence leaves the batch."""
        cache = cache.reorder_targets(index)
        if len(keep) < len(self.active):
            rows = torch.tensor([a * self.K + k for a in keep for k in range(self.K)], dtype=torch.long,
                                device=index.device)
            cache = cache.reorder_sources(rows)
        return cache

    def _live_steps(self, a: int, b: int, logp: Tensor, out: StepOutput) -> list[HypothesisStep]:
        forced = self.prefix[self.t] if self.t < len(self.prefix) else None  # among the candidates, however improbable
        steps = []
        for k in range(self.K):
            row, score = a * self.K + k, self.scores[a, k].item()
            if score == -math.inf:
                break  # slots are filled in order, so the rest are empty too
            attention = None
            if out.self_attention is not None:
                attention = ([w[row] for w in out.self_attention], [w[row] for w in out.cross_attention])
            steps.append(hypothesis_step(out.cache.tokens[row].tolist(), score,
                                          candidates(logp[row], self.settings.candidates, forced), attention,
                                          self.src_lengths[b]))
        return steps

    def live(self, b: int) -> list[Hypothesis]:
        """The live hypotheses of sentence b while it is still searching, best first."""
        if b not in self.active:
            return []
        a = self.active.index(b)
        rows = [a * self.K + k for k in range(self.K) if self.scores[a, k] > -math.inf]
        return [hypothesis(self.cache.tokens[row, 1:].tolist() + [int(self.feed[row])], list(self.log_probs[row]),
                            False, self.settings) for row in rows]

    def ranked(self, b: int) -> list[Hypothesis]:
        """Every hypothesis of sentence b ended so far, best normalised score first."""
        return sorted(self.finished[b], key=lambda h: h.normalized_score, reverse=True)

    def results(self) -> list[DecodeResult]:
        return [DecodeResult(self.ranked(b)[: self.settings.nbest]) for b in range(len(self.finished))]

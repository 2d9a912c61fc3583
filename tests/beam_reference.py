"""The beam search as it was before its speed work (one top-k over K * V, the whole cache reordered every step): the
reference that tests/decoding/test_search_against_reference.py holds the fast one to. Not used by the package."""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor

from transformer.data.tokenizer import SpecialIds
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
from transformer.model.layers import StepOutput, Transformer


class ReferenceBeamSearch:
    """Keep the beam_size best hypotheses per sentence; the beams of all sentences share the batch.

    Each step scores every continuation of every live hypothesis and looks at the 2K best (K = beam
    size): a </s> among the K best finishes its hypothesis, and the best K others stay live. A
    sentence is done when K hypotheses have finished (early stopping, as fairseq) or at its length
    limit, where the live ones are kept as "stopped". Finished hypotheses are ranked by normalised score.
    """

    @torch.inference_mode()
    def __init__(self, model: Transformer, src: Tensor, settings: SearchSettings, *, specials: SpecialIds):
        self.model, self.src, self.settings, self.K = model, src, settings, settings.beam_size
        self.specials = specials
        self.src_lengths = source_lengths(model, src)
        self.max_new = max_output_lengths(self.src_lengths, settings, model.config.max_len)
        B = src.size(0)
        rows = torch.arange(B, device=src.device).repeat_interleave(self.K)  # (B*K,) sentence of each row
        self.cache = model.start_cache(model.encode(src).memory, src).reorder(rows)
        self.active = list(range(B))  # sentences still searching, in the order of their rows
        self.scores = torch.full((B, self.K), -math.inf, device=src.device)  # cumulative log-probabilities
        self.scores[:, 0] = 0.0  # one live hypothesis, <s>, to start from
        self.log_probs = torch.zeros(B * self.K, 0, device=src.device)  # (A*K, t) per-token history
        self.feed = src.new_full((B * self.K,), specials.start)
        self.finished: list[list[Hypothesis]] = [[] for _ in range(B)]

    @property
    def done(self) -> bool:
        return not self.active

    @torch.inference_mode()
    def step(self, record: bool = False) -> dict[int, SearchStep]:
        K, t = self.K, self.log_probs.size(1)
        out = self.model.decode_step(self.feed, self.cache, return_attention=record)
        logp = next_token_log_probs(out.logits, self.specials)  # (A*K, V)
        A, V = len(self.active), logp.size(-1)
        total = (self.scores.view(-1, 1) + logp).view(A, K * V)  # every continuation of every hypothesis
        top_scores, top_index = total.topk(min(2 * K, K * V), dim=-1)  # (A, 2K), best first
        top_logp = logp.view(A, K * V).gather(1, top_index)
        parents, tokens = (top_index // V).tolist(), (top_index % V).tolist()

        # Each sentence's K slots for the next step: (score, parent row within the sentence, token, log-prob);
        # slots left empty feed </s> and score -inf, so they never produce a real hypothesis.
        slots = [[(-math.inf, 0, self.specials.eos, 0.0)] * K for _ in self.active]
        records, keep = {}, []
        for a, b in enumerate(self.active):
            nodes, slot, at_limit = [], 0, t + 1 >= self.max_new[b]
            for rank, (s, lp, p, tok) in enumerate(zip(top_scores[a].tolist(), top_logp[a].tolist(),
                                                       parents[a], tokens[a])):
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
                                                        self.log_probs[row].tolist() + [lp],
                                                        status == "finished", self.settings))
                nodes.append(Node(p, tok, lp, s, status, slot if status == "live" else -1))
                if status in ("live", "stopped"):
                    slots[a][slot] = (s, p, tok, lp)
                    slot += 1
            if not (at_limit or len(self.finished[b]) >= K or slot == 0):
                keep.append(a)
            else:  # done: the hypotheses it would have kept live go no further
                nodes = [dataclasses.replace(n, status="pruned", slot=-1) if n.status == "live" else n for n in nodes]
            if record:
                records[b] = SearchStep(self._live_steps(a, b, logp, out), nodes)

        # Survivors: each slot continues from its parent's row; done sentences leave the batch.
        device = logp.device
        kept = [slot for a in keep for slot in slots[a]]  # A' * K slots, sentence-major
        index = torch.tensor([a * K + p for a in keep for _, p, _, _ in slots[a]], dtype=torch.long, device=device)
        self.cache = out.cache.reorder(index)
        new_logp = torch.tensor([[lp] for *_, lp in kept], device=device).view(-1, 1)  # (A'*K, 1)
        self.log_probs = torch.cat([self.log_probs.index_select(0, index), new_logp], dim=1)  # (A'*K, t+1)
        self.scores = torch.tensor([s for s, *_ in kept], device=device).view(-1, K)  # (A', K)
        self.feed = torch.tensor([tok for _, _, tok, _ in kept], dtype=torch.long, device=device)
        self.active = [self.active[a] for a in keep]
        return records

    def _live_steps(self, a: int, b: int, logp: Tensor, out: StepOutput) -> list[HypothesisStep]:
        steps = []
        for k in range(self.K):
            row, score = a * self.K + k, self.scores[a, k].item()
            if score == -math.inf:
                break  # slots are filled in order, so the rest are empty too
            attention = None
            if out.self_attention is not None:
                attention = ([w[row] for w in out.self_attention], [w[row] for w in out.cross_attention])
            steps.append(hypothesis_step(out.cache.tokens[row].tolist(), score,
                                          candidates(logp[row], self.settings.candidates), attention,
                                          self.src_lengths[b]))
        return steps

    def live(self, b: int) -> list[Hypothesis]:
        """The live hypotheses of sentence b while it is still searching, best first."""
        if b not in self.active:
            return []
        a = self.active.index(b)
        rows = [a * self.K + k for k in range(self.K) if self.scores[a, k] > -math.inf]
        return [hypothesis(self.cache.tokens[row, 1:].tolist() + [int(self.feed[row])], self.log_probs[row].tolist(),
                            False, self.settings) for row in rows]

    def ranked(self, b: int) -> list[Hypothesis]:
        """Every hypothesis of sentence b ended so far, best normalised score first."""
        return sorted(self.finished[b], key=lambda h: h.normalized_score, reverse=True)

    def results(self) -> list[DecodeResult]:
        return [DecodeResult(self.ranked(b)[: self.settings.nbest]) for b in range(len(self.finished))]

"""Greedy and beam search over the KV-cached decoder (`transformer.decoding.session` steps through them).

Neither search recomputes the prefix: `Transformer.start_cache` projects the encoder memory into
cross-attention keys and values once per source, and each `decode_step` appends one position's
self-attention keys and values. Beam search keeps its hypotheses as rows of the batch dimension and
reorders the cache by each survivor's parent row. Both are batched over sentences, and both drop a
sentence's rows from the batch as soon as it is done.

Step t (from 0) feeds the token before output position t (<s> when t = 0) and emits output token t.
The attention rows recorded at step t are those of that query: row t of a teacher-forced pass over
<s> + output[:-1]. Scores are natural-log probabilities; an output counts its </s> in its length.

`GreedySearch` and `BeamSearch` advance one step at a time, so that the one-shot functions
(`greedy_decode`, `beam_search`, `search`) and `DecodingSession` run the same code.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer.data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from transformer.decoding.bounds import MAX_BEAM, check_bounds  # noqa: F401 (MAX_BEAM: the bound, for callers)
from transformer.model.layers import StepOutput, Transformer

Rows = tuple[list[Tensor], list[Tensor]]  # per-layer self- and cross-attention rows of one or more queries
LENGTH_PENALTIES = ("gnmt", "length")
STATUSES = ("live", "finished", "stopped", "pruned")


@dataclass(frozen=True)
class SearchSettings:
    beam_size: int = 1  # 1 is greedy search (`search` and `DecodingSession` switch on it)
    nbest: int = 1  # hypotheses returned per sentence, at most beam_size
    length_penalty: str = "gnmt"  # "gnmt": ((5 + len) / 6) ** alpha (Wu et al., 2016); "length": len ** alpha
    alpha: float = 0.6  # 0 ranks by total log-probability; larger values favour longer outputs
    max_len_a: float = 1.5  # at most max_len_a * source length + max_len_b output tokens, </s> included,
    max_len_b: int = 10  # and never more than the model's max_len
    top_k: int = 5  # candidate next tokens recorded per step
    record_steps: bool = False  # one-shot functions: keep every step's candidates and attention rows

    def __post_init__(self) -> None:
        check_bounds(self)
        if not 1 <= self.nbest <= self.beam_size:
            raise ValueError(f"nbest must be between 1 and beam_size ({self.beam_size}), got {self.nbest}")
        if self.length_penalty not in LENGTH_PENALTIES:
            raise ValueError(f"length_penalty must be one of {LENGTH_PENALTIES}, got {self.length_penalty!r}")
        if self.max_len_a + self.max_len_b == 0:
            raise ValueError("max_len_a + max_len_b must be > 0: the output needs room for one token")


DEFAULT_SETTINGS = SearchSettings()  # greedy


def length_penalty(length: int, settings: SearchSettings) -> float:
    """The divisor of a hypothesis's log-probability when hypotheses of different lengths compete."""
    base = (5 + length) / 6 if settings.length_penalty == "gnmt" else length
    return base**settings.alpha


def max_output_lengths(src_lengths: list[int], settings: SearchSettings, max_len: int) -> list[int]:
    """Per sentence: floor(a * source length + b), clipped to [1, max_len] (the positions the model knows)."""
    return [min(max(1, math.floor(settings.max_len_a * n + settings.max_len_b)), max_len) for n in src_lengths]


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Candidates:
    tokens: list[int]  # the most probable next tokens, best first
    probs: list[float]


@dataclass
class HypothesisStep:
    """What the decoder saw and predicted for one hypothesis at one step."""

    prefix: list[int]  # tokens fed so far, <s> first; the last one is this step's query
    score: float  # cumulative log-probability of prefix
    candidates: Candidates
    self_attention: Tensor | None  # (n_layers, H, len(prefix)): the query's row over the prefix
    cross_attention: Tensor | None  # (n_layers, H, S): the query's row over the source


@dataclass(frozen=True)
class Node:
    """A candidate continuation considered at a step, and its fate: the edges of the beam tree."""

    parent: int  # index into the step's `live` hypotheses
    token: int
    log_prob: float  # of token after the parent's prefix
    score: float  # cumulative log-probability, token included
    status: str  # "live" (kept), "finished" (ended by </s>), "stopped" (hit the length limit), "pruned"
    slot: int = -1  # for "live": its index among the next step's live hypotheses


@dataclass
class SearchStep:
    live: list[HypothesisStep]  # the hypotheses fed at this step (greedy: one)
    nodes: list[Node]  # candidates considered, best score first (greedy: the one chosen)


@dataclass
class Hypothesis:
    tokens: list[int]  # output ids after <s>, ending with </s> when finished
    log_probs: list[float]  # per token
    score: float  # sum of log_probs
    normalized_score: float  # score / length_penalty(len(tokens)): what beam search ranks by
    finished: bool  # False: cut at the length limit (or still live in a session)


@dataclass
class DecodeResult:
    hypotheses: list[Hypothesis]  # n-best, best first; greedy gives one
    steps: list[SearchStep] | None = None  # when record_steps

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]


def _hypothesis(tokens: list[int], log_probs: list[float], finished: bool, settings: SearchSettings) -> Hypothesis:
    score = sum(log_probs)
    return Hypothesis(tokens, log_probs, score, score / length_penalty(len(tokens), settings), finished)


def _hypothesis_step(prefix: list[int], score: float, logp: Tensor, rows: Rows | None, top_k: int,
                     src_len: int) -> HypothesisStep:
    """logp (V,) of the next token; rows = (self, cross) per-layer lists of (H, T) and (H, S_batch)."""
    probs, tokens = logp.exp().topk(min(top_k, logp.numel()))
    self_att = cross_att = None
    if rows is not None:
        self_att = torch.stack(rows[0])  # (n_layers, H, T)
        cross_att = torch.stack(rows[1])[:, :, :src_len]  # (n_layers, H, S): the batch's padding cut off
    return HypothesisStep(prefix, score, Candidates(tokens.tolist(), probs.tolist()), self_att, cross_att)


def next_token_log_probs(logits: Tensor) -> Tensor:
    """logits (B, V) -> log-probabilities (B, V), with <pad> and <s> ruled out (-inf): never an output.

    The other tokens keep the model's own probabilities (no renormalisation), so scores stay what a
    teacher-forced pass gives.
    """
    logp = logits.float().log_softmax(-1)
    logp[:, [PAD_ID, BOS_ID]] = -math.inf
    return logp


def _source_lengths(model: Transformer, src: Tensor) -> list[int]:
    """Real lengths of the right-padded src (B, S); refuses a model left in training mode."""
    if model.training:
        raise ValueError("decoding needs model.eval(): dropout would make the output random")
    return (src != model.config.pad_id).sum(1).tolist()


# ----------------------------------------------------------------------------- greedy search


class GreedySearch:
    """Take the most probable token at every step, for a batch of sentences src (B, S).

    use_cache=False recomputes the whole prefix at every step (for tests and benchmarks).
    """

    @torch.inference_mode()
    def __init__(self, model: Transformer, src: Tensor, settings: SearchSettings, *, use_cache: bool = True):
        self.model, self.src, self.settings, self.use_cache = model, src, settings, use_cache
        self.src_lengths = _source_lengths(model, src)
        self.max_new = max_output_lengths(self.src_lengths, settings, model.config.max_len)
        self.memory = model.encode(src).memory  # (B, S, D)
        self.cache = model.start_cache(self.memory, src)
        self.active = list(range(src.size(0)))  # the sentence of each batch row still decoding
        self.feed = src.new_full((src.size(0),), BOS_ID)  # (A,)
        self.tokens: list[list[int]] = [[] for _ in self.active]
        self.log_probs: list[list[float]] = [[] for _ in self.active]
        self.ended: list[bool] = [False for _ in self.active]

    @property
    def done(self) -> bool:
        return not self.active

    def _advance(self, record: bool) -> tuple[Tensor, Rows | None]:
        """Feed self.feed: logits (A, V) and, when record, per-layer attention rows of the new query."""
        if self.use_cache:
            out = self.model.decode_step(self.feed, self.cache, return_attention=record)
            self.cache = out.cache
            return out.logits, (out.self_attention, out.cross_attention) if record else None
        self.cache = dataclasses.replace(self.cache, tokens=torch.cat([self.cache.tokens, self.feed[:, None]], 1))
        sentences = torch.tensor(self.active, device=self.src.device)
        out = self.model.decode(self.cache.tokens, self.memory[sentences], self.src[sentences],
                                return_attention=record)
        if not record:
            return out.logits[:, -1], None  # (A, V)
        last = ([w[:, :, -1] for w in out.self_attention], [w[:, :, -1] for w in out.cross_attention])
        return out.logits[:, -1], last  # (A, V), per-layer (A, H, T) and (A, H, S)

    @torch.inference_mode()
    def step(self, record: bool = False) -> dict[int, SearchStep]:
        """Emit one token per unfinished sentence; returns {sentence: SearchStep} when record."""
        logits, rows = self._advance(record)
        logp = next_token_log_probs(logits)  # (A, V)
        best_logp, best = logp.max(-1)
        records, keep = {}, []
        for i, (b, token, lp) in enumerate(zip(self.active, best.tolist(), best_logp.tolist())):
            prefix_score = sum(self.log_probs[b])
            self.tokens[b].append(token)
            self.log_probs[b].append(lp)
            self.ended[b] = token == EOS_ID
            status = "finished" if self.ended[b] else "stopped" if len(self.tokens[b]) >= self.max_new[b] else "live"
            if status == "live":
                keep.append(i)
            if record:
                prefix = [BOS_ID, *self.tokens[b][:-1]]
                row = ([w[i] for w in rows[0]], [w[i] for w in rows[1]])
                live = _hypothesis_step(prefix, prefix_score, logp[i], row, self.settings.top_k, self.src_lengths[b])
                node = Node(0, token, lp, prefix_score + lp, status, 0 if status == "live" else -1)
                records[b] = SearchStep([live], [node])
        index = torch.tensor(keep, dtype=torch.long, device=self.src.device)
        self.cache = self.cache.reorder(index)
        self.feed = best.index_select(0, index)
        self.active = [self.active[i] for i in keep]
        return records

    def live(self, b: int) -> list[Hypothesis]:
        """The prefix of sentence b while it is still decoding."""
        if b not in self.active:
            return []
        return [_hypothesis(list(self.tokens[b]), list(self.log_probs[b]), False, self.settings)]

    def results(self) -> list[DecodeResult]:
        return [DecodeResult([_hypothesis(t, lp, e, self.settings)])
                for t, lp, e in zip(self.tokens, self.log_probs, self.ended)]


# ----------------------------------------------------------------------------- beam search


class BeamSearch:
    """Keep the beam_size best hypotheses per sentence; the beams of all sentences share the batch.

    Each step scores every continuation of every live hypothesis and looks at the 2K best (K = beam
    size): a </s> among the K best finishes its hypothesis, and the best K others stay live. A
    sentence is done when K hypotheses have finished (early stopping, as fairseq) or at its length
    limit, where the live ones are kept as "stopped". Finished hypotheses are ranked by normalised score.
    """

    @torch.inference_mode()
    def __init__(self, model: Transformer, src: Tensor, settings: SearchSettings):
        self.model, self.src, self.settings, self.K = model, src, settings, settings.beam_size
        self.src_lengths = _source_lengths(model, src)
        self.max_new = max_output_lengths(self.src_lengths, settings, model.config.max_len)
        B = src.size(0)
        rows = torch.arange(B, device=src.device).repeat_interleave(self.K)  # (B*K,) sentence of each row
        self.cache = model.start_cache(model.encode(src).memory, src).reorder(rows)
        self.active = list(range(B))  # sentences still searching, in the order of their rows
        self.scores = torch.full((B, self.K), -math.inf, device=src.device)  # cumulative log-probabilities
        self.scores[:, 0] = 0.0  # one live hypothesis, <s>, to start from
        self.log_probs = torch.zeros(B * self.K, 0, device=src.device)  # (A*K, t) per-token history
        self.feed = src.new_full((B * self.K,), BOS_ID)
        self.finished: list[list[Hypothesis]] = [[] for _ in range(B)]

    @property
    def done(self) -> bool:
        return not self.active

    @torch.inference_mode()
    def step(self, record: bool = False) -> dict[int, SearchStep]:
        K, t = self.K, self.log_probs.size(1)
        out = self.model.decode_step(self.feed, self.cache, return_attention=record)
        logp = next_token_log_probs(out.logits)  # (A*K, V)
        A, V = len(self.active), logp.size(-1)
        total = (self.scores.view(-1, 1) + logp).view(A, K * V)  # every continuation of every hypothesis
        top_scores, top_index = total.topk(min(2 * K, K * V), dim=-1)  # (A, 2K), best first
        top_logp = logp.view(A, K * V).gather(1, top_index)
        parents, tokens = (top_index // V).tolist(), (top_index % V).tolist()

        # Each sentence's K slots for the next step: (score, parent row within the sentence, token, log-prob);
        # slots left empty feed </s> and score -inf, so they never produce a real hypothesis.
        slots = [[(-math.inf, 0, EOS_ID, 0.0)] * K for _ in self.active]
        records, keep = {}, []
        for a, b in enumerate(self.active):
            nodes, slot, at_limit = [], 0, t + 1 >= self.max_new[b]
            for rank, (s, lp, p, tok) in enumerate(zip(top_scores[a].tolist(), top_logp[a].tolist(),
                                                       parents[a], tokens[a])):
                if s == -math.inf:
                    break  # continuations of empty slots
                if tok == EOS_ID:
                    status = "finished" if rank < K and len(self.finished[b]) < K else "pruned"
                elif slot < K:
                    status = "stopped" if at_limit else "live"
                else:
                    status = "pruned"
                if status in ("finished", "stopped"):
                    row = a * K + p
                    self.finished[b].append(_hypothesis(out.cache.tokens[row, 1:].tolist() + [tok],
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
            steps.append(_hypothesis_step(out.cache.tokens[row].tolist(), score, logp[row], attention,
                                          self.settings.top_k, self.src_lengths[b]))
        return steps

    def live(self, b: int) -> list[Hypothesis]:
        """The live hypotheses of sentence b while it is still searching, best first."""
        if b not in self.active:
            return []
        a = self.active.index(b)
        rows = [a * self.K + k for k in range(self.K) if self.scores[a, k] > -math.inf]
        return [_hypothesis(self.cache.tokens[row, 1:].tolist() + [int(self.feed[row])], self.log_probs[row].tolist(),
                            False, self.settings) for row in rows]

    def ranked(self, b: int) -> list[Hypothesis]:
        """Every hypothesis of sentence b ended so far, best normalised score first."""
        return sorted(self.finished[b], key=lambda h: h.normalized_score, reverse=True)

    def results(self) -> list[DecodeResult]:
        return [DecodeResult(self.ranked(b)[: self.settings.nbest]) for b in range(len(self.finished))]


# ----------------------------------------------------------------------------- one-shot functions


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
                  use_cache: bool = True) -> list[DecodeResult]:
    """Greedy search for each sentence of src (B, S), right-padded; beam_size and nbest are ignored."""
    return _run(GreedySearch(model, src, settings, use_cache=use_cache), settings.record_steps)


def beam_search(model: Transformer, src: Tensor, settings: SearchSettings = SearchSettings(beam_size=4)
                ) -> list[DecodeResult]:
    """Beam search for each sentence of src (B, S), right-padded: settings.nbest hypotheses each."""
    return _run(BeamSearch(model, src, settings), settings.record_steps)


def search(model: Transformer, src: Tensor, settings: SearchSettings = DEFAULT_SETTINGS) -> list[DecodeResult]:
    """Greedy search when settings.beam_size is 1, beam search otherwise."""
    return greedy_decode(model, src, settings) if settings.beam_size == 1 else beam_search(model, src, settings)

"""Attributions of one output token to the source words and to the target prefix.

The token is output position t of a fixed translation: the decoder reads start + output[:t] and the explained
quantity is f = log p(y_t | x, y_<t) or, contrastively (Yin & Neubig, "Interpreting Language Models with
Contrastive Explanations", EMNLP 2022), f = log p(y_t) - log p(foil), which asks "why y_t rather than the foil".
Their q is the logit: q(y_t) - q(foil) is the same f, the softmax's normaliser cancelling
(tests/explain/test_foil.py); their gradient norm is the L1 norm and their erasure measures probabilities, where ours
are the L2 norm and log-probabilities.
Every method scores the token embeddings e = E[id] * sqrt(D) before the positions are added (Section 3.4):

- saliency (Simonyan et al., 2014): ||df/de||, the L2 norm over D of the gradient at each token;
- input x gradient (Shrikumar et al., 2016): sum_d e_d df/de_d;
- integrated gradients (Sundararajan et al., "Axiomatic Attribution for Deep Networks", ICML 2017, Eq. 3):
  (e - e') . integral_0^1 df(e' + a (e - e'))/de da, by a Riemann sum at the midpoints of `steps` intervals, from
  the baseline e' (zeros, or every token's embedding replaced by the pad token's) for the source and the prefix at
  once.
  Completeness (their Proposition 1): the attributions sum to f(e) - f(e'); `Completeness` reports the gap;
- occlusion (Zeiler & Fergus, 2014): f(x) - f(x with word j's pieces all replaced by <unk>), one word at a time.

Pieces are merged into words as `explain.alignment` merges source columns: a word's score is the sum of its
pieces' scores. The control tokens (</s> closing the source, the start token opening the prefix) are no word; what the
gradient methods give them is kept apart in `special`, so that source + prefix + special is the whole total.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.data.tokenizer import SpecialIds
from transformer.explain.alignment import piece_words
from transformer.explain.occlusion import occluded_rows
from transformer.explain.stream import Inputs, log_probs_from_embeddings, token_embeddings
from transformer.model.layers import Transformer

METHODS = {"saliency": "saliency ‖∇f‖", "input_x_gradient": "input × gradient",
           "integrated_gradients": "integrated gradients", "occlusion": "occlusion (word → <unk>)"}
BASELINES = ("zeros", "pad")
IG_BATCH = 16  # path points per backward pass: memory stays that of 16 passes whatever `steps` is
MAX_IG_STEPS = checks.MAX_STEPS  # integrated gradients' bound when it raises its steps to meet a completeness gap


@dataclass(frozen=True)
class Scores:
    """One method's scores of every word; source + prefix + special sums the method's total."""

    method: str  # a key of METHODS
    source: tuple[float, ...]  # per source word
    prefix: tuple[float, ...]  # per word of the target prefix
    special: float  # </s> of the source and <s> of the prefix (0 for occlusion, which occludes words only)

    @property
    def total(self) -> float:
        return sum(self.source) + sum(self.prefix) + self.special


@dataclass(frozen=True)
class Completeness:
    """Integrated gradients' check: the attributions should sum to f(input) - f(baseline)."""

    f_input: float
    f_baseline: float
    attributed: float  # the sum of every token's attribution
    steps: int

    @property
    def gap(self) -> float:
        return self.attributed - (self.f_input - self.f_baseline)

    @property
    def relative_gap(self) -> float:
        """|gap| / |f(input) - f(baseline)|: 0.01 is a 1% miss."""
        return abs(self.gap) / max(abs(self.f_input - self.f_baseline), 1e-12)


@dataclass(frozen=True)
class TokenAttribution:
    position: int  # t: the output token explained
    target: int  # y_t
    foil: int | None  # the contrast token, or None for f = log p(y_t)
    log_prob: float  # log p(y_t)
    foil_log_prob: float | None
    f: float  # the explained quantity
    source_words: tuple[str, ...]
    prefix_words: tuple[str, ...]
    methods: dict[str, Scores]
    completeness: Completeness | None  # when integrated gradients ran


@dataclass(frozen=True)
class Candidate:
    token: int
    log_prob: float


def word_labels(pieces: Sequence[str]) -> tuple[list[int | None], tuple[str, ...]]:
    """Each piece's word index (None for control tokens) and each word's text (its pieces joined)."""
    index = piece_words(pieces)
    labels: list[str] = []
    for piece, w in zip(pieces, index):
        if w is None:
            continue
        if w == len(labels):
            labels.append("")
        labels[w] += piece.replace("▁", "")
    return index, tuple(labels)


def _merge(piece_scores: Tensor, index: Sequence[int | None], n_words: int) -> tuple[tuple[float, ...], float]:
    """Per-piece scores (L,) -> per-word sums and the control tokens' sum."""
    words, special = [0.0] * n_words, 0.0
    for score, w in zip(piece_scores.tolist(), index):
        if w is None:
            special += score
        else:
            words[w] += score
    return tuple(words), special


@contextlib.contextmanager
def _evaluating(model: Transformer) -> Iterator[None]:
    """Eval mode (no dropout) and gradients on, whatever the caller's mode; the model's mode restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(False), torch.enable_grad():
            yield
    finally:
        model.train(was_training)


def _objective(logp: Tensor, target: int, foil: int | None) -> Tensor:
    """(B, V) log-probabilities -> f (B,)."""
    return logp[:, target] - (logp[:, foil] if foil is not None else 0.0)


def candidates(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int], position: int,
               k: int = 8, *, specials: SpecialIds) -> list[Candidate]:
    """The k most probable tokens at output position `position` given the prefix output[:position] (the foils
    a contrastive question can pick), best first; the ids decoding never emits (specials.never) are never
    candidates."""
    source_ids = checks.source_ids(model, source_ids)
    output_ids = checks.target_ids(model, output_ids, "output_ids")
    position = checks.position(position, "position", len(output_ids))
    k = checks.integer(k, "k", 1, model.config.tgt_vocab_size)
    inputs = Inputs.of(model, list(source_ids), [specials.start, *output_ids[:position]])
    with _evaluating(model), torch.no_grad():
        logp = log_probs_from_embeddings(model, inputs, token_embeddings(model, inputs.src, "src"),
                                         token_embeddings(model, inputs.tgt, "tgt"))[0]
    logp[list(specials.never)] = -torch.inf
    top = logp.topk(min(k, logp.numel() - len(set(specials.never))))
    return [Candidate(int(i), float(v)) for v, i in zip(top.values, top.indices)]


def attribute(model: Transformer, tokenizer, source_ids: Sequence[int], output_ids: Sequence[int], position: int,
              *, foil: int | None = None, steps: int = 50, baseline: str = "zeros",
              methods: Sequence[str] = tuple(METHODS), target_gap: float | None = None,
              max_steps: int = MAX_IG_STEPS) -> TokenAttribution:
    """Attribute output token `position` of output_ids (the translation of source_ids) with each of `methods`.

    Integrated gradients runs `steps` path points; with target_gap (0.05: 5%) it doubles them until its
    completeness gap is under target_gap or max_steps is reached (`completeness.steps`: the steps used). The inputs
    are bounded as one app request is (`checks.MAX_SOURCE_TOKENS`, `checks.MAX_OUTPUT_TOKENS`), the steps by
    `checks.MAX_STEPS`."""
    source_ids = checks.source_ids(model, source_ids, limit=checks.MAX_SOURCE_TOKENS)
    output_ids = checks.target_ids(model, output_ids, "output_ids", limit=checks.MAX_OUTPUT_TOKENS)
    position = checks.position(position, "position", len(output_ids))
    foil = None if foil is None else checks.target_token(model, foil, "foil")
    steps = checks.integer(steps, "steps", 1, checks.MAX_STEPS)
    max_steps = checks.integer(max_steps, "max_steps", steps, checks.MAX_STEPS)
    if target_gap is not None and not (isinstance(target_gap, (int, float)) and 0 < target_gap < 1):
        raise ValueError(f"target_gap must be a number in (0, 1) or None, got {target_gap!r}")
    if isinstance(methods, str) or set(methods) - set(METHODS):
        raise ValueError(f"methods must be a list of {', '.join(METHODS)}; got {methods!r}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    target, specials = int(output_ids[position]), tokenizer.specials
    decoder_input = [specials.start, *output_ids[:position]]
    src_index, src_words = word_labels(tokenizer.source_pieces(source_ids))
    tgt_index, tgt_words = word_labels(tokenizer.target_pieces(decoder_input))
    inputs = Inputs.of(model, list(source_ids), decoder_input)
    results: dict[str, Scores] = {}
    completeness = None

    def scores(method: str, src: Tensor, tgt: Tensor) -> Scores:
        source, special_src = _merge(src, src_index, len(src_words))
        prefix, special_tgt = _merge(tgt, tgt_index, len(tgt_words))
        return Scores(method, source, prefix, special_src + special_tgt)

    with _evaluating(model):
        e_src = token_embeddings(model, inputs.src, "src").detach()  # (1, S, D)
        e_tgt = token_embeddings(model, inputs.tgt, "tgt").detach()  # (1, T, D)
        with torch.no_grad():
            logp = log_probs_from_embeddings(model, inputs, e_src, e_tgt)  # (1, V)
        f_input = float(_objective(logp, target, foil)[0])
        if {"saliency", "input_x_gradient"} & set(methods):
            g_src, g_tgt = _gradients(model, inputs, e_src, e_tgt, target, foil)
            if "saliency" in methods:
                results["saliency"] = scores("saliency", g_src.norm(dim=-1)[0], g_tgt.norm(dim=-1)[0])
            if "input_x_gradient" in methods:
                results["input_x_gradient"] = scores("input_x_gradient", (e_src * g_src).sum(-1)[0],
                                                     (e_tgt * g_tgt).sum(-1)[0])
        if "integrated_gradients" in methods:
            while True:  # with target_gap: twice the steps until the attributions sum to f within it, or max_steps
                src_ig, tgt_ig, completeness = _integrated_gradients(model, inputs, e_src, e_tgt, target, foil, steps,
                                                                     baseline, f_input, specials.pad)
                if target_gap is None or completeness.relative_gap < target_gap or steps >= max_steps:
                    break
                steps = min(2 * steps, max_steps)
            results["integrated_gradients"] = scores("integrated_gradients", src_ig, tgt_ig)
        if "occlusion" in methods:
            with torch.no_grad():
                src_drop = _occlusion(model, inputs, "src", src_index, len(src_words), target, foil, f_input,
                                      specials.unk)
                tgt_drop = _occlusion(model, inputs, "tgt", tgt_index, len(tgt_words), target, foil, f_input,
                                      specials.unk)
            results["occlusion"] = Scores("occlusion", src_drop, tgt_drop, 0.0)
    return TokenAttribution(position, target, foil, float(logp[0, target]),
                            float(logp[0, foil]) if foil is not None else None, f_input, src_words, tgt_words,
                            {m: results[m] for m in methods}, completeness)


def _gradients(model, inputs: Inputs, e_src: Tensor, e_tgt: Tensor, target: int, foil: int | None,
               ) -> tuple[Tensor, Tensor]:
    """df/de at the input: (B, S, D) and (B, T, D)."""
    e_src, e_tgt = e_src.clone().requires_grad_(True), e_tgt.clone().requires_grad_(True)
    f = _objective(log_probs_from_embeddings(model, inputs, e_src, e_tgt), target, foil).sum()
    g_src, g_tgt = torch.autograd.grad(f, [e_src, e_tgt])
    return g_src, g_tgt


def _integrated_gradients(model, inputs: Inputs, e_src: Tensor, e_tgt: Tensor, target: int, foil: int | None,
                          steps: int, baseline: str, f_input: float, pad_id: int
                          ) -> tuple[Tensor, Tensor, Completeness]:
    """Per-token IG (S,) and (T,), and the completeness check, the `steps` path points IG_BATCH at a time."""
    if baseline == "pad":
        b_src = token_embeddings(model, torch.full_like(inputs.src, pad_id), "src").detach()
        b_tgt = token_embeddings(model, torch.full_like(inputs.tgt, pad_id), "tgt").detach()
    else:
        b_src, b_tgt = torch.zeros_like(e_src), torch.zeros_like(e_tgt)
    alphas = ((torch.arange(steps, dtype=e_src.dtype, device=e_src.device) + 0.5) / steps)[:, None, None]  # (m, 1, 1)
    sum_src, sum_tgt = torch.zeros_like(e_src[0]), torch.zeros_like(e_tgt[0])  # (S, D), (T, D)
    for chunk in alphas.split(IG_BATCH):  # (b, 1, 1) each
        path_src = b_src + chunk * (e_src - b_src)  # (b, S, D)
        path_tgt = b_tgt + chunk * (e_tgt - b_tgt)  # (b, T, D)
        g_src, g_tgt = _gradients(model, inputs, path_src, path_tgt, target, foil)  # (b, S, D), (b, T, D)
        sum_src += g_src.sum(0)
        sum_tgt += g_tgt.sum(0)
    src_ig = ((e_src - b_src)[0] * sum_src / steps).sum(-1)  # (S,)
    tgt_ig = ((e_tgt - b_tgt)[0] * sum_tgt / steps).sum(-1)  # (T,)
    with torch.no_grad():
        f_baseline = float(_objective(log_probs_from_embeddings(model, inputs, b_src, b_tgt), target, foil)[0])
    attributed = float(src_ig.sum() + tgt_ig.sum())
    return src_ig.detach(), tgt_ig.detach(), Completeness(f_input, f_baseline, attributed, steps)


def _occlusion(model, inputs: Inputs, side: str, index: Sequence[int | None], n_words: int, target: int,
               foil: int | None, f_input: float, unk_id: int) -> tuple[float, ...]:
    """f(x) - f(x with every piece of word j as <unk>) for each word j of one side, all words in one batch."""
    if n_words == 0:
        return ()
    occluded = occluded_rows(inputs.src if side == "src" else inputs.tgt, index, unk_id)  # (W, L): row j, word j
    e_src = token_embeddings(model, occluded if side == "src" else inputs.src, "src")
    e_tgt = token_embeddings(model, occluded if side == "tgt" else inputs.tgt, "tgt")
    e_src, e_tgt = e_src.expand(n_words, -1, -1), e_tgt.expand(n_words, -1, -1)  # (W, S, D), (W, T, D)
    f = _objective(log_probs_from_embeddings(model, inputs, e_src, e_tgt), target, foil)  # (W,)
    return tuple(f_input - v for v in f.tolist())

"""One output token through the whole model, from the embedding to the softmax, with the model's own numbers
(in the manner of Transformer Explainer, Cho et al., IEEE VIS 2024, for an encoder-decoder).

For one output position of a translation (source ids, decoder input ids, the position whose next token is
predicted) `token_flow` returns every stage as typed values: the followed source piece's embedding x sqrt(D) +
positional encoding (Sections 3.4, 3.5) and each encoder sublayer (Figure 1: self-attention, feed-forward, each
with its layer norm and residual add, in the model's pre-LN or post-LN order), the encoder's final norm (the
memory), then the decoder input piece's embedding and each decoder sublayer (masked self-attention,
cross-attention to the memory, feed-forward), the final norm, the logits of the top candidates and the softmax
at any temperature, computed as sampling computes it (`transformer.decoding.sampling`).

Each stage is recomputed from the model's own modules (its embedding, norms, attention and feed-forward), so a
model option those modules carry (an activation, an embedding scale, a layer norm epsilon) is followed; the
tests compare every stage with the model's forward pass. Also per stage: what the sublayer adds to the residual
stream (its norm, and its share of the final vector: in a pre-LN model the embedding and the sublayer outputs sum
to it exactly, so the shares sum to 1), and for a feed-forward the neurons that fire most (`neuron_examples`:
the pieces of some sentences that fire them most).

Shapes: S source length, T decoder input length, D d_model, F d_ff, H heads, V target vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

import transformer.explain.checks as checks
from transformer.data.vocabulary import SpecialIds
from transformer.decoding.results import next_token_log_probs
from transformer.decoding.sampling import draw, sample_generator, tempered, uniforms
from transformer.decoding.translate import Translation
from transformer.explain.stream import Inputs, next_token_logits
from transformer.model.layers import Transformer

TEMPERATURES = tuple(round(0.05 * i, 2) for i in range(1, 61))  # the app's sampling slider: 0.05 to 3.0


@dataclass(frozen=True)
class Vector:
    """One vector of a stage at the followed position, with the equation that made it."""

    name: str  # "LayerNorm(x)", "self-attention output", ...
    equation: str
    values: Tensor  # (D,)


@dataclass(frozen=True)
class Neuron:
    index: int  # 0 .. F-1
    activation: float  # act(W_1 h + b_1) at this neuron
    contribution: float  # the norm of what it adds to the output: |activation x W_2[:, index]|


@dataclass(frozen=True)
class Stage:
    """One step of the flow: an embedding, a sublayer with its norm and residual add, or a final norm."""

    key: str  # "src.embed", "enc.0.self_attn", ..., "memory", "tgt.embed", "dec.1.cross_attn", "final_norm"
    title: str
    side: str  # "source" (the followed source piece) or "target" (the followed decoder position)
    layer: int | None  # None: an embedding or a final norm
    vectors: tuple[Vector, ...]  # in the order computed; the last is the residual stream after the stage
    added: Tensor | None  # (D,) what the stage adds to the residual stream (an embedding: all of it)
    added_norm: float  # |added|, 0 for a final norm
    share: float  # <added, final> / |final|^2: its share of the stack's last residual stream (pre-LN: sums to 1)
    attention: Tensor | None = None  # (H, L_k) each head's weights of the followed query (attention stages)
    keys: tuple[int, ...] = ()  # the attended token ids: the source (cross, encoder self) or the decoder input
    neurons: tuple[Neuron, ...] = ()  # feed-forward: the neurons that fire most, highest first

    @property
    def stream(self) -> Tensor:
        return self.vectors[-1].values


@dataclass(frozen=True)
class Candidate:
    token: int
    logit: float  # h . W_out[token] (+ the logits' bias, if the model has one)
    log_prob: float  # the model's, as decoding scores it


@dataclass(frozen=True)
class Output:
    """The last stage: the final state, the logits and the next-token distribution."""

    state: Tensor  # (D,) the decoder's last vector after the final norm (the output projection's input)
    logits: Tensor  # (V,)
    log_probs: Tensor  # (V,) float32: log_softmax with specials.never at -inf (as every search)
    candidates: tuple[Candidate, ...]  # the most probable tokens decoding may emit, most probable first
    position: int  # the decoding step: how many draws a sample took before this one

    @property
    def greedy(self) -> int:
        """The token greedy search takes: the most probable (ties: the lower id, as torch.argmax)."""
        return int(self.log_probs.argmax())

    def probabilities(self, temperature: float) -> Tensor:
        """(V,) float64 softmax(log p / temperature): what sampling at this temperature draws from (no top-k/p)."""
        if not 0 < temperature <= 100:
            raise ValueError(f"temperature must be above 0 and at most 100, got {temperature}")
        return tempered(self.log_probs[None], float(temperature))[0]

    def sampled(self, temperature: float, seed: int = 0) -> int:
        """The token `Translator` sampling (num_samples 1, no top-k/p, this seed) draws here when the earlier
        tokens of its sample were the decoder input's: each step takes the sample's next uniform number."""
        generator = sample_generator(seed, 0)
        for _ in range(self.position):
            uniforms([generator])
        return int(draw(self.probabilities(temperature)[None], uniforms([generator]))[0])


@dataclass(frozen=True)
class TokenFlow:
    source_ids: tuple[int, ...]
    decoder_input: tuple[int, ...]  # the start token + the output so far
    position: int  # the followed decoder position: it predicts output token `position`
    source_position: int  # the followed source piece (default: the one the last layer cross-attends to most)
    norm_first: bool  # pre-LN (the shares of a stack sum to 1) or the paper's post-LN
    stages: tuple[Stage, ...]
    output: Output

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(s.key for s in self.stages) + ("output",)

    def stage(self, key: str) -> Stage:
        for s in self.stages:
            if s.key == key:
                return s
        raise ValueError(f"stage must be one of {', '.join(self.keys[:-1])}; got {key!r}")


# ----------------------------------------------------------------------------- the model's computation, whole sequences


@dataclass(frozen=True)
class _Sub:
    """One sublayer over every position: (L, D) tensors, attention (H, L, L_k), feed-forward hidden (L, F)."""

    kind: str  # "self_attn", "cross_attn", "feed_forward"
    x: Tensor  # the stream entering
    h: Tensor  # what the sublayer reads: LayerNorm(x) (pre-LN) or x (post-LN)
    out: Tensor  # its output
    add: Tensor  # x + out
    after: Tensor  # the stream leaving: x + out (pre-LN) or LayerNorm(x + out) (post-LN)
    weights: Tensor | None = None
    hidden: Tensor | None = None


@dataclass(frozen=True)
class _Trace:
    src_embed: Tensor  # (S, D) the embedding with positions
    encoder: tuple[tuple[_Sub, ...], ...]  # per layer
    memory: Tensor  # (S, D)
    tgt_embed: Tensor  # (T, D)
    decoder: tuple[tuple[_Sub, ...], ...]
    final: Tensor  # (T, D) after the decoder's final norm
    logits: Tensor  # (T, V)


def _sublayer(sub: nn.Module, x: Tensor, kind: str, run) -> _Sub:
    """The model's Sublayer around `run` (h -> (out, weights, hidden)), as EncoderLayer and DecoderLayer call it."""
    h = sub.input(x)
    out, weights, hidden = run(h)
    return _Sub(kind, x[0], h[0], out[0], (x + out)[0], sub(x, out)[0], weights, hidden)


def _layer(layer: nn.Module, x: Tensor, runs) -> tuple[tuple[_Sub, ...], Tensor]:
    """One encoder or decoder layer: its sublayers in order, each reading the stream the one before left."""
    subs = []
    for sub, (kind, run) in zip(layer.sublayers, runs):
        subs.append(_sublayer(sub, x, kind, run))
        x = subs[-1].after[None]  # (1, L, D)
    return tuple(subs), x


def _feed_forward(ff: nn.Module):
    def run(h: Tensor):
        return ff(h), None, ff.activation(ff.w_1(h))[0]  # hidden (L, F): what w_2 mixes
    return run


def _self_attention(attn: nn.Module, mask: Tensor):
    def run(h: Tensor):
        q, k, v = attn.project_qkv(h)  # (1, H, L, Dh) each
        out, weights = attn.attend(q, (k, v), mask, need_weights=True)
        return out, weights[0], None
    return run


def _cross_attention(attn: nn.Module, memory: Tensor, mask: Tensor):
    def run(h: Tensor):
        out, weights = attn(h, attn.project_kv(memory), mask, need_weights=True)
        return out, weights[0], None
    return run


def _trace(model: Transformer, source_ids: list[int], decoder_input: list[int]) -> _Trace:
    """Every sublayer of one teacher-forced pass, run through the model's own modules in the model's order."""
    inputs = Inputs.of(model, source_ids, decoder_input)
    pad_id = model.config.pad_id
    src_mask, tgt_mask = inputs.src_mask(pad_id), inputs.tgt_mask(pad_id)
    x = src_embed = model.src_embed(inputs.src)  # (1, S, D)
    encoder = []
    for layer in model.encoder_layers:
        subs, x = _layer(layer, x, [("self_attn", _self_attention(layer.self_attn, src_mask)),
                                    ("feed_forward", _feed_forward(layer.feed_forward))])
        encoder.append(subs)
    memory = model.encoder_norm(x)  # (1, S, D)
    y = tgt_embed = model.tgt_embed(inputs.tgt)  # (1, T, D)
    decoder = []
    for layer in model.decoder_layers:
        subs, y = _layer(layer, y, [("self_attn", _self_attention(layer.self_attn, tgt_mask)),
                                    ("cross_attn", _cross_attention(layer.cross_attn, memory, src_mask)),
                                    ("feed_forward", _feed_forward(layer.feed_forward))])
        decoder.append(subs)
    final = model.decoder_norm(y)
    logits = next_token_logits(model, y)  # (1, T, V): the final norm and the output projection, as the model
    return _Trace(src_embed[0], tuple(encoder), memory[0], tgt_embed[0], tuple(decoder), final[0], logits[0])


# ----------------------------------------------------------------------------- one token's stages

NAMES = {"self_attn": "self-attention", "cross_attn": "cross-attention", "feed_forward": "feed-forward"}


def _equation(model: Transformer, kind: str, side: str, h: str) -> str:
    """The sublayer's output as the view prints it; h names its input."""
    if kind == "feed_forward":
        return f"W₂ {model.config.activation}(W₁ {h} + b₁) + b₂  (Eq. 2)"
    if kind == "cross_attn":
        return f"MultiHead({h}, memory, memory) = Concat(head₁…head_H) Wᴼ"
    masked = "causal " if side == "target" else ""
    return f"MultiHead({h}, {h}, {h}) = Concat(head₁…head_H) Wᴼ, {masked}Eq. 1 per head"


def _stage(model: Transformer, sub: _Sub, side: str, layer: int, pos: int, final: Tensor, keys: Sequence[int],
           n_neurons: int) -> Stage:
    name = NAMES[sub.kind]
    if model.config.norm_first:
        vectors = (Vector("h = LayerNorm(x)", "h = γ ⊙ (x − mean) / √(var + ε) + β", sub.h[pos]),
                   Vector(f"a = {name}(h)", _equation(model, sub.kind, side, "h"), sub.out[pos]),
                   Vector("x ← x + a", "the residual add: the stream plus what the sublayer adds", sub.after[pos]))
    else:
        vectors = (Vector(f"a = {name}(x)", _equation(model, sub.kind, side, "x"), sub.out[pos]),
                   Vector("y = x + a", "the residual add: the stream plus what the sublayer adds", sub.add[pos]),
                   Vector("x ← LayerNorm(y)", "x ← γ ⊙ (y − mean) / √(var + ε) + β", sub.after[pos]))
    added = sub.out[pos]
    neurons: tuple[Neuron, ...] = ()
    if sub.hidden is not None:
        hidden = sub.hidden[pos]  # (F,)
        w_2 = (model.encoder_layers if side == "source" else model.decoder_layers)[layer].feed_forward.w_2.weight
        top = hidden.topk(min(n_neurons, hidden.numel())).indices.tolist()
        neurons = tuple(Neuron(i, float(hidden[i]), float((hidden[i] * w_2[:, i]).norm())) for i in top)
    prefix = "enc" if side == "source" else "dec"
    stack = "Encoder" if side == "source" else "Decoder"
    return Stage(f"{prefix}.{layer}.{sub.kind}", f"{stack} layer {layer}: {name}", side, layer, vectors, added,
                 float(added.norm()), _share(added, final), None if sub.weights is None else sub.weights[:, pos],
                 tuple(keys) if sub.weights is not None else (), neurons)


def _share(added: Tensor, final: Tensor) -> float:
    return float(added @ final / final.dot(final).clamp_min(1e-30))


def _embedding_stage(model: Transformer, side: str, ids: Sequence[int], pos: int, x: Tensor, final: Tensor) -> Stage:
    embed = model.src_embed if side == "source" else model.tgt_embed
    token = embed.tokens.weight[ids[pos]] * embed.scale  # (D,)
    scale = f" · √{model.config.d_model}" if embed.scale != 1 else ""
    learned, normed = model.config.learned_positions, model.config.embedding_norm
    vectors = (Vector(f"E[piece]{scale}", f"row {ids[pos]} of the embedding matrix{scale} (Section 3.4)", token),
               Vector(f"PE({pos})", f"row {embed.offset + pos} of the learned position table" if learned else
                      "sin and cos of pos / 10000^(2i/d) (Section 3.5)", embed.positions(pos, 1)[0]),
               Vector("x = LayerNorm(E[piece] + PE)" if normed else "x = E[piece] + PE",
                      f"the residual stream entering layer 0{scale and ' (E scaled)'}", x[pos]))
    key, title = ("src.embed", "Source piece: embedding + position") if side == "source" else (
        "tgt.embed", "Decoder input piece: embedding + position")
    return Stage(key, title, side, None, vectors, x[pos], float(x[pos].norm()), _share(x[pos], final))


@torch.inference_mode()
def token_flow(model: Transformer, source_ids: Sequence[int], decoder_input: Sequence[int], position: int, *,
               specials: SpecialIds, source_position: int | None = None, top_k: int = 10,
               top_neurons: int = 5) -> TokenFlow:
    """Every stage of predicting the token after decoder_input[position] (decoder_input: the start token + the output
    so far), following source piece `source_position` through the encoder (default: the piece the last decoder
    layer's heads, averaged, cross-attend to most from this position). specials: the tokenizer's; its `never` ids
    get probability 0, as in every search."""
    source_ids = checks.source_ids(model, source_ids)
    decoder_input = checks.target_ids(model, decoder_input, "decoder_input")
    position = checks.position(position, "position", len(decoder_input))
    top_k = checks.integer(top_k, "top_k", 1, model.config.tgt_vocab_size)
    top_neurons = checks.integer(top_neurons, "top_neurons", 1, model.config.d_ff)
    was_training = model.training
    model.eval()
    try:
        trace = _trace(model, source_ids, decoder_input)
    finally:
        model.train(was_training)
    if source_position is None:
        cross = trace.decoder[-1][1].weights if trace.decoder else None  # (H, T, S)
        source_position = int(cross[:, position].mean(0).argmax()) if cross is not None else 0
    s = checks.position(source_position, "source_position", len(source_ids))
    enc_final = trace.encoder[-1][-1].after[s] if trace.encoder else trace.src_embed[s]
    dec_final = trace.decoder[-1][-1].after[position] if trace.decoder else trace.tgt_embed[position]
    stages = [_embedding_stage(model, "source", source_ids, s, trace.src_embed, enc_final)]
    for i, subs in enumerate(trace.encoder):
        stages += [_stage(model, sub, "source", i, s, enc_final, source_ids, top_neurons) for sub in subs]
    if not isinstance(model.encoder_norm, nn.Identity):
        stages.append(Stage("memory", "The encoder's final norm: the memory", "source", None,
                            (Vector("memory = LayerNorm(x)", "what every cross-attention reads",
                                    trace.memory[s]),), None, 0.0, 0.0))
    stages.append(_embedding_stage(model, "target", decoder_input, position, trace.tgt_embed, dec_final))
    for i, subs in enumerate(trace.decoder):
        stages += [_stage(model, sub, "target", i, position, dec_final,
                          decoder_input if sub.kind == "self_attn" else source_ids, top_neurons) for sub in subs]
    if not isinstance(model.decoder_norm, nn.Identity):
        stages.append(Stage("final_norm", "The decoder's final norm", "target", None,
                            (Vector("h = LayerNorm(y)", "the output projection's input", trace.final[position]),),
                            None, 0.0, 0.0))
    logits = trace.logits[position]
    log_probs = next_token_log_probs(logits[None], specials)[0]
    top = log_probs.topk(top_k).indices.tolist()  # the ids decoding never emits are -inf: last
    candidates = tuple(Candidate(t, float(logits[t]), float(log_probs[t])) for t in top if log_probs[t] > -math.inf)
    output = Output(trace.final[position], logits, log_probs, candidates, position)
    return TokenFlow(tuple(source_ids), tuple(decoder_input), position, s, model.config.norm_first, tuple(stages),
                     output)


def translation_inputs(translation: Translation, specials: SpecialIds) -> tuple[list[int], list[int]]:
    """(source ids, decoder input) of a `Translator` translation: the decoder read the start token (<s>, or pad for
    Marian) and the output but its last token, so that position t predicts output token t."""
    return list(translation.source_ids), [specials.start, *translation.token_ids[:-1]]


# ----------------------------------------------------------------------------- neurons across sentences


@dataclass(frozen=True)
class Firing:
    sentence: int  # index into the sentences given
    position: int
    token: int  # the piece at that position (a source piece, or the decoder input piece)
    activation: float


@dataclass(frozen=True)
class NeuronExamples:
    side: str
    layer: int
    neuron: int
    firings: tuple[Firing, ...]  # the highest activations, highest first


@torch.inference_mode()
def neuron_examples(model: Transformer, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], side: str, layer: int,
                    neurons: Sequence[int], k: int = 3) -> tuple[NeuronExamples, ...]:
    """For each feed-forward neuron of (side "source" or "target", layer): the k pieces of `pairs` (source ids,
    decoder input ids) at which it fires most."""
    if side not in ("source", "target"):
        raise ValueError(f"side must be 'source' or 'target', got {side!r}")
    n_layers = len(model.encoder_layers if side == "source" else model.decoder_layers)
    layer = checks.layer_index(layer, "layer", n_layers)
    neurons = checks.indices(neurons, "neurons", model.config.d_ff) or []
    k = checks.integer(k, "k", 1, 100)
    found: dict[int, list[Firing]] = {n: [] for n in neurons}
    was_training = model.training
    model.eval()
    try:
        for i, (src, tgt) in enumerate(pairs):
            src = checks.source_ids(model, src, f"pairs[{i}] source")
            tgt = checks.target_ids(model, tgt, f"pairs[{i}] decoder input")
            trace = _trace(model, src, tgt)
            hidden = (trace.encoder if side == "source" else trace.decoder)[layer][-1].hidden  # (L, F)
            ids = src if side == "source" else tgt
            for n in neurons:
                found[n] += [Firing(i, p, ids[p], float(a)) for p, a in enumerate(hidden[:, n].tolist())]
    finally:
        model.train(was_training)
    return tuple(NeuronExamples(side, layer, n, tuple(sorted(found[n], key=lambda f: -f.activation)[:k]))
                 for n in neurons)

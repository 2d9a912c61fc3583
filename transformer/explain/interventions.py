"""What-if versions of a trained model, and teacher-forced passes that can drop the causal mask.

An `Intervention` is applied to a copy of the model by editing the copy's weights, so that every decoding path
(greedy, beam, step-through, KV cache, fused attention) runs it unchanged, and the shared model that other
requests decode with is never touched:

- a head switched off: the columns of its layer's output projection W^O that read that head are zero. W^O
  concatenates the heads (Section 3.2.2, MultiHead = Concat(head_1..head_h) W^O), so this removes exactly that
  head's contribution and keeps W^O's bias, as `MultiHeadAttention.attend(head_mask=...)` with a 0 does;
- no positional encodings: the copy's sinusoid table (Section 3.5) is zero;
- a temperature tau: W^Q and its bias are divided by tau, so every logit q . k / sqrt(d_k) is divided by tau
  (tau > 1 flattens every attention row, tau < 1 sharpens it).

The causal mask is not a weight: `teacher_forced(..., causal=False)` runs the decoder over a fixed output with
each query free to read every position, the later ones included. Decoding one token at a time needs no
switch: nothing later exists yet.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

import transformer.explain.checks as checks
from transformer.data.tokenizer import SpecialIds
from transformer.decoding.search import next_token_log_probs
from transformer.decoding.translate import Translator
from transformer.model.layers import MultiHeadAttention, Transformer, padding_mask, subsequent_mask, target_padding_mask

FAMILIES = ("enc_self", "dec_self", "cross")
Head = tuple[str, int, int]  # (family, layer, head)


@dataclass(frozen=True)
class Intervention:
    """What to change in the model; the default changes nothing. Hashable, so it can key a cache."""

    heads_off: frozenset[Head] = frozenset()  # heads whose output is zeroed
    positions: bool = True  # False: no positional encodings in either embedding
    temperature: float = 1.0  # every attention logit is divided by it

    def __post_init__(self) -> None:
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, numbers.Real) \
                or not self.temperature > 0:
            raise ValueError(f"temperature must be a positive number, got {self.temperature!r}")
        object.__setattr__(self, "heads_off", frozenset(self.heads_off))
        for family, layer, head in self.heads_off:
            if family not in FAMILIES:
                raise ValueError(f"not a head: {(family, layer, head)}; family is one of {', '.join(FAMILIES)}")
            checks.integer(layer, f"the layer of head {(family, layer, head)}", 0)
            checks.integer(head, f"the head of {(family, layer, head)}", 0)

    @property
    def identity(self) -> bool:
        return not self.heads_off and self.positions and self.temperature == 1.0

    def check(self, model: Transformer) -> None:
        """ValueError naming a head the model does not have."""
        config = model.config
        layers = {"enc_self": config.n_encoder_layers, "dec_self": config.n_decoder_layers,
                  "cross": config.n_decoder_layers}
        for family, layer, head in sorted(self.heads_off):
            if layer >= layers[family] or head >= config.n_heads:
                raise ValueError(f"the model has no {family} layer {layer} head {head} ({layers[family]} layers of "
                                 f"{config.n_heads} heads)")

    def describe(self) -> str:
        """One line for a caption: "2 heads off, no positions, temperature 2"."""
        parts = []
        if self.heads_off:
            parts.append(f"{len(self.heads_off)} head{'s' if len(self.heads_off) > 1 else ''} off")
        if not self.positions:
            parts.append("no positional encodings")
        if self.temperature != 1.0:
            parts.append(f"attention temperature {self.temperature:g}")
        return ", ".join(parts) or "the unmodified model"


NO_CHANGE = Intervention()


def every_head(model: Transformer) -> list[Head]:
    """Every (family, layer, head) of the model, encoder first."""
    config = model.config
    layers = {"enc_self": config.n_encoder_layers, "dec_self": config.n_decoder_layers,
              "cross": config.n_decoder_layers}
    return [(f, layer, h) for f in FAMILIES for layer in range(layers[f]) for h in range(config.n_heads)]


def attention_module(model: Transformer, family: str, layer: int) -> MultiHeadAttention:
    if family == "enc_self":
        return model.encoder_layers[layer].self_attn
    decoder_layer = model.decoder_layers[layer]
    return decoder_layer.self_attn if family == "dec_self" else decoder_layer.cross_attn


def head_columns(model: Transformer, head: int) -> slice:
    """The columns of W^O (its inputs) that read one head's output: head * Dh .. (head + 1) * Dh."""
    d_head = model.config.d_head
    return slice(head * d_head, (head + 1) * d_head)


@torch.no_grad()
def intervened(model: Transformer, intervention: Intervention) -> Transformer:
    """A copy of model (in eval mode) changed by the intervention; the model itself when it changes nothing."""
    if intervention.identity:
        return model
    intervention.check(model)
    changed = copy.deepcopy(model).eval()
    for family, layer, head in intervention.heads_off:
        attention_module(changed, family, layer).w_o.weight[:, head_columns(changed, head)] = 0.0
    if not intervention.positions:
        for embed in {changed.src_embed, changed.tgt_embed}:  # one module when the embeddings are shared
            embed.pe.zero_()
    if intervention.temperature != 1.0:
        for family, layer, _ in {(f, layer, 0) for f, layer, _ in every_head(changed)}:
            w_q = attention_module(changed, family, layer).w_q
            w_q.weight.div_(intervention.temperature)
            w_q.bias.div_(intervention.temperature)
    return changed


def intervened_translator(translator: Translator, intervention: Intervention) -> Translator:
    """A Translator over the changed copy: translate, translate_batch and session (greedy, beam, step-through)
    all decode with the intervention."""
    if intervention.identity:
        return translator
    checkpoint = dataclasses.replace(translator.checkpoint, model=intervened(translator.model, intervention))
    return Translator(checkpoint, batch_size=translator.batch_size)


# ----------------------------------------------------------------------------- teacher-forced passes


@dataclass
class TeacherForced:
    """One source and one fixed output read by the decoder at once (the output shifted right, <s> first)."""

    log_probs: Tensor  # (T,) log-probability of each output token
    predicted: list[int]  # (T,) the most probable token at each position, given the fixed prefix
    enc_self: list[Tensor]  # n_encoder_layers x (H, S, S)
    dec_self: list[Tensor]  # n_decoder_layers x (H, T, T)
    cross: list[Tensor]  # n_decoder_layers x (H, T, S)

    @property
    def score(self) -> float:
        """Total log-probability of the output."""
        return float(self.log_probs.sum())


@torch.inference_mode()
def teacher_forced(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int], *,
                   specials: SpecialIds, causal: bool = True) -> TeacherForced:
    """Score output_ids (ending with </s>, as decoding returns them) as the translation of source_ids: the decoder
    reads specials.start + output_ids[:-1], and the scores rule out specials.never as decoding does.

    causal=False drops the causal mask: decoder query t may then read the tokens after position t, which it
    never could in training; its row of decoder self-attention shows how much it takes from them.
    """
    source_ids = checks.source_ids(model, source_ids)
    output_ids = checks.target_ids(model, output_ids, "output_ids")
    device = next(model.parameters()).device
    src = torch.tensor([list(source_ids)], device=device)  # (1, S)
    tgt = torch.tensor([[specials.start, *output_ids[:-1]]], device=device)  # (1, T)
    if causal:
        out = model(src, tgt, return_attention=True)
        logits, maps = out.logits, out.attention
        enc_self, dec_self, cross = maps.enc_self, maps.dec_self, maps.cross
    else:
        enc = model.encode(src, return_attention=True)
        src_mask = padding_mask(src, model.config.pad_id)  # (1, 1, 1, S)
        tgt_mask = target_padding_mask(tgt, model.config.pad_id)  # (1, 1, 1, T): every query sees every position
        x, dec_self, cross = model.tgt_embed(tgt), [], []
        for layer in model.decoder_layers:
            x, _, self_w, cross_w = layer(x, None, layer.cross_attn.project_kv(enc.memory), tgt_mask, src_mask, True)
            dec_self.append(self_w)
            cross.append(cross_w)
        logits = model.logits(model.decoder_norm(x))  # (1, T, V)
        enc_self = enc.attention
    logp = next_token_log_probs(logits[0], specials)  # (T, V), the scores decoding gives
    target = torch.tensor(list(output_ids), device=device)
    return TeacherForced(logp.gather(1, target[:, None])[:, 0].cpu(), logp.argmax(-1).tolist(),
                         [w[0].cpu() for w in enc_self], [w[0].cpu() for w in dec_self], [w[0].cpu() for w in cross])


def causal_mask_rows(length: int) -> Tensor:
    """(T, T) True where the causal mask lets a decoder query read a key: what `causal=False` lifts."""
    return subsequent_mask(length)[0, 0]


def changed_tokens(before: Sequence[str], after: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """Which tokens of each sequence are not part of their longest matching blocks (difflib): replaced,
    inserted or deleted."""
    marks_before, marks_after = [True] * len(before), [True] * len(after)
    for block in difflib.SequenceMatcher(a=list(before), b=list(after), autojunk=False).get_matching_blocks():
        for i in range(block.size):
            marks_before[block.a + i] = marks_after[block.b + i] = False
    return marks_before, marks_after


def shared_prefix(a: Iterable[int], b: Iterable[int]) -> int:
    """The number of leading tokens two outputs share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n

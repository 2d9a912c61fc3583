"""Activation patching on a counterfactual source pair: which activations carry what the output depends on.

Two runs translate a clean source and a counterfactual one of the same token length (a noun swapped for one of
the other gender, say) with the same target prefix. One activation of the clean run is copied into the
counterfactual run, everything downstream is recomputed, and the effect is the change in the log-probability of
a chosen target token: log p_patched(y) - log p_counterfactual(y) (Vig et al., "Investigating Gender Bias in
Language Models Using Causal Mediation Analysis", NeurIPS 2020; Meng et al., "Locating and Editing Factual
Associations in GPT", NeurIPS 2022, call it causal tracing; TransformerLens calls it activation patching). A
large positive effect at (layer, position) says that the clean run's state there alone restores much of the
clean prediction. With a foil token, the measure is contrastive (Yin & Neubig, EMNLP 2022): log p(y) - log p(foil),
the log of Vig et al.'s own measure, a ratio of two words' probabilities, and the effect says how much the patch moves
the model towards y rather than the foil (`explain.foil` turns a typed word into its first piece). Meng et al. measure
p(y) itself, and corrupt the subject's embeddings with noise where we swap a word. Two kinds of activation:

- the encoder's residual stream entering layer l (l = 0: the embeddings with positions; the last row: the
  encoder's output before its final norm) at one source position, by a functional re-run from layer l;
- one head's output before W^O (the head's slice of the concatenation, Section 3.2.2) at every query position,
  for encoder self-attention, decoder self-attention and cross-attention, through a view of the model whose W^O
  of that layer first copies the head's slice from the clean run (`stream.replaced`: no hook on the shared model,
  which other sessions' decoding may be running through on other threads).

A run patched into itself changes nothing (tests/explain/test_patching.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

import transformer.explain.checks as checks
from transformer.explain.interventions import FAMILIES, attention_module
from transformer.explain.stream import Inputs, decoder_states, encoder_states, memory_of, next_token_logits, replaced
from transformer.model.layers import Transformer


class PatchingError(ValueError):
    """The pair cannot be patched (different token lengths, a position outside the output)."""


@dataclass(frozen=True)
class PatchingMap:
    target: int  # the token whose log-probability is measured
    clean_log_prob: float  # log p(target) in the clean run (with a foil: log p(target) - log p(foil))
    counterfactual_log_prob: float  # the same in the counterfactual run, nothing patched
    layers: tuple[str, ...]  # rows of `residual`: "embeddings", "after layer 0", ...
    residual: tuple[tuple[float, ...], ...]  # (L_enc + 1) x S effects
    heads: dict[str, tuple[tuple[float, ...], ...]]  # family -> n_layers x H effects
    foil: int | None = None  # the contrast token: every number above is then log p(target) - log p(foil)

    @property
    def difference(self) -> float:
        """What a patch would have to restore in full: clean minus counterfactual log-probability."""
        return self.clean_log_prob - self.counterfactual_log_prob


def check_pair(clean_ids: Sequence[int], counterfactual_ids: Sequence[int], clean_pieces: Sequence[str] = (),
               counterfactual_pieces: Sequence[str] = ()) -> None:
    """PatchingError unless the two sources have the same number of tokens (position s must mean the same slot);
    the pieces, when given, are shown in the message."""
    if len(clean_ids) == len(counterfactual_ids):
        return

    def shown(pieces: Sequence[str]) -> str:
        return f" ({' '.join(pieces)})" if pieces else ""

    raise PatchingError(
        f"the two sources must have the same number of tokens to patch position by position: the clean one has "
        f"{len(clean_ids)}{shown(clean_pieces)}, the counterfactual {len(counterfactual_ids)}"
        f"{shown(counterfactual_pieces)}; swap a word for one the tokenizer cuts into as many pieces")


def _log_prob(logits: Tensor, target: int, foil: int | None = None) -> Tensor:
    """(B, T, V) logits -> (B,) log-probability of target after the last decoder input, minus the foil's if given."""
    logp = logits[:, -1].float().log_softmax(-1)  # (B, V)
    return logp[:, target] - (logp[:, foil] if foil is not None else 0.0)


def _residual_effects(model: Transformer, clean: Inputs, counterfactual: Inputs, target: int, foil: int | None,
                      base: float) -> list[list[float]]:
    pad_id = model.config.pad_id
    src_mask = counterfactual.src_mask(pad_id)  # the pair has no padding, so either mask will do
    tgt_mask = counterfactual.tgt_mask(pad_id)
    clean_states = encoder_states(model, model.src_embed(clean.src), clean.src_mask(pad_id))  # L + 1 x (1, S, D)
    other_states = encoder_states(model, model.src_embed(counterfactual.src), src_mask)
    S = clean.src.size(1)
    y = model.tgt_embed(counterfactual.tgt).expand(S, -1, -1)  # (S, T, D)
    rows = []
    for layer, (mine, theirs) in enumerate(zip(clean_states, other_states)):
        x = theirs.repeat(S, 1, 1)  # (S, S, D): row s patches position s
        positions = torch.arange(S, device=x.device)
        x[positions, positions] = mine[0]
        memory = memory_of(model, encoder_states(model, x, src_mask, start=layer)[-1])
        logits = next_token_logits(model, decoder_states(model, y, memory, src_mask, tgt_mask)[-1][:, -1:])
        rows.append([v - base for v in _log_prob(logits, target, foil).tolist()])
    return rows


class _Reading(nn.Module):
    """W^O that first records its input (the heads' outputs concatenated, (1, L_q, D)) under `name`."""

    def __init__(self, w_o: nn.Linear, store: dict, name: tuple[str, int]):
        super().__init__()
        self.w_o, self.store, self.name = w_o, store, name

    def forward(self, x: Tensor) -> Tensor:
        self.store[self.name] = x.detach().clone()
        return self.w_o(x)


class _Patching(nn.Module):
    """W^O whose input row h (of H rows) takes head h's slice from the clean run's input."""

    def __init__(self, w_o: nn.Linear, clean: Tensor, d_head: int):
        super().__init__()
        self.w_o, self.clean, self.d_head = w_o, clean, d_head

    def forward(self, x: Tensor) -> Tensor:
        x = x.clone()  # (H, L_q, D): row h patches head h
        for head in range(x.size(0)):
            columns = slice(head * self.d_head, (head + 1) * self.d_head)
            x[head, :, columns] = self.clean[0, :, columns]
        return self.w_o(x)


def _w_o_path(family: str, layer: int) -> str:
    """The dotted path of a layer's W^O inside the Transformer."""
    if family == "enc_self":
        return f"encoder_layers.{layer}.self_attn.w_o"
    return f"decoder_layers.{layer}.{'self_attn' if family == 'dec_self' else 'cross_attn'}.w_o"


def _head_effects(model: Transformer, clean: Inputs, counterfactual: Inputs, target: int, foil: int | None,
                  base: float) -> dict[str, list[list[float]]]:
    """Views of the model with one W^O swapped (see `stream.replaced`): the model itself, which other sessions may be
    decoding with on other threads, is never changed and carries no hook."""
    names = [(f, layer) for f in FAMILIES
             for layer in range(len(model.encoder_layers if f == "enc_self" else model.decoder_layers))]
    captured: dict[tuple[str, int], Tensor] = {}
    reading = model
    for family, layer in names:  # one clean run records every W^O input: (1, L_q, D), the heads concatenated
        w_o = attention_module(model, family, layer).w_o
        reading = replaced(reading, _w_o_path(family, layer), _Reading(w_o, captured, (family, layer)))
    reading(clean.src, clean.tgt)
    H = model.config.n_heads
    src, tgt = counterfactual.src.expand(H, -1), counterfactual.tgt.expand(H, -1)  # (H, S), (H, T): row h patches h
    effects: dict[str, list[list[float]]] = {f: [] for f in FAMILIES}
    for family, layer in names:
        w_o = attention_module(model, family, layer).w_o
        patched = replaced(model, _w_o_path(family, layer), _Patching(w_o, captured[(family, layer)],
                                                                      model.config.d_head))
        log_probs = _log_prob(patched(src, tgt).logits, target, foil)
        effects[family].append([v - base for v in log_probs.tolist()])
    return effects


@torch.inference_mode()
def activation_patching(model: Transformer, clean_ids: Sequence[int], counterfactual_ids: Sequence[int],
                        decoder_input: Sequence[int], target: int, *, foil: int | None = None) -> PatchingMap:
    """Patch the clean run into the counterfactual one, every encoder layer x source position and every head,
    and measure log p(target | source, decoder_input) (decoder_input is <s> + the output prefix), minus
    log p(foil | ...) when a foil is given. The inputs are bounded as one app request is (`checks.MAX_SOURCE_TOKENS`,
    `checks.MAX_OUTPUT_TOKENS`)."""
    clean_ids = checks.source_ids(model, clean_ids, "clean_ids", checks.MAX_SOURCE_TOKENS)
    counterfactual_ids = checks.source_ids(model, counterfactual_ids, "counterfactual_ids", checks.MAX_SOURCE_TOKENS)
    decoder_input = checks.target_ids(model, decoder_input, "decoder_input", checks.MAX_OUTPUT_TOKENS)
    target = checks.target_token(model, target, "target")
    foil = None if foil is None else checks.target_token(model, foil, "foil")
    check_pair(clean_ids, counterfactual_ids)
    was_training = model.training
    model.eval()
    try:
        clean = Inputs.of(model, list(clean_ids), list(decoder_input))
        counterfactual = Inputs.of(model, list(counterfactual_ids), list(decoder_input))
        clean_lp = float(_log_prob(model(clean.src, clean.tgt).logits, target, foil)[0])
        base = float(_log_prob(model(counterfactual.src, counterfactual.tgt).logits, target, foil)[0])
        residual = _residual_effects(model, clean, counterfactual, target, foil, base)
        heads = _head_effects(model, clean, counterfactual, target, foil, base)
    finally:
        model.train(was_training)
    layers = ("embeddings", *(f"after layer {i}" for i in range(len(model.encoder_layers))))
    return PatchingMap(target, clean_lp, base, layers, tuple(map(tuple, residual)),
                       {f: tuple(map(tuple, rows)) for f, rows in heads.items()}, foil)

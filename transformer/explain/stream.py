"""The residual stream of one source and one target prefix, run layer by layer from any point.

`Transformer.encode` and `decode` take token ids and return only the end of each stack. The attributions,
the logit lens, DecoderLens and activation patching need more: to start from the token embeddings (before
the positions are added, Section 3.4), to read the state after every layer, or to resume the encoder at an
intermediate layer. These functions run the model's own layer modules in the model's own order, so a pass
here equals `Transformer.forward` (tests/explain/test_logit_lens.py checks it); nothing is stored on a module.
`replaced` makes a view of the model with one submodule swapped, for the app's shared model: a hook registered on
the model itself would also fire in another session's decoding on another thread.

Shapes: B batch, S source length, T target length, D d_model, V vocabulary.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer.model.layers import Transformer, padding_mask, target_mask


@dataclass(frozen=True)
class Inputs:
    """Token ids of one source and one decoder input (<s> + output prefix), each (1, L)."""

    src: Tensor  # (1, S)
    tgt: Tensor  # (1, T)

    @classmethod
    def of(cls, model: Transformer, source_ids: list[int], decoder_input: list[int]) -> Inputs:
        device = next(model.parameters()).device
        return cls(torch.tensor([source_ids], device=device), torch.tensor([decoder_input], device=device))

    def src_mask(self, pad_id: int) -> Tensor:
        return padding_mask(self.src, pad_id)  # (1, 1, 1, S): broadcasts over any batch

    def tgt_mask(self, pad_id: int) -> Tensor:
        return target_mask(self.tgt, pad_id)  # (1, 1, T, T)


def token_embeddings(model: Transformer, ids: Tensor, side: str) -> Tensor:
    """ids (B, L) -> e (B, L, D): the token embedding E[id] * sqrt(D) (unscaled if the config says so), before the
    positions are added."""
    embed = model.src_embed if side == "src" else model.tgt_embed
    return embed.tokens(ids) * embed.scale


def with_positions(model: Transformer, e: Tensor, side: str) -> Tensor:
    """e (B, L, D) token embeddings -> the residual stream entering layer 0 (eval mode: no dropout): plus the
    positions, through the embeddings' LayerNorm where the model has one (BART)."""
    embed = model.src_embed if side == "src" else model.tgt_embed
    return embed.norm(e + embed.positions(0, e.size(1)))


def encoder_states(model: Transformer, x: Tensor, src_mask: Tensor, *, start: int = 0) -> list[Tensor]:
    """x (B, S, D) is the stream entering encoder layer `start`; returns [x, after layer start, ..., after the
    last layer], each (B, S, D), before the encoder's final norm."""
    states = [x]
    for layer in model.encoder_layers[start:]:
        x = layer(x, src_mask, False)[0]
        states.append(x)
    return states


def memory_of(model: Transformer, state: Tensor) -> Tensor:
    """An encoder state (B, S, D) through the encoder's final norm: what the decoder cross-attends to."""
    return model.encoder_norm(state)


def decoder_states(model: Transformer, y: Tensor, memory: Tensor, src_mask: Tensor, tgt_mask: Tensor) -> list[Tensor]:
    """y (B, T, D) is the stream entering decoder layer 0; returns [y, after layer 0, ..., after the last layer],
    each (B, T, D), before the decoder's final norm."""
    states = [y]
    for layer in model.decoder_layers:
        y = layer(y, None, layer.cross_attn.project_kv(memory), tgt_mask, src_mask, False)[0]
        states.append(y)
    return states


def next_token_logits(model: Transformer, state: Tensor) -> Tensor:
    """A decoder state (B, T, D) through the decoder's final norm and the output projection: (B, T, V)."""
    return model.logits(model.decoder_norm(state))


def log_probs_from_embeddings(model: Transformer, inputs: Inputs, e_src: Tensor, e_tgt: Tensor) -> Tensor:
    """Token embeddings e_src (B, S, D) and e_tgt (B, T, D) -> log-probabilities (B, V) of the token after the
    last decoder input, in float32 or wider (the scores decoding gives, before <pad> and <s> are ruled out)."""
    pad_id = model.config.pad_id
    src_mask = inputs.src_mask(pad_id)
    memory = memory_of(model, encoder_states(model, with_positions(model, e_src, "src"), src_mask)[-1])
    y = decoder_states(model, with_positions(model, e_tgt, "tgt"), memory, src_mask, inputs.tgt_mask(pad_id))[-1]
    logits = next_token_logits(model, y[:, -1:])[:, 0]  # (B, V)
    return logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)


def replaced(root: nn.Module, path: str, new: nn.Module) -> nn.Module:
    """A view of root with the submodule at the dotted path (e.g. "encoder_layers.1.self_attn.w_o") replaced by
    new. The modules along the path are shallow copies with their own tables of submodules; every other module and
    every parameter is shared, and root itself is unchanged."""
    name, _, rest = path.partition(".")
    view = copy.copy(root)
    view._modules = dict(root._modules)
    view._modules[name] = replaced(root._modules[name], rest, new) if rest else new
    return view

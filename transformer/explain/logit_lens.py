"""What each layer already "knows": the logit lens on the decoder and DecoderLens on the encoder.

- Logit lens (nostalgebraist, "interpreting GPT: the logit lens", 2020): the decoder's residual stream after
  layer l, at every target position, read through the decoder's final norm and the output projection, as if
  the layers above were absent. These layers are pre-LN (`ModelConfig.norm_first`): the stream itself is never
  normalised and the stack ends with `decoder_norm`, so every layer's state goes through that norm (a post-LN
  model has no final norm and each state is already normalised). Row 0 is the embeddings with positions; the
  last row is the model's own distribution.
- DecoderLens (Langedijk et al., "DecoderLens: Layerwise Interpretation of Encoder-Decoder Transformers",
  Findings of NAACL 2024): the whole decoder cross-attends to encoder layer l's output, through the encoder's
  final norm, and decodes: the translation each encoder layer would give. Layer 0 is the embeddings with
  positions; the last layer is the normal translation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn

import transformer.explain.checks as checks
from transformer.data.tokenizer import SpecialIds
from transformer.decoding.search import DEFAULT_SETTINGS, SearchSettings
from transformer.decoding.translate import Translation, Translator
from transformer.explain.stream import Inputs, decoder_states, next_token_logits, replaced
from transformer.model.layers import Transformer


@dataclass(frozen=True)
class LensCell:
    tokens: tuple[int, ...]  # the top tokens, most probable first
    probs: tuple[float, ...]
    output_prob: float  # the probability of the token the model emitted at this position
    output_rank: int  # its rank (0: the top token)


@dataclass(frozen=True)
class LogitLens:
    """cells[l][t]: decoder state after layer l (0: the embeddings) at the query that emits output token t."""

    layers: tuple[str, ...]  # "embeddings", "layer 0", ...
    cells: tuple[tuple[LensCell, ...], ...]  # (L + 1) x T

    def top_tokens(self) -> list[list[int]]:
        return [[cell.tokens[0] for cell in row] for row in self.cells]


@torch.inference_mode()
def logit_lens(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int], k: int = 3, *,
               specials: SpecialIds) -> LogitLens:
    """The top-k tokens of the output projection of decoder_norm(x_l) at every layer l and output position of a
    teacher-forced pass over specials.start + output_ids[:-1] (output_ids: the translation of source_ids, ending
    with </s>)."""
    source_ids = checks.source_ids(model, source_ids)
    output_ids = checks.target_ids(model, output_ids, "output_ids")
    k = checks.integer(k, "k", 1, model.config.tgt_vocab_size)
    was_training = model.training
    model.eval()
    try:
        inputs = Inputs.of(model, list(source_ids), [specials.start, *output_ids[:-1]])
        pad_id = model.config.pad_id
        src_mask = inputs.src_mask(pad_id)
        memory = model.encode(inputs.src).memory  # (1, S, D)
        states = decoder_states(model, model.tgt_embed(inputs.tgt), memory, src_mask, inputs.tgt_mask(pad_id))
        stacked = torch.cat(states)  # (L + 1, T, D)
        probs = next_token_logits(model, stacked).float().softmax(-1)  # (L + 1, T, V)
    finally:
        model.train(was_training)
    probs[..., list(specials.never)] = 0.0  # never an output (as decoding rules them out)
    top = probs.topk(min(k, probs.size(-1)), dim=-1)
    output = torch.tensor(list(output_ids), device=probs.device)[None, :, None].expand(probs.size(0), -1, 1)
    output_prob = probs.gather(-1, output)[..., 0]  # (L + 1, T)
    rank = (probs > output_prob[..., None]).sum(-1)  # (L + 1, T)
    cells = tuple(tuple(LensCell(tuple(top.indices[layer, t].tolist()), tuple(top.values[layer, t].tolist()),
                                 float(output_prob[layer, t]), int(rank[layer, t])) for t in range(probs.size(1)))
                  for layer in range(probs.size(0)))
    names = ("embeddings", *(f"layer {i}" for i in range(len(model.decoder_layers))))
    return LogitLens(names, cells)


# ----------------------------------------------------------------------------- DecoderLens


def encoder_cut(model: Transformer, n_layers: int) -> Transformer:
    """A view of the model whose encoder stops after its first n_layers layers (then the final norm).

    It shares every parameter with the model (nothing is copied or changed), so every decoding path (greedy,
    beam, the KV cache) runs on it unchanged; the model itself is untouched.
    """
    n_layers = checks.integer(n_layers, "n_layers", 0, len(model.encoder_layers))
    return replaced(model, "encoder_layers", nn.ModuleList(list(model.encoder_layers)[:n_layers]))


@dataclass(frozen=True)
class LayerTranslation:
    layer: str  # "embeddings", "layer 0", ...
    translation: Translation


def decoder_lens(translator: Translator, text: str, settings: SearchSettings = DEFAULT_SETTINGS,
                 ) -> list[LayerTranslation]:
    """The translation the decoder gives from each encoder layer's output: embeddings, layer 0, ..., the last
    layer (which is the normal translation)."""
    n = len(translator.model.encoder_layers)
    out = []
    for cut in range(n + 1):
        checkpoint = replace(translator.checkpoint, model=encoder_cut(translator.model, cut))
        view = Translator(checkpoint, batch_size=translator.batch_size)
        out.append(LayerTranslation("embeddings" if cut == 0 else f"layer {cut - 1}", view.translate(text, settings)))
    return out


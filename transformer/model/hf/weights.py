"""transformers' tensors -> our model's: one table of renames for every family (Marian, M2M100, mBART, BART name their
layers alike), a shape check per tensor, and every tensor of the file used or accounted for.

    ours                                   transformers'
    src_embed.tokens.weight                model.shared.weight (or model.encoder.embed_tokens.weight)
    {src,tgt}_embed.pe (learned)           model.{encoder,decoder}.embed_positions.weight
    {src,tgt}_embed.norm                   model.{encoder,decoder}.layernorm_embedding
    encoder_layers.i.self_attn.w_kv        model.encoder.layers.i.self_attn.{k_proj, v_proj}, stacked
    ..., encoder_norm, decoder_norm        model.{encoder,decoder}.layer_norm
    generator.weight (untied)              lm_head.weight
    final_logits_bias                      final_logits_bias (1, V)
"""

from __future__ import annotations

import re

import torch

from transformer.model.checkpoint import unique_state_dict
from transformer.model.config import ModelConfig
from transformer.model.embedding import Embedding
from transformer.model.hf.common import HF_CONFIG, HF_WEIGHTS, ImportFailed
from transformer.model.layers import Transformer

ATTENTION = {"w_q": "q_proj", "w_kv": ("k_proj", "v_proj"), "w_o": "out_proj"}  # ours -> transformers'
ENCODER_LAYER = {"self_attn": "self_attn", "sublayers.0.norm": "self_attn_layer_norm", "feed_forward.w_1": "fc1",
                 "feed_forward.w_2": "fc2", "sublayers.1.norm": "final_layer_norm"}
DECODER_LAYER = {"self_attn": "self_attn", "sublayers.0.norm": "self_attn_layer_norm", "cross_attn": "encoder_attn",
                 "sublayers.1.norm": "encoder_attn_layer_norm", "feed_forward.w_1": "fc1", "feed_forward.w_2": "fc2",
                 "sublayers.2.norm": "final_layer_norm"}
STACKS = {"src_embed": "encoder", "tgt_embed": "decoder", "encoder_norm": "encoder", "decoder_norm": "decoder"}
# static sinusoids some files hold (Marian's older ones, fairseq conversions): checked against ours, not loaded
STATIC_POSITIONS = re.compile(r"model\.(encoder|decoder)\.embed_positions\.weights?")
BARE_MODEL = re.compile(r"(shared|encoder|decoder)\.")  # a BartModel's file names its tensors without "model."


def renames(config: ModelConfig) -> dict[str, tuple[str, ...]]:
    """Our parameter name -> the transformers tensor(s) it is made of (keys and values: two, stacked); the first of
    several names that a file holds is used."""
    table: dict[str, tuple[str, ...]] = {
        "src_embed.tokens.weight": ("model.shared.weight", "model.encoder.embed_tokens.weight"),
        "final_logits_bias": ("final_logits_bias",),
    }
    if not config.share_embeddings:
        table["src_embed.tokens.weight"] = ("model.encoder.embed_tokens.weight",)
        table["tgt_embed.tokens.weight"] = ("model.decoder.embed_tokens.weight",)
    if not config.tie_output:
        table["generator.weight"] = ("lm_head.weight",)
    for ours, stack in STACKS.items():
        table[f"{ours}.pe"] = (f"model.{stack}.embed_positions.weight",)
        theirs = "layernorm_embedding" if ours.endswith("embed") else "layer_norm"
        for param in ("weight", "bias"):
            table[f"{ours}.norm.{param}" if ours.endswith("embed") else f"{ours}.{param}"] = \
                (f"model.{stack}.{theirs}.{param}",)
    for stack, n_layers, layer_table in (("encoder", config.n_encoder_layers, ENCODER_LAYER),
                                         ("decoder", config.n_decoder_layers, DECODER_LAYER)):
        for i in range(n_layers):
            for ours, theirs in layer_table.items():
                parts = ATTENTION.items() if ours.endswith("attn") else [("", theirs)]
                for sub, hf_sub in parts:
                    name = f"{ours}.{sub}" if sub else ours
                    hf_names = (hf_sub,) if isinstance(hf_sub, str) else hf_sub
                    prefix = f"model.{stack}.layers.{i}.{theirs + '.' if sub else ''}"
                    for param in ("weight", "bias"):
                        table[f"{stack}_layers.{i}.{name}.{param}"] = tuple(f"{prefix}{h}.{param}" for h in hf_names)
    return table


def _tensor(hf: dict[str, torch.Tensor], names: tuple[str, ...], stacked: bool) -> tuple[torch.Tensor, str]:
    """The tensor for one of our parameters: the first of names present (alternatives), or all stacked (k and v)."""
    if stacked:
        missing = [n for n in names if n not in hf]
        if missing:
            raise ImportFailed(f"{HF_WEIGHTS}: has no {missing[0]}")
        return torch.cat([hf[n] for n in names]), " + ".join(names)
    name = next((n for n in names if n in hf), None)
    if name is None:
        raise ImportFailed(f"{HF_WEIGHTS}: has no {' or '.join(names)}")
    return hf[name], name


def state_dict(hf: dict[str, torch.Tensor], config: ModelConfig, family: str) -> dict[str, torch.Tensor]:
    """Our weights (float32) from transformers' tensors, each checked for its shape; every tensor of hf must be used
    (family names the architecture in messages)."""
    if not any(n.startswith("model.") for n in hf):
        hf = {f"model.{n}" if BARE_MODEL.match(n) else n: t for n, t in hf.items()}
    with torch.device("meta"):  # our names and shapes, without allocating the model
        targets = unique_state_dict(Transformer(config))
    table, used, state = renames(config), set(), {}
    for ours, target in targets.items():
        if ours not in table:
            raise ImportFailed(f"our model's {ours} has no counterpart in a {family} checkpoint")
        names = table[ours]
        if ours == "final_logits_bias" and names[0] not in hf:  # transformers fills a missing bias with zeros too
            tensor, name = torch.zeros(config.tgt_vocab_size), names[0]
        else:
            tensor, name = _tensor(hf, names, stacked=".w_kv." in ours)
        tensor = tensor.reshape(-1) if ours == "final_logits_bias" and tensor.dim() == 2 else tensor  # (1, V)
        if tensor.shape != target.shape:
            raise ImportFailed(f"{HF_WEIGHTS}: {name} has shape {tuple(tensor.shape)}, but {HF_CONFIG} makes "
                               f"{ours} {tuple(target.shape)}")
        used.update(name.split(" + "))
        state[ours] = tensor.float()
    used |= _check_tied(hf, state, config)
    _check_positions(hf, config)
    unused = sorted(n for n in hf if n not in used and not STATIC_POSITIONS.fullmatch(n))
    if unused:
        raise ImportFailed(f"{HF_WEIGHTS}: tensors we do not compute: {', '.join(unused[:5])}"
                           f"{' ...' if len(unused) > 5 else ''} (an option of another architecture?)")
    return state


def _check_tied(hf: dict[str, torch.Tensor], state: dict[str, torch.Tensor], config: ModelConfig) -> set[str]:
    """The copies of a shared or tied table that a file holds (older files hold all four names) must equal the
    table we load; returns their names."""
    table = "src_embed.tokens.weight" if config.share_embeddings else "tgt_embed.tokens.weight"
    copies = [("src_embed.tokens.weight", "model.encoder.embed_tokens.weight")] if config.share_embeddings else []
    copies += [(table, "model.decoder.embed_tokens.weight")] if config.share_embeddings else []
    copies += [(table, "lm_head.weight")] if config.tie_output else []
    for ours, name in copies:
        if name in hf and (hf[name].shape != state[ours].shape or not torch.equal(hf[name].float(), state[ours])):
            raise ImportFailed(f"{HF_WEIGHTS}: {name} differs from the table {HF_CONFIG} ties it to")
    return {name for _, name in copies if name in hf}


def _check_positions(hf: dict[str, torch.Tensor], config: ModelConfig) -> None:
    """Saved static position tables must be the sinusoids we compute, from the row of position 0 on (fairseq's zero
    the padding row, which no position reads)."""
    saved = [n for n in hf if STATIC_POSITIONS.fullmatch(n)]
    if config.learned_positions or not saved:
        return
    table, offset = Embedding.sinusoids(config), config.position_offset
    for name in saved:
        theirs = hf[name].float()
        rows = min(len(theirs), len(table))
        if theirs.shape[1:] != table.shape[1:] or rows <= offset or \
                not torch.allclose(theirs[offset:rows], table[offset:rows], atol=1e-4):
            raise ImportFailed(f"{HF_WEIGHTS}: {name} is not the static sinusoid table of {HF_CONFIG} (learned "
                               "positions are not implemented for this architecture)")

"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), from scratch.

Read leaves first: masks and attention (`attention`), embeddings and positions (`embedding`), the feed-forward,
sublayer, encoder and decoder layers (`blocks`), then here the typed outputs and the encoder-decoder model with
its incremental (KV-cached) decoding step. The building blocks are importable from here too.

Shape letters used in every comment:
    B batch, S source length, T target length, L any sequence length, H heads,
    D d_model, Dh head dim (D // H), F d_ff, V vocabulary size.

Masks are boolean, True where a query may attend to a key, and broadcast to (B, H, L_q, L_k).
Attention weights are only computed when asked for, and are returned, never stored on a module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer.model.attention import (
    KV,
    MultiHeadAttention,
    attention,
    padding_mask,
    subsequent_mask,
    target_mask,
    target_padding_mask,
)
from transformer.model.blocks import DecoderLayer, EncoderLayer, FeedForward, Sublayer
from transformer.model.config import ModelConfig
from transformer.model.embedding import Embedding, sinusoidal_encoding
from transformer.model.linear import Linear

__all__ = [
    "KV", "AttentionMaps", "DecoderCache", "DecoderLayer", "DecoderOutput", "Embedding", "EncoderLayer",
    "EncoderOutput", "FeedForward", "MultiHeadAttention", "Seq2SeqOutput", "StepOutput", "Sublayer", "Transformer",
    "attention", "padding_mask", "sinusoidal_encoding", "subsequent_mask", "target_mask", "target_padding_mask",
]


# ----------------------------------------------------------------------------- typed outputs


@dataclass
class AttentionMaps:
    """Per-layer attention weights; rows are queries, columns keys (for cross: rows are target tokens)."""

    enc_self: list[Tensor]  # n_encoder_layers x (B, H, S, S)
    dec_self: list[Tensor]  # n_decoder_layers x (B, H, T, T)
    cross: list[Tensor]  # n_decoder_layers x (B, H, T, S)


@dataclass
class EncoderOutput:
    memory: Tensor  # (B, S, D)
    attention: list[Tensor] | None  # n_encoder_layers x (B, H, S, S) when asked for


@dataclass
class DecoderOutput:
    logits: Tensor  # (B, T, V)
    self_attention: list[Tensor] | None  # n_decoder_layers x (B, H, T, T) when asked for
    cross_attention: list[Tensor] | None  # n_decoder_layers x (B, H, T, S) when asked for


@dataclass
class Seq2SeqOutput:
    logits: Tensor  # (B, T, V)
    attention: AttentionMaps | None


class Room:
    """The self-attention keys and values of every decoder layer in one buffer, (2 x n_layers, B, H, capacity, Dh):
    layer l's keys at 2l, its values at 2l + 1. Shared by the caches that view it: the first `written` positions
    hold values, and a step from the cache of that length writes the next one in place (any other step copies)."""

    def __init__(self, buffer: Tensor, written: int):
        self.buffer, self.written = buffer, written

    @property
    def capacity(self) -> int:
        return self.buffer.size(3)

    def views(self, T: int) -> tuple[KV, ...]:
        """Each layer's keys and values of the first T positions, (B, H, T, Dh) views of the buffer."""
        kv = self.buffer[:, :, :, :T]  # (2L, B, H, T, Dh)
        return tuple((kv[i], kv[i + 1]) for i in range(0, kv.size(0), 2))


def room_for(self_kv: tuple[KV, ...], room: Room | None, T: int, capacity: int, index: Tensor | None = None) -> Room:
    """A new Room of `capacity` positions holding the first T of self_kv (its batch rows index, when given): one copy
    for every layer when self_kv are views of room's buffer."""
    source = room.buffer[:, :, :, :T] if room is not None else torch.stack([t for kv in self_kv for t in kv])
    L2, B, H, _, Dh = source.shape  # (2L, B, H, T, Dh)
    rows = B if index is None else index.numel()
    buffer = source.new_empty(L2, rows, H, capacity, Dh)
    written = buffer[:, :, :, :T]
    if index is None:
        written.copy_(source)
    elif source.requires_grad and torch.is_grad_enabled():  # out= has no gradient
        written.copy_(source.index_select(1, index))
    else:
        torch.index_select(source, 1, index, out=written)  # straight into the buffer
    return Room(buffer, T)


@dataclass(frozen=True)
class DecoderCache:
    """Everything a decoding step needs from earlier steps; immutable, so a step returns a new one.

    The self-attention keys and values are views of one buffer with room for more positions (`Room`): a step writes
    its own position after them instead of copying the whole prefix (`Transformer.decode_step`), and a reorder makes
    one copy, into a new buffer. What a cache shows never changes: only the first step from it writes in place, a
    second one (or one from a cache without room) copies into a new buffer first.
    """

    tokens: Tensor  # (B, T) target ids fed so far
    self_kv: tuple[KV, ...]  # per decoder layer, (B, H, T, Dh) keys and values of the fed tokens (views of room's)
    cross_kv: tuple[KV, ...]  # per decoder layer, (B, H, S, Dh): projected once per source
    src_mask: Tensor  # (B, 1, 1, S)
    room: Room | None = None  # the buffer self_kv views; None: no room (the next step copies)

    def reorder(self, index: Tensor) -> DecoderCache:
        """Select (and repeat) batch rows, e.g. the surviving hypotheses of a beam search step."""
        return self.reorder_targets(index).reorder_sources(index)

    def reorder_targets(self, index: Tensor) -> DecoderCache:
        """Select (and repeat) the rows of the target side (tokens, self-attention keys and values), keeping the source
        side: the hypotheses of a beam change places within their sentence, whose memory they share."""
        tokens = self.tokens.index_select(0, index)
        if not self.self_kv:
            return dataclasses.replace(self, tokens=tokens)
        T = self.self_kv[0][0].size(2)  # positions cached (tokens has more when a search recomputes instead)
        room = room_for(self.self_kv, self.room, T, max(self.room.capacity if self.room else T, T + 1), index)
        return dataclasses.replace(self, tokens=tokens, self_kv=room.views(T), room=room)

    def reorder_sources(self, index: Tensor) -> DecoderCache:
        """Select (and repeat) the rows of the source side (cross-attention keys and values, source mask)."""

        def pick(kv: KV) -> KV:
            return kv[0].index_select(0, index), kv[1].index_select(0, index)

        return dataclasses.replace(self, cross_kv=tuple(pick(kv) for kv in self.cross_kv),
                                   src_mask=self.src_mask.index_select(0, index))


@dataclass
class StepOutput:
    logits: Tensor | None  # (B, V) for the next token; None when not projected (a forced token needs none)
    cache: DecoderCache  # includes the token just fed
    self_attention: list[Tensor] | None  # n_decoder_layers x (B, H, T) row of the token just fed
    cross_attention: list[Tensor] | None  # n_decoder_layers x (B, H, S)


# ----------------------------------------------------------------------------- the model


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.src_embed = Embedding(config.src_vocab_size, config)
        if not config.share_embeddings:
            self.tgt_embed = Embedding(config.tgt_vocab_size, config)
        elif config.learned_positions or config.embedding_norm:  # one token table, each side its positions and norm
            self.tgt_embed = Embedding(config.tgt_vocab_size, config, tokens=self.src_embed.tokens)
        else:
            self.tgt_embed = self.src_embed
        self.encoder_layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.n_encoder_layers)])
        self.decoder_layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.n_decoder_layers)])
        # pre-LN leaves the residual stream unnormalised, so each stack ends with a LayerNorm (unless the config
        # drops it); in post-LN the last sublayer's norm already ends each stack
        final_norm = config.norm_first and config.final_norm
        self.encoder_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if final_norm else nn.Identity()
        self.decoder_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if final_norm else nn.Identity()
        self.generator = Linear(config.d_model, config.tgt_vocab_size, bias=False)
        # a fixed bias on the logits (Marian's): a buffer, saved with the weights but never trained
        bias = torch.zeros(config.tgt_vocab_size) if config.final_logits_bias else None
        self.register_buffer("final_logits_bias", bias)
        self._init_weights()
        if config.tie_output:
            self.generator.weight = self.tgt_embed.tokens.weight

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        for tokens in dict.fromkeys((self.src_embed.tokens, self.tgt_embed.tokens)):  # once when shared; in this
            # order (a set's order follows the modules' addresses, so one seed made different models in different
            # processes); std D^-1/2 so that the sqrt(D) scaling yields unit-variance inputs
            nn.init.normal_(tokens.weight, std=self.config.d_model**-0.5)

    @classmethod
    def from_weights(cls, config: ModelConfig, weights: dict[str, Tensor]) -> Transformer:
        """The model of config holding weights (one name per tensor, as `unique_state_dict` gives them) as its own
        tensors, not copies: built on the meta device, so that loading holds the weights once. ValueError when
        weights leave a parameter or buffer unfilled."""
        with torch.device("meta"):
            model = cls(config)
        model.load_state_dict(weights, strict=False, assign=True)
        for embed in dict.fromkeys((model.src_embed, model.tgt_embed)):  # computed, never saved
            if isinstance(embed.pe, Tensor) and not isinstance(embed.pe, nn.Parameter):
                embed.pe = Embedding.sinusoids(config)
        if config.tie_output:
            model.generator.weight = model.tgt_embed.tokens.weight
        empty = [name for name, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
        if empty:
            raise ValueError(f"no weights for {', '.join(empty[:5])}")
        return model

    def encode(self, src: Tensor, *, return_attention: bool = False) -> EncoderOutput:
        """src (B, S) ids -> memory (B, S, D)."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        x, maps = self.src_embed(src), []
        for layer in self.encoder_layers:
            x, weights = layer(x, src_mask, return_attention)
            maps.append(weights)
        return EncoderOutput(self.encoder_norm(x), maps if return_attention else None)

    def _decoder_stack(
        self, tgt: Tensor, memory: Tensor, src: Tensor, return_attention: bool
    ) -> tuple[Tensor, list[Tensor | None], list[Tensor | None]]:
        """The decoder layers and final norm over tgt (B, T): states (B, T, D) and per-layer weights."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        tgt_mask = target_mask(tgt, self.config.pad_id)  # (B, 1, T, T)
        x, self_maps, cross_maps = self.tgt_embed(tgt), [], []
        for layer in self.decoder_layers:
            x, _, self_w, cross_w = layer(
                x, None, layer.cross_attn.project_kv(memory), tgt_mask, src_mask, return_attention
            )
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        return self.decoder_norm(x), self_maps, cross_maps

    def decoder_states(self, tgt: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        """Teacher-forced decoder states (B, T, D) before the output projection (training projects only the
        rows of real tokens, see transformer.model.loss)."""
        return self._decoder_stack(tgt, memory, src, False)[0]

    def logits(self, states: Tensor) -> Tensor:
        """Decoder states (..., D) -> logits (..., V): the output projection, plus final_logits_bias if any."""
        logits = self.generator(states)
        return logits if self.final_logits_bias is None else logits + self.final_logits_bias

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor, *, return_attention: bool = False) -> DecoderOutput:
        """Teacher-forced decoding: tgt (B, T) ids, memory (B, S, D), src (B, S) ids -> logits (B, T, V)."""
        x, self_maps, cross_maps = self._decoder_stack(tgt, memory, src, return_attention)
        logits = self.logits(x)
        if not return_attention:
            return DecoderOutput(logits, None, None)
        return DecoderOutput(logits, self_maps, cross_maps)

    def attention_maps(self, src: Tensor, tgt: Tensor) -> AttentionMaps:
        """Every attention map of a teacher-forced pass over src (B, S) and tgt (B, T), the same as forward()'s,
        without the output projection: (B, T, V) logits that nobody reads cost more than the decoder layers."""
        enc = self.encode(src, return_attention=True)
        _, self_maps, cross_maps = self._decoder_stack(tgt, enc.memory, src, True)
        return AttentionMaps(enc.attention, self_maps, cross_maps)

    def forward(self, src: Tensor, tgt: Tensor, *, return_attention: bool = False) -> Seq2SeqOutput:
        """src (B, S), tgt (B, T) ids -> logits (B, T, V) for the token after each target position."""
        enc = self.encode(src, return_attention=return_attention)
        dec = self.decode(tgt, enc.memory, src, return_attention=return_attention)
        if not return_attention:
            return Seq2SeqOutput(dec.logits, None)
        return Seq2SeqOutput(dec.logits, AttentionMaps(enc.attention, dec.self_attention, dec.cross_attention))

    # ------------------------------------------------------------------------- incremental decoding

    def start_cache(self, memory: Tensor, src: Tensor, capacity: int = 16) -> DecoderCache:
        """An empty cache for decoding from memory (B, S, D): cross-attention keys and values computed once, and a
        self-attention buffer for `capacity` positions (a step that needs more copies into a larger one)."""
        B, c = src.size(0), self.config
        buffer = memory.new_empty(2 * c.n_decoder_layers, B, c.n_heads, capacity, c.d_head)  # (2L, B, H, cap, Dh)
        room = Room(buffer, 0)
        return DecoderCache(
            tokens=src.new_zeros(B, 0),
            self_kv=room.views(0),
            cross_kv=tuple(layer.cross_attn.project_kv(memory) for layer in self.decoder_layers),
            src_mask=padding_mask(src, self.config.pad_id),
            room=room,
        )

    def decode_step(self, token: Tensor, cache: DecoderCache, *, return_attention: bool = False,
                    project: bool = True) -> StepOutput:
        """Feed one token per row, token (B,), attending to the cached prefix; equals a row of decode(). project
        False skips the output projection (its logits are None): the step after it is forced whatever they say."""
        T, room = cache.tokens.size(1), cache.room
        if room is None or room.written != T or room.capacity <= T:  # taken by another step, or full: copy
            room = room_for(cache.self_kv, room, T, T + 1 + max(16, T // 2))  # grows by half: copies stay rare
        room.written = T + 1  # this step writes position T of the buffer (`extend` in DecoderLayer)
        past = room.views(T)
        tokens = torch.cat([cache.tokens, token[:, None]], dim=1)  # (B, T + 1)
        tgt_mask = target_padding_mask(tokens, self.config.pad_id)  # (B, 1, 1, T): the new query sees every past key
        x = self.tgt_embed(token[:, None], start=T)  # (B, 1, D)
        self_kv, self_rows, cross_rows = [], [], []
        for layer, layer_past, cross_kv in zip(self.decoder_layers, past, cache.cross_kv):
            x, kv, self_w, cross_w = layer(x, layer_past, cross_kv, tgt_mask, cache.src_mask, return_attention)
            self_kv.append(kv)
            if return_attention:
                self_rows.append(self_w[:, :, 0])  # (B, H, T)
                cross_rows.append(cross_w[:, :, 0])  # (B, H, S)
        logits = self.logits(self.decoder_norm(x[:, 0])) if project else None  # (B, V)
        new_cache = DecoderCache(tokens, tuple(self_kv), cache.cross_kv, cache.src_mask, room)
        if not return_attention:
            return StepOutput(logits, new_cache, None, None)
        return StepOutput(logits, new_cache, self_rows, cross_rows)

"""Forced prefixes: the first output pieces are given rather than chosen, and decoding goes on from them ("what if
the model had said X?", issue 38).

Every engine (`transformer.decoding.search`, `transformer.decoding.beam`) takes the prefix's ids: for its first
len(prefix) steps it feeds and emits the prefix's pieces whatever its own choice would be, and records each one's
log-probability as the model gave it at that step, so that the forced part of an output scores what a teacher-forced
pass over the same pieces gives. Greedy search, beam search and sampling then go on as they would from any prefix
(sampling draws its first token after the prefix).

A text prefix is encoded as target text (`encode_target`) without its start token and without the final </s>: the
output does not end where the typed text ends.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformer.data.corpora.base import normalize_text
from transformer.data.vocabulary import SpecialIds, TokenizerLike

Prefix = str | Sequence[int]  # a target text, or target piece ids


def check_prefix(prefix: Sequence[int], specials: SpecialIds, vocab_size: int, limits: Sequence[int]) -> list[int]:
    """prefix as a list of ids, or ValueError naming what a decoder cannot be made to emit: an id that is not an
    integer of the target vocabulary, an id decoding never emits (specials.never), </s> (decoding goes on after the
    prefix), or more pieces than the output limit of a sentence (limits: each sentence's, </s> included) leaves room
    for, one token at least being decoded."""
    ids = list(prefix)
    for i, token in enumerate(ids):
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab_size:
            raise ValueError(f"prefix: piece {i + 1} must be an id between 0 and {vocab_size - 1} (the target "
                             f"vocabulary), got {token!r}")
        if token in specials.never:
            raise ValueError(f"prefix: piece {i + 1} is id {token}, which decoding never emits (a special token)")
        if token == specials.eos:
            raise ValueError(f"prefix: piece {i + 1} is </s> (id {token}); decoding goes on after the prefix, so it "
                             "cannot end it")
    if ids and limits and len(ids) >= min(limits):
        raise ValueError(f"prefix: {len(ids)} pieces, but the output limit for this source is {min(limits)} tokens, "
                         f"</s> included: the prefix may have at most {min(limits) - 1}")
    return ids


def forced_prefix(prefix: Sequence[int], specials: SpecialIds, vocab_size: int, limits: Sequence[int]) -> list[int]:
    """What an engine forces: the tokenizer's own forced tokens (specials.forced), then prefix, checked as
    check_prefix does against what the limits leave after them."""
    n = len(specials.forced)
    return [*specials.forced, *check_prefix(prefix, specials, vocab_size, [limit - n for limit in limits])]


def encode_prefix(tokenizer: TokenizerLike, prefix: Prefix) -> list[int]:
    """A text prefix's target piece ids (no start token, no </s>), or the ids themselves; ValueError when the text
    has no pieces or pieces the target vocabulary lacks (<unk>), which the model could not have emitted."""
    if not isinstance(prefix, str):
        return list(prefix)
    # start + forced + pieces + </s>, as a training target; the engines add the forced tokens themselves
    ids = tokenizer.encode_target(normalize_text(prefix))[1 + len(tokenizer.specials.forced) : -1]
    if not ids:
        raise ValueError(f"prefix: no target pieces in {prefix!r}")
    if tokenizer.specials.unk in ids:
        unknown = [w for w in prefix.split() if tokenizer.specials.unk in tokenizer.encode_target(w)[1:]]
        raise ValueError(f"prefix: {', '.join(map(repr, unknown)) or repr(prefix)} has pieces the target "
                         "vocabulary lacks (<unk>): the model cannot emit it")
    return ids

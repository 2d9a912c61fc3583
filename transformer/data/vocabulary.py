"""What every kind of tokenizer shares: its special ids (`SpecialIds`), its error type and its interface.

Our own vocabularies (`transformer.data.tokenizer`) and imported SentencePiece ones (`transformer.data.sentencepiece`)
both build on this module, so that neither imports the other's module at load time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class TokenizerError(ValueError):
    """A tokenizer file is missing or unusable; the message names it."""


@dataclass(frozen=True)
class SpecialIds:
    """The ids that decoding, explaining and training treat specially; each tokenizer says its own."""

    pad: int  # fills a batch's short rows; the model masks it as a key
    start: int  # the decoder's first input: <s> for our vocabularies, pad for Marian's
    eos: int  # ends the source and every output (</s>)
    unk: int  # stands for a piece the vocabulary lacks (and blanks a word in occlusion)
    never: tuple[int, ...]  # ids decoding never emits: (pad, <s>) for ours, (pad,) for Marian's (bad_words_ids)
    forced: tuple[int, ...] = ()  # every output's first tokens, given, not chosen: transformers' forced_bos_token_id
    # (a many-to-many model's target language, BART's <s>); decoding emits them with probability 1

    def __post_init__(self) -> None:
        for name in ("pad", "start", "eos", "unk"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise TokenizerError(f"special id {name} must be a non-negative integer, got {value!r}")
        if not isinstance(self.never, tuple) or not all(isinstance(i, int) and i >= 0 for i in self.never):
            raise TokenizerError(f"never must be a tuple of non-negative ids, got {self.never!r}")
        if self.eos in self.never:
            raise TokenizerError(f"eos ({self.eos}) cannot be among the ids decoding never emits {self.never}")
        if not isinstance(self.forced, tuple) or not all(isinstance(i, int) and i >= 0 for i in self.forced):
            raise TokenizerError(f"forced must be a tuple of non-negative ids, got {self.forced!r}")
        if set(self.forced) & {self.eos, *self.never}:
            raise TokenizerError(f"forced {self.forced} holds </s> or an id decoding never emits {self.never}")


class TokenizerLike(Protocol):
    """The interface the package uses of a checkpoint's tokenizer, whatever its kind."""

    kind: str
    shared: bool  # one vocabulary for source and target

    @property
    def specials(self) -> SpecialIds: ...
    @property
    def src_vocab_size(self) -> int: ...
    @property
    def tgt_vocab_size(self) -> int: ...
    def normalize(self, text: str) -> str: ...
    def encode_source(self, text: str) -> list[int]: ...  # pieces + eos
    def encode_target(self, text: str) -> list[int]: ...  # start + pieces + eos: a training target
    def decode_source(self, ids: Iterable[int]) -> str: ...
    def decode_target(self, ids: Iterable[int]) -> str: ...  # stops at eos, drops the specials
    def source_pieces(self, ids: Iterable[int]) -> list[str]: ...
    def target_pieces(self, ids: Iterable[int]) -> list[str]: ...
    def to_json(self) -> str: ...  # a JSON object with a "kind" key (see transformer.data.tokenizer.load_tokenizer)
    def save(self, path: str | Path) -> None: ...

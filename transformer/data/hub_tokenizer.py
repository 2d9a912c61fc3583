"""The tokenizers of the fairseq-family encoder-decoders on the Hugging Face Hub: M2M100, NLLB-200, mBART, mBART-50,
BART. The pieces and ids of transformers' own tokenizers, and their special tokens and language codes.

Pieces come from the folder's `tokenizer.json` (NLLB, mBART, mBART-50, BART: `tokenizers`, as transformers' fast
tokenizers cut), or from M2M100's SentencePiece model and `vocab.json` (transformers' `M2M100Tokenizer`). Around
them, each family puts its own tokens (`Layout`):

    M2M100, NLLB, mBART-50   source: [src_lang] pieces </s>     decoder: </s>, then [tgt_lang] forced
    mBART (cc25, en-ro)      source: pieces </s> [src_lang]     decoder: starts from [tgt_lang]
    BART                     source: <s> pieces </s>            decoder: </s>, then <s> forced

A forced token is transformers' `forced_bos_token_id`: the output's first token, given, not chosen (`SpecialIds.forced`;
decoding emits it with probability 1). `with_languages(src, tgt)` picks other languages among `language_codes`.

As for Marian's tokenizer (`transformer.data.sentencepiece`), user text is encoded as text: a typed `</s>` or
`fra_Latn` is pieces, never the special token. Decoding drops the special tokens (language codes included), as
`decode(ids, skip_special_tokens=True)` does.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer as Pieces

from transformer.data.languages import LanguageError, find_code
from transformer.data.sentencepiece import UNDERLINE, clean_up_tokenization, load_processor
from transformer.data.vocabulary import SpecialIds, TokenizerError
from transformer.files import write_text_atomic

KIND = "hub"
_FORMAT_VERSION = 1
SOURCE_LANGUAGE_AT = ("start", "end", None)  # where the source-language token goes
TARGET_LANGUAGE_AS = ("forced", "start", None)  # the forced first output token, or the decoder's start token


@dataclass(frozen=True)
class Layout:
    """The tokens a family puts around the pieces, and where its language codes go."""

    source_start: tuple[int, ...]  # before the pieces (BART's <s>)
    source_end: tuple[int, ...]  # after them (</s>)
    source_language: str | None  # "start" or "end": where the source-language token goes; None: no language codes
    target_language: str | None  # "forced" (forced_bos_token_id) or "start" (the decoder's start token)

    def __post_init__(self) -> None:
        if self.source_language not in SOURCE_LANGUAGE_AT or self.target_language not in TARGET_LANGUAGE_AS:
            raise TokenizerError(f"language positions {self.source_language!r}, {self.target_language!r}: expected "
                                 f"one of {SOURCE_LANGUAGE_AT} and one of {TARGET_LANGUAGE_AS}")


class SentencePieces:
    """M2M100's pieces: a SentencePiece model cuts, vocab.json numbers them (a piece it lacks is <unk>); the language
    codes and fairseq's made-up words are tokens after them (`added`)."""

    bpe = False

    def __init__(self, model: bytes, vocab: dict[str, int], added: dict[str, int], unk: int) -> None:
        self.model, self.vocab, self.added, self.unk = bytes(model), vocab, added, unk
        self.processor = load_processor(self.model, "sentencepiece.bpe.model")
        self.tokens = {**vocab, **added}
        self.special: frozenset[int] = frozenset()  # M2M100Tokenizer's are its named specials and language codes

    def encode(self, text: str) -> list[int]:
        return [self.vocab.get(piece, self.unk) for piece in self.processor.EncodeAsPieces(text)]

    def decode(self, pieces: list[str]) -> str:
        return self.processor.DecodePieces(pieces).strip()  # M2M100Tokenizer.convert_tokens_to_string

    def normalize(self, text: str) -> str:
        return self.processor.Normalize(text).replace(UNDERLINE, " ").strip()

    def to_json(self) -> dict[str, Any]:
        return {"sentencepiece": base64.b64encode(self.model).decode("ascii"), "vocab": self.vocab,
                "added": self.added}


class TokenizersPieces:
    """A tokenizer.json's pieces (its normalizer, pre-tokenizer, model and decoder), without its post-processor:
    the layout adds the special tokens."""

    def __init__(self, tokenizer_json: str) -> None:
        try:
            self.tokenizer = Pieces.from_str(tokenizer_json)
            self.bpe = json.loads(tokenizer_json)["model"]["type"] == "BPE"
        except Exception as exc:  # tokenizers raises its own exception types for a malformed file
            raise TokenizerError(f"tokenizer.json: not a tokenizers file ({type(exc).__name__}: {exc})") from exc
        self.tokenizer.encode_special_tokens = True  # "</s>" typed in the text is text
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.json = tokenizer_json
        self.tokens = self.tokenizer.get_vocab(with_added_tokens=True)
        self.special = frozenset(i for i, token in self.tokenizer.get_added_tokens_decoder().items() if token.special)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, pieces: list[str]) -> str:
        decoder = self.tokenizer.decoder
        return decoder.decode(pieces) if decoder is not None else " ".join(pieces)

    def normalize(self, text: str) -> str:
        normalizer = self.tokenizer.normalizer
        return normalizer.normalize_str(text) if normalizer is not None else text

    def to_json(self) -> dict[str, Any]:
        return {"tokenizers": self.json}


class HubTokenizer:
    """One vocabulary for both sides (these models share it), the family's `Layout`, its language codes and the
    languages chosen; the interface of `transformer.data.vocabulary.TokenizerLike`."""

    kind = KIND
    shared = True

    def __init__(self, pieces: SentencePieces | TokenizersPieces, specials: SpecialIds, layout: Layout,
                 languages: dict[str, int], *, special_ids: Iterable[int] = (), src_lang: str | None = None,
                 tgt_lang: str | None = None, clean_up_spaces: bool = False) -> None:
        self._pieces, tokens = pieces, pieces.tokens
        if sorted(tokens.values()) != list(range(len(tokens))):
            raise TokenizerError(f"the ids of its {len(tokens):,} tokens are not 0..{len(tokens) - 1} each once")
        self._by_id = {i: token for token, i in tokens.items()}
        self._base, self.layout, self._languages = specials, layout, dict(languages)
        if bool(self._languages) != (layout.source_language is not None):
            raise TokenizerError("language codes and a place for them go together")
        self._size = size = len(tokens)
        for name, i in [*dataclasses.asdict(specials).items(), *self._languages.items()]:
            for value in i if isinstance(i, (list, tuple)) else [i]:
                if not isinstance(value, int) or not 0 <= value < size:
                    raise TokenizerError(f"{name}: id {value!r} is outside the vocabulary of {size:,}")
        self._special_ids = frozenset(special_ids) | pieces.special | {specials.pad, specials.eos, specials.unk} | \
            set(languages.values())
        self.clean_up_spaces = clean_up_spaces and not pieces.bpe  # transformers skips it for BPE tokenizers
        self._clean_up_asked = clean_up_spaces
        self.src_lang = self._code(src_lang, "source") if self._languages else None
        self.tgt_lang = self._code(tgt_lang, "target") if self._languages else None

    def _code(self, asked: str | None, side: str) -> str:
        if asked is None:
            codes = self.language_codes
            raise LanguageError(f"a many-to-many model needs a {side} language: one of {', '.join(codes[:8])}"
                                f"{' ...' if len(codes) > 8 else ''}")
        return find_code(self.language_codes, asked, side)

    @property
    def language_codes(self) -> list[str]:
        """The model's language codes, in its order (empty for BART)."""
        return list(self._languages)

    def with_languages(self, src_lang: str | None = None, tgt_lang: str | None = None) -> HubTokenizer:
        """The same tokenizer translating from src_lang into tgt_lang (None keeps a side's); LanguageError for a code
        the model lacks, or for a model without language codes."""
        if not self._languages and (src_lang or tgt_lang):
            raise LanguageError(f"this model has no language codes: it cannot take --src-lang/--tgt-lang "
                                f"({src_lang or tgt_lang!r})")
        return HubTokenizer(self._pieces, self._base, self.layout, self._languages,
                            special_ids=self._special_ids, src_lang=src_lang or self.src_lang,
                            tgt_lang=tgt_lang or self.tgt_lang, clean_up_spaces=self._clean_up_asked)

    @property
    def specials(self) -> SpecialIds:
        """The ids decoding uses for the chosen target language: its token is the forced first output token
        (M2M100, NLLB, mBART-50) or the decoder's start (mBART)."""
        if self.tgt_lang is None:
            return self._base
        token = self._languages[self.tgt_lang]
        if self.layout.target_language == "start":
            return dataclasses.replace(self._base, start=token)
        return dataclasses.replace(self._base, forced=(token,))

    @property
    def src_vocab_size(self) -> int:
        return self._size

    @property
    def tgt_vocab_size(self) -> int:
        return self._size

    def normalize(self, text: str) -> str:
        return self._pieces.normalize(text)

    def encode_source(self, text: str) -> list[int]:
        """The family's source layout around the pieces, e.g. [src_lang] pieces </s>."""
        lang = [self._languages[self.src_lang]] if self.src_lang is not None else []
        where = self.layout.source_language
        return [*self.layout.source_start, *(lang if where == "start" else []), *self._pieces.encode(text),
                *self.layout.source_end, *(lang if where == "end" else [])]

    def encode_target(self, text: str) -> list[int]:
        """A training target as the decoder sees it: start, the forced tokens, the pieces, </s>."""
        s = self.specials
        return [s.start, *s.forced, *self._pieces.encode(text), s.eos]

    def _decode(self, ids: Iterable[int]) -> str:
        ids = [int(i) for i in ids]
        if self._base.eos in ids:
            ids = ids[: ids.index(self._base.eos)]
        text = self._pieces.decode([self._by_id.get(i, "<unk>") for i in ids if i not in self._special_ids])
        return clean_up_tokenization(text) if self.clean_up_spaces else text

    def decode_source(self, ids: Iterable[int]) -> str:
        return self._decode(ids)

    def decode_target(self, ids: Iterable[int]) -> str:
        """The text up to the first </s>, special tokens dropped: decode(ids, skip_special_tokens=True)."""
        return self._decode(ids)

    def source_pieces(self, ids: Iterable[int]) -> list[str]:
        return [self._by_id.get(int(i), "<unk>") for i in ids]

    def target_pieces(self, ids: Iterable[int]) -> list[str]:
        return self.source_pieces(ids)

    def to_json(self) -> str:
        return json.dumps({
            "format": _FORMAT_VERSION, "kind": KIND, "pieces": self._pieces.to_json(),
            "specials": dataclasses.asdict(self._base), "layout": dataclasses.asdict(self.layout),
            "languages": self._languages, "special_ids": sorted(self._special_ids), "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang, "clean_up_spaces": self._clean_up_asked,
        }, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, origin: str = "tokenizer JSON") -> HubTokenizer:
        try:
            data = json.loads(text)
            if data.get("format") != _FORMAT_VERSION or data.get("kind") != KIND:
                raise TokenizerError(f"unsupported format {data.get('format')!r} or kind {data.get('kind')!r}")
            s, pieces = data["specials"], data["pieces"]
            specials = SpecialIds(**{**s, "never": tuple(s["never"]), "forced": tuple(s["forced"])})
            layout = data["layout"]
            layout = Layout(tuple(layout["source_start"]), tuple(layout["source_end"]), layout["source_language"],
                            layout["target_language"])
            if "tokenizers" in pieces:
                backend = TokenizersPieces(pieces["tokenizers"])
            else:
                backend = SentencePieces(base64.b64decode(pieces["sentencepiece"], validate=True), pieces["vocab"],
                                          pieces["added"], specials.unk)
            return cls(backend, specials, layout, data["languages"], special_ids=data["special_ids"],
                       src_lang=data["src_lang"], tgt_lang=data["tgt_lang"],
                       clean_up_spaces=bool(data["clean_up_spaces"]))
        except TokenizerError as exc:
            raise TokenizerError(f"{origin}: {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
            raise TokenizerError(f"{origin}: not a valid {KIND} tokenizer ({type(exc).__name__}: {exc})") from exc

    def save(self, path: str | Path) -> None:
        """Atomic: a crash mid-write leaves the previous file intact."""
        write_text_atomic(path, self.to_json())

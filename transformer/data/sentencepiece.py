"""Marian's SentencePiece pair (the opus-mt models): the pieces and ids of transformers' `MarianTokenizer`.

A Marian model cuts the source with `source.spm` and the target with `target.spm`, two SentencePiece models, and
numbers the pieces with its own `vocab.json` (one vocabulary for both sides), or with `vocab.json` and
`target_vocab.json` when the model has separate vocabularies. The ids are not SentencePiece's: `</s>` is 0,
`<unk>` 1 and `<pad>` the last id, which is also the decoder's start token (Marian feeds no `<s>`); the source gets
no start token, only `</s>`. A piece the vocabulary lacks is `<unk>`. A leading language code (`>>fr<<`, in
multilingual models) is one piece of its own, as `MarianTokenizer` makes it.

Decoding is `MarianTokenizer.decode(ids, skip_special_tokens=True)`: the specials (`</s>`, `<unk>`, `<pad>`) are
dropped and the pieces joined by SentencePiece, by the source model when the vocabulary is shared (as
transformers does) and the target model otherwise.

One difference, on purpose: user text is encoded as text. `MarianTokenizer` turns a typed "</s>", "<unk>" or
"<pad>" into the control token (a typed "<pad>" then vanishes from the encoder's view); here they are ordinary
pieces, as in our own tokenizers (`transformer.data.tokenizer`).

The checkpoint keeps everything in its tokenizer JSON, exactly: both .spm models (base64) and the vocabularies.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sentencepiece

from transformer.data.vocabulary import SpecialIds, TokenizerError
from transformer.files import write_text_atomic

KIND = "sentencepiece"
_FORMAT_VERSION = 1
EOS, UNK, PAD = "</s>", "<unk>", "<pad>"
UNDERLINE = "▁"  # SentencePiece's space
# What `save_pretrained` writes for a MarianTokenizer, and a Hub download holds.
SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
VOCAB, TARGET_VOCAB, TOKENIZER_CONFIG = "vocab.json", "target_vocab.json", "tokenizer_config.json"
MAX_MARIAN_FILE_BYTES = 64 * 1024 * 1024  # an opus-mt .spm is 0.8 MB, its vocab.json 1.3 MB


def load_processor(model: bytes, what: str) -> sentencepiece.SentencePieceProcessor:
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except (RuntimeError, OSError, TypeError) as exc:
        raise TokenizerError(f"{what}: not a SentencePiece model ({exc})") from exc
    return processor


def _check_vocab(vocab: Any, what: str) -> dict[str, int]:
    """vocab itself when it maps pieces to the ids 0..n-1, each once, with </s>, <unk> and <pad> among them."""
    if not isinstance(vocab, dict) or not all(isinstance(k, str) and type(v) is int for k, v in vocab.items()):
        raise TokenizerError(f"{what}: expected a JSON object of piece -> integer id")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise TokenizerError(f"{what}: the ids of its {len(vocab):,} pieces are not 0..{len(vocab) - 1} each once")
    missing = [token for token in (EOS, UNK, PAD) if token not in vocab]
    if missing:
        raise TokenizerError(f"{what}: has no {', '.join(missing)} (a Marian vocabulary has </s>, <unk> and <pad>)")
    return vocab


def marian_specials(vocab: dict[str, int]) -> SpecialIds:
    """Marian's special ids: the decoder starts with <pad> and never emits it; </s> ends a sentence."""
    return SpecialIds(pad=vocab[PAD], start=vocab[PAD], eos=vocab[EOS], unk=vocab[UNK], never=(vocab[PAD],))


def remove_language_code(text: str) -> tuple[list[str], str]:
    """A leading ">>xx<<" as a piece of its own, and the rest of the text (MarianTokenizer.remove_language_code)."""
    if text.startswith(">>") and (end := text.find("<<")) != -1:
        return [text[: end + 2]], text[end + 2 :]
    return [], text


class SentencePieceTokenizer:
    """Marian's source and target SentencePiece models with its vocabularies; the interface of `Tokenizer`."""

    kind = KIND

    def __init__(self, source_model: bytes, target_model: bytes, vocab: dict[str, int],
                 target_vocab: dict[str, int] | None = None, *, specials: SpecialIds | None = None,
                 clean_up_spaces: bool = False) -> None:
        self._models = (bytes(source_model), bytes(target_model))
        self._spm_src = load_processor(self._models[0], SOURCE_SPM)
        self._spm_tgt = load_processor(self._models[1], TARGET_SPM)
        self._vocab = _check_vocab(vocab, VOCAB)
        self._target_vocab = None if target_vocab is None else _check_vocab(target_vocab, TARGET_VOCAB)
        self.shared = target_vocab is None
        tgt = self._target_vocab or self._vocab
        for token in (EOS, UNK, PAD):
            if not self.shared and self._vocab[token] != tgt[token]:
                raise TokenizerError(f"{token} is {self._vocab[token]} in {VOCAB} but {tgt[token]} in {TARGET_VOCAB}: "
                                     "one special id must serve both sides")
        self.specials = specials or marian_specials(self._vocab)
        for name in ("pad", "start", "eos", "unk"):
            if not 0 <= getattr(self.specials, name) < min(len(self._vocab), len(tgt)):
                raise TokenizerError(f"special id {name}={getattr(self.specials, name)} is outside the vocabularies")
        if any(i >= len(tgt) for i in self.specials.never):
            raise TokenizerError(f"never {self.specials.never} holds ids outside the target vocabulary")
        self.clean_up_spaces = clean_up_spaces  # tokenizer_config's clean_up_tokenization_spaces
        self._src_pieces = {i: piece for piece, i in self._vocab.items()}
        self._tgt_pieces = {i: piece for piece, i in tgt.items()}
        # decoding joins pieces with the source model when the vocabulary is shared, as MarianTokenizer does
        self._spm_decode = self._spm_src if self.shared else self._spm_tgt

    def with_specials(self, specials: SpecialIds) -> SentencePieceTokenizer:
        """The same vocabularies with other special ids (a model's config names its decoder's start token)."""
        return SentencePieceTokenizer(*self._models, self._vocab, self._target_vocab, specials=specials,
                                      clean_up_spaces=self.clean_up_spaces)

    @property
    def src_vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def tgt_vocab_size(self) -> int:
        return len(self._target_vocab or self._vocab)

    def normalize(self, text: str) -> str:
        """The text as SentencePiece sees it (NFKC, single spaces, no space at either end)."""
        code, rest = remove_language_code(text)
        normalized = self._spm_src.Normalize(rest).replace(UNDERLINE, " ").strip()
        return " ".join(code + ([normalized] if normalized else []))

    def _ids(self, text: str, processor: sentencepiece.SentencePieceProcessor, vocab: dict[str, int]) -> list[int]:
        code, rest = remove_language_code(text)
        pieces = code + processor.EncodeAsPieces(rest)
        unk = vocab[UNK]
        return [vocab.get(piece, unk) for piece in pieces]

    def encode_source(self, text: str) -> list[int]:
        """Pieces + </s> (no start token)."""
        return self._ids(text, self._spm_src, self._vocab) + [self.specials.eos]

    def encode_target(self, text: str) -> list[int]:
        """The decoder's view: start (<pad>) + pieces + </s>."""
        ids = self._ids(text, self._spm_tgt, self._target_vocab or self._vocab)
        return [self.specials.start] + ids + [self.specials.eos]

    def _decode(self, ids: Iterable[int], pieces: dict[int, str], processor: sentencepiece.SentencePieceProcessor,
                ) -> str:
        ids = [int(i) for i in ids]
        if self.specials.eos in ids:
            ids = ids[: ids.index(self.specials.eos)]
        skip = {self.specials.pad, self.specials.start, self.specials.eos, self.specials.unk}
        text = processor.DecodePieces([pieces.get(i, UNK) for i in ids if i not in skip])
        text = text.replace(UNDERLINE, " ").strip()
        return clean_up_tokenization(text) if self.clean_up_spaces else text

    def decode_source(self, ids: Iterable[int]) -> str:
        return self._decode(ids, self._src_pieces, self._spm_src)

    def decode_target(self, ids: Iterable[int]) -> str:
        """The text up to the first </s>, specials skipped: MarianTokenizer.decode(ids, skip_special_tokens=True)."""
        return self._decode(ids, self._tgt_pieces, self._spm_decode)

    def source_pieces(self, ids: Iterable[int]) -> list[str]:
        return [self._src_pieces.get(int(i), UNK) for i in ids]

    def target_pieces(self, ids: Iterable[int]) -> list[str]:
        return [self._tgt_pieces.get(int(i), UNK) for i in ids]

    def to_json(self) -> str:
        s = self.specials
        return json.dumps({
            "format": _FORMAT_VERSION,
            "kind": KIND,
            "shared": self.shared,
            "source_spm": base64.b64encode(self._models[0]).decode("ascii"),
            "target_spm": base64.b64encode(self._models[1]).decode("ascii"),
            "vocab": self._vocab,
            "target_vocab": self._target_vocab,
            "specials": {"pad": s.pad, "start": s.start, "eos": s.eos, "unk": s.unk, "never": list(s.never)},
            "clean_up_spaces": self.clean_up_spaces,
        }, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, origin: str = "tokenizer JSON") -> SentencePieceTokenizer:
        try:
            data = json.loads(text)
            if data.get("format") != _FORMAT_VERSION or data.get("kind") != KIND:
                raise TokenizerError(f"unsupported format {data.get('format')!r} or kind {data.get('kind')!r}")
            models = [base64.b64decode(data[key], validate=True) for key in ("source_spm", "target_spm")]
            s = data["specials"]
            specials = SpecialIds(pad=s["pad"], start=s["start"], eos=s["eos"], unk=s["unk"], never=tuple(s["never"]))
            if data["shared"] != (data["target_vocab"] is None):
                raise TokenizerError("shared must be true exactly when there is no target_vocab")
            return cls(*models, data["vocab"], data["target_vocab"], specials=specials,
                       clean_up_spaces=bool(data.get("clean_up_spaces", False)))
        except TokenizerError as exc:
            raise TokenizerError(f"{origin}: {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
            raise TokenizerError(f"{origin}: not a valid SentencePiece tokenizer ({type(exc).__name__}: {exc})") \
                from exc

    def save(self, path: str | Path) -> None:
        """Atomic: a crash mid-write leaves the previous file intact."""
        write_text_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> SentencePieceTokenizer:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise TokenizerError(f"{path}: tokenizer file not found") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenizerError(f"{path}: cannot read tokenizer file ({exc})") from exc
        return cls.from_json(text, origin=str(path))

    @classmethod
    def from_marian_folder(cls, folder: str | Path) -> SentencePieceTokenizer:
        """The tokenizer that transformers' `MarianTokenizer.from_pretrained(folder)` would load."""
        folder = Path(folder)
        config = _read_json(folder / TOKENIZER_CONFIG) if (folder / TOKENIZER_CONFIG).is_file() else {}
        if not isinstance(config, dict):
            raise TokenizerError(f"{folder / TOKENIZER_CONFIG}: expected a JSON object")
        separate = bool(config.get("separate_vocabs", False))
        tokens = {name: config.get(f"{name}_token", token) for name, token in (("eos", EOS), ("unk", UNK),
                                                                                ("pad", PAD))}
        if tokens != {"eos": EOS, "unk": UNK, "pad": PAD}:
            raise TokenizerError(f"{folder / TOKENIZER_CONFIG}: special tokens {tokens} differ from Marian's "
                                 f"{EOS}, {UNK}, {PAD}; not supported")
        models = [_read_bytes(folder / name) for name in (SOURCE_SPM, TARGET_SPM)]
        vocab = _check_vocab(_read_json(folder / VOCAB), str(folder / VOCAB))
        target_vocab = _check_vocab(_read_json(folder / TARGET_VOCAB),
                                                    str(folder / TARGET_VOCAB)) if separate else None
        try:
            return cls(*models, vocab, target_vocab,
                       clean_up_spaces=bool(config.get("clean_up_tokenization_spaces", False)))
        except TokenizerError as exc:
            raise TokenizerError(f"{folder}: {exc}") from exc


def _read_bytes(file: Path) -> bytes:
    if not file.is_file():
        raise TokenizerError(f"{file}: file is missing (a Marian tokenizer has {SOURCE_SPM}, {TARGET_SPM} and {VOCAB})")
    if file.stat().st_size > MAX_MARIAN_FILE_BYTES:
        raise TokenizerError(f"{file}: larger than {MAX_MARIAN_FILE_BYTES:,} bytes; refused")
    return file.read_bytes()


def _read_json(file: Path) -> Any:
    try:
        return json.loads(_read_bytes(file).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise TokenizerError(f"{file}: not valid JSON ({exc})") from exc


def clean_up_tokenization(text: str) -> str:
    """transformers' clean_up_tokenization: the space before some punctuation and English clitics removed."""
    for before, after in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                          (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(before, after)
    return text

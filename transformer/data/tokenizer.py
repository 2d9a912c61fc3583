"""Subword (BPE) or word-level vocabularies built on Hugging Face `tokenizers`.

Every vocabulary starts with the same four special tokens, <pad> <s> </s> <unk> = 0 1 2 3, which `specials`
gives to decoding, explaining and training (`SpecialIds`: other kinds of tokenizer have other ids). Text is cut
Metaspace-style: each space becomes a "▁" on the following piece, so decoding is concatenation and
`decode(encode(x)) == normalize(x)` for any text whose characters were seen in training. Punctuation is split
off as its own piece and an elided article keeps its apostrophe ("l'homme" -> "▁l'" "homme"); English contractions
split the same way ("isn't" -> "▁isn'" "t"), a price paid for one rule across languages.

User text is encoded as text: a typed "<pad>", "<s>" or "</s>" becomes ordinary pieces, never the control
token. A combining mark the vocabulary never saw (Arabic harakat typed into a model trained on undotted
text) is dropped rather than turning its word into `<unk>` pieces.

`load_tokenizer(path)` and `tokenizer_from_json(text, origin)` read a checkpoint's tokenizer of any kind: ours
(`Tokenizer`), an imported Marian one (`transformer.data.sentencepiece`) or another imported family's
(`transformer.data.hub_tokenizer`), by the JSON's "kind".
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers import Tokenizer as HFTokenizer

from transformer.data.vocabulary import SpecialIds, TokenizerError, TokenizerLike
from transformer.files import write_text_atomic

__all__ = ["KINDS", "SPECIAL_TOKENS", "SpecialIds", "Tokenizer", "TokenizerError", "TokenizerLike", "load_tokenizer",
           "tokenizer_from_json", "train_tokenizer"]

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
_PAD_ID, _BOS_ID, _EOS_ID, _UNK_ID = range(4)  # our vocabularies' own; everything else asks `specials`
_SPECIALS = SpecialIds(pad=_PAD_ID, start=_BOS_ID, eos=_EOS_ID, unk=_UNK_ID, never=(_PAD_ID, _BOS_ID))
KINDS = ("bpe", "wordlevel")
SENTENCEPIECE_KIND = "sentencepiece"  # an imported model's (transformer.data.sentencepiece)
HUB_KIND = "hub"  # an imported M2M100's, NLLB's, mBART's or BART's (transformer.data.hub_tokenizer)
_FORMAT_VERSION = 1


def _normalizer() -> normalizers.Normalizer:
    return normalizers.Sequence([
        normalizers.NFKC(),  # also turns the narrow no-break space of French "Quoi ?" into a space
        # One apostrophe and one double quote, so "l’homme" and "l'homme" share pieces.
        normalizers.Replace(Regex("[’‘ʼ`´]"), "'"),
        normalizers.Replace(Regex("[“”„]"), '"'),
        normalizers.Replace(Regex(r"\s+"), " "),
        normalizers.Strip(),
    ])


def _pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
        pre_tokenizers.Split("'", behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"▁?[^\w▁']"), behavior="isolated"),  # "▁?" keeps "▁«" one piece
    ])


def _train_one(texts: Sequence[str], kind: str, vocab_size: int, min_frequency: int) -> HFTokenizer:
    model = models.BPE(unk_token=UNK) if kind == "bpe" else models.WordLevel(unk_token=UNK)
    tok = HFTokenizer(model)
    tok.normalizer = _normalizer()
    tok.pre_tokenizer = _pre_tokenizer()
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer_cls = trainers.BpeTrainer if kind == "bpe" else trainers.WordLevelTrainer
    trainer = trainer_cls(vocab_size=vocab_size, min_frequency=min_frequency,
                          special_tokens=list(SPECIAL_TOKENS), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok


class Tokenizer:
    """Source and target vocabularies: one shared `tokenizers.Tokenizer`, or two separate ones."""

    def __init__(self, src: HFTokenizer, tgt: HFTokenizer | None, kind: str) -> None:
        for side, tok in (("source", src), ("target", tgt or src)):
            ids = [tok.token_to_id(t) for t in SPECIAL_TOKENS]
            if ids != list(range(len(SPECIAL_TOKENS))):
                raise TokenizerError(f"{side} vocabulary has special ids {ids}, expected 0..3")
        self._src, self._tgt = src, tgt or src
        for tok in (self._src, self._tgt):
            tok.encode_special_tokens = True  # "<pad>" in the text is text; specials are added by id only
        self.kind = kind
        self.shared = tgt is None
        self._marks = {id(t): _combining_marks(t) for t in (self._src, self._tgt)}

    @property
    def specials(self) -> SpecialIds:
        """<pad> <s> </s> <unk> = 0 1 2 3; decoding starts from <s> and never emits <pad> or <s>."""
        return _SPECIALS

    @property
    def src_vocab_size(self) -> int:
        return self._src.get_vocab_size()

    @property
    def tgt_vocab_size(self) -> int:
        return self._tgt.get_vocab_size()

    def normalize(self, text: str) -> str:
        """The text as the tokenizer sees it, and as decoding gives it back."""
        return self._src.normalizer.normalize_str(self._known_marks(self._src, text))

    def encode_source(self, text: str) -> list[int]:
        """The source pieces' ids and </s>: no start token on the source side."""
        return self._src.encode(self._known_marks(self._src, text), add_special_tokens=False).ids + [_EOS_ID]

    def encode_target(self, text: str) -> list[int]:
        """<s>, the target pieces' ids and </s>: a training target (the decoder reads all but the last)."""
        ids = self._tgt.encode(self._known_marks(self._tgt, text), add_special_tokens=False).ids
        return [_BOS_ID] + ids + [_EOS_ID]

    def _known_marks(self, tok: HFTokenizer, text: str) -> str:
        """text (NFKC, as the normalizer would make it) without the combining marks tok's vocabulary lacks."""
        text, known = unicodedata.normalize("NFKC", text), self._marks[id(tok)]
        return "".join(c for c in text if c in known or unicodedata.category(c) != "Mn")

    def decode_source(self, ids: Iterable[int]) -> str:
        return _decode(self._src, ids)

    def decode_target(self, ids: Iterable[int]) -> str:
        return _decode(self._tgt, ids)

    def source_pieces(self, ids: Iterable[int]) -> list[str]:
        return [self._src.id_to_token(int(i)) or UNK for i in ids]

    def target_pieces(self, ids: Iterable[int]) -> list[str]:
        return [self._tgt.id_to_token(int(i)) or UNK for i in ids]

    def to_json(self) -> str:
        return json.dumps({
            "format": _FORMAT_VERSION,
            "kind": self.kind,
            "shared": self.shared,
            "src": json.loads(self._src.to_str()),
            "tgt": None if self.shared else json.loads(self._tgt.to_str()),
        })

    @classmethod
    def from_json(cls, text: str, origin: str = "tokenizer JSON") -> Tokenizer:
        try:
            data = json.loads(text)
            if data.get("format") != _FORMAT_VERSION:
                raise TokenizerError(f"{origin}: unsupported format {data.get('format')!r}")
            if data["kind"] not in KINDS:
                raise TokenizerError(f"{origin}: unknown kind {data['kind']!r}")
            src = HFTokenizer.from_str(json.dumps(data["src"]))
            tgt = None if data["shared"] else HFTokenizer.from_str(json.dumps(data["tgt"]))
        except TokenizerError:
            raise
        except Exception as exc:  # json, key, type and tokenizers errors all mean "corrupt"
            raise TokenizerError(f"{origin}: not a valid tokenizer file ({type(exc).__name__}: {exc})") from exc
        try:
            return cls(src, tgt, data["kind"])
        except TokenizerError as exc:
            raise TokenizerError(f"{origin}: {exc}") from exc

    def save(self, path: str | Path) -> None:
        """Atomic: a crash mid-write leaves the previous file intact."""
        write_text_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """One of our vocabularies (load_tokenizer reads any kind)."""
        return cls.from_json(_read(path), origin=str(path))


def _read(path: str | Path) -> str:
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise TokenizerError(f"{path}: tokenizer file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenizerError(f"{path}: cannot read tokenizer file ({exc})") from exc


def tokenizer_from_json(text: str, origin: str = "tokenizer JSON") -> TokenizerLike:
    """A tokenizer of the kind its JSON names: SentencePiece (imported models), else ours (`Tokenizer`);
    TokenizerError for anything else or anything unreadable."""
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise TokenizerError(f"{origin}: not a valid tokenizer file ({type(exc).__name__}: {exc})") from exc
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == HUB_KIND:
        from transformer.data.hub_tokenizer import HubTokenizer

        return HubTokenizer.from_json(text, origin)
    if kind == SENTENCEPIECE_KIND:
        try:
            from transformer.data.sentencepiece import SentencePieceTokenizer
        except ImportError as exc:
            raise TokenizerError(f"{origin}: a SentencePiece tokenizer, which this installation cannot read "
                                 f"({exc})") from exc
        return SentencePieceTokenizer.from_json(text, origin)
    return Tokenizer.from_json(text, origin)  # ours, or a clear TokenizerError


def load_tokenizer(path: str | Path) -> TokenizerLike:
    """The tokenizer file at path, of whatever kind it holds (tokenizer_from_json)."""
    return tokenizer_from_json(_read(path), origin=str(path))


def _combining_marks(tok: HFTokenizer) -> frozenset[str]:
    """The nonspacing marks (category Mn) that occur in tok's vocabulary."""
    return frozenset(c for piece in tok.get_vocab() for c in piece if unicodedata.category(c) == "Mn")


def _decode(tok: HFTokenizer, ids: Iterable[int]) -> str:
    ids = [int(i) for i in ids]
    if _EOS_ID in ids:
        ids = ids[:ids.index(_EOS_ID)]
    return tok.decode(ids, skip_special_tokens=True)


def train_tokenizer(pairs: Sequence[tuple[str, str]], kind: str = "bpe", vocab_size: int = 8000,
                    shared: bool = True, min_frequency: int = 2) -> Tokenizer:
    """Learn vocabularies from (source, target) pairs; `vocab_size` applies to each side."""
    if kind not in KINDS:
        raise TokenizerError(f"unknown tokenizer kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not pairs:
        raise TokenizerError("cannot train a tokenizer on no sentence pairs")
    src_texts = [s for s, _ in pairs]
    tgt_texts = [t for _, t in pairs]
    if shared:
        return Tokenizer(_train_one(src_texts + tgt_texts, kind, vocab_size, min_frequency), None, kind)
    return Tokenizer(_train_one(src_texts, kind, vocab_size, min_frequency),
                     _train_one(tgt_texts, kind, vocab_size, min_frequency), kind)

"""What to load: `CorpusSpec` (one corpus, or a mix of parts with weights) and its JSON form.

The kinds (each loaded by `transformer.data.load.load_corpus` through its loader in transformer.data.corpora):

    bible     the bundled Bible, offline (corpora.bible; several translations per side allowed)
    teaching  generated everyday English -> French sentences with gold word links (corpora.teaching)
    tsv       a local `source<TAB>target` file (corpora.tsv)
    hf        a Hugging Face dataset (corpora.hf)
    debian    Debian's translated documentation and messages (corpora.debian)
    mix       several of the above with weights (corpora.mix)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from transformer.data.corpora.base import CorpusError
from transformer.data.corpora.bible import bible_languages
from transformer.data.corpora.mix import check_weight
from transformer.data.corpora.teaching.frames import GRAMMAR, GRAMMARS

KINDS = ("bible", "teaching", "tsv", "hf", "debian", "mix")
# Kinds whose sentences a machine without the Hub can load again from a checkpoint's recorded spec (a mix may
# still name a part that is not here: its loading then fails with CorpusError).
LOCAL_KINDS = ("bible", "teaching", "tsv", "debian", "mix")


@dataclass(frozen=True)
class CorpusSpec:
    kind: str  # one of KINDS
    src: str = "en"  # ISO code (for the Bible, a translation code is accepted too)
    tgt: str = "fr"
    src_translation: str | None = None  # Bible translation code(s), "k" or "k,2,3,4": the first is dev/test's
    tgt_translation: str | None = None
    path: str | None = None  # tsv or debian file; for hf, a local json/jsonl/csv file or saved dataset dir
    hf_name: str | None = None  # Hub dataset name, e.g. "opus_books"
    hf_config: str | None = None  # e.g. "en-fr"
    src_field: str | None = None  # None: a `translation` dict keyed by language (opus_books)
    tgt_field: str | None = None
    max_words: int | None = 100  # drop pairs longer than this on either side (a mix: each part's own)
    dedup: bool = False  # also drops train pairs that occur in dev/test (a mix: each part's own)
    seed: int = 0  # for tsv/hf random splits, the teaching corpus's sentences, a mix's sampling
    dev_fraction: float = 0.02  # only where the source has no dev split
    test_fraction: float = 0.02
    grammar: int | None = None  # teaching only: the grammar version (None: the latest; 1: the first teaching model's)
    train_pairs: int | None = None  # teaching only: train pairs to generate (None: the grammar's TEACHING_SIZES)
    parts: tuple[MixPart, ...] = ()  # kind "mix" only; build one with CorpusSpec.mix

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise CorpusError(f"unknown corpus kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if self.kind == "teaching" and (self.src, self.tgt) != ("en", "fr"):
            raise CorpusError(f"the teaching corpus is English -> French, not {self.src} -> {self.tgt}")
        if self.kind == "teaching":
            object.__setattr__(self, "grammar", GRAMMAR if self.grammar is None else self.grammar)
            if self.grammar not in GRAMMARS:
                raise CorpusError(f"unknown teaching grammar {self.grammar}; expected one of {GRAMMARS}")
        elif self.grammar is not None:
            raise CorpusError(f"only the teaching corpus has a grammar version, not a {self.kind} corpus")
        if self.train_pairs is not None and (self.kind != "teaching" or self.train_pairs < 1):
            raise CorpusError(f"train_pairs is the generated teaching corpus's train size, a positive number; "
                              f"got {self.train_pairs} for a {self.kind} corpus")
        if self.kind in ("tsv", "debian") and not self.path:
            raise CorpusError(f"a {self.kind} corpus needs `path`")
        if self.kind == "hf" and not (self.path or self.hf_name):
            raise CorpusError("an hf corpus needs `hf_name` (Hub) or `path` (local file or directory)")
        if (self.src_field is None) != (self.tgt_field is None):
            raise CorpusError("give both src_field and tgt_field, or neither")
        if not (0 <= self.dev_fraction < 1 and 0 <= self.test_fraction < 1
                and self.dev_fraction + self.test_fraction < 1):
            raise CorpusError("dev_fraction and test_fraction must be in [0, 1) and sum to less than 1")
        if self.max_words is not None and self.max_words < 1:
            raise CorpusError("max_words must be positive or None")
        if self.kind == "mix":
            self._check_mix()
        elif self.parts:
            raise CorpusError(f"only a mix has parts, not a {self.kind} corpus")

    def _check_mix(self) -> None:
        if not self.parts:
            raise CorpusError("a mix needs at least one part")
        for index, part in enumerate(self.parts):
            if part.spec.languages != (self.src, self.tgt):
                src, tgt = part.spec.languages
                raise CorpusError(f"all parts of a mix translate one language pair: the mix is {self.src} -> "
                                  f"{self.tgt}, part {index} ({part.spec.kind}) is {src} -> {tgt}")

    @property
    def languages(self) -> tuple[str, str]:
        """(source, target) language codes; a Bible's translation codes are checked and resolved."""
        if self.kind == "bible":
            return bible_languages(self.src, self.tgt, self.src_translation, self.tgt_translation)
        return self.src, self.tgt

    @classmethod
    def mix(cls, parts: list[MixPart] | tuple[MixPart, ...], seed: int = 0) -> CorpusSpec:
        """A mix of `parts`, in the languages of the first (every part must share them)."""
        if not parts:
            raise CorpusError("a mix needs at least one part")
        src, tgt = parts[0].spec.languages
        return cls(kind="mix", src=src, tgt=tgt, seed=seed, parts=tuple(parts))

    def part_index(self, key: str) -> int:
        """The part named by `key`: its index ("0") or its kind when only one part has it ("bible")."""
        if self.kind != "mix":
            raise CorpusError(f"only a model trained on a mix has parts; this one was trained on a {self.kind} corpus")
        listing = ", ".join(f"{i} ({p.spec.kind})" for i, p in enumerate(self.parts))
        if key.isdigit() and int(key) < len(self.parts):
            return int(key)
        matches = [i for i, p in enumerate(self.parts) if p.spec.kind == key]
        if len(matches) != 1:
            raise CorpusError(f"no single part {key!r} in this mix; name one by index or unique kind: {listing}")
        return matches[0]

    def for_evaluation(self) -> CorpusSpec:
        """This spec for reading its dev and test splits only, not its train split: a teaching corpus's dev and
        test are generated before train, so they do not depend on its size, and one train pair is generated
        instead of 40,000 or 200,000 (the app's first teaching view, `transformer.decoding.evaluate --split test`)."""
        if self.kind == "mix":
            parts = tuple(MixPart(part.spec.for_evaluation(), part.weight) for part in self.parts)
            return dataclasses.replace(self, parts=parts)
        return dataclasses.replace(self, train_pairs=1) if self.kind == "teaching" else self

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON as before mixes existed; `parts` only for a mix, `grammar` and `train_pairs` only when set, so
        other specs read as they always did."""
        optional = ("grammar", "train_pairs")
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("parts", *optional)}
        data |= {name: getattr(self, name) for name in optional if getattr(self, name) is not None}
        return data | ({"parts": [part.to_dict() for part in self.parts]} if self.parts else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CorpusError(f"unknown CorpusSpec keys: {', '.join(unknown)}")
        parts = data.get("parts", [])
        if not isinstance(parts, list | tuple):
            raise CorpusError(f"CorpusSpec parts must be a list, not {type(parts).__name__}")
        if data.get("kind") == "teaching" and "grammar" not in data:  # written before grammar versions existed
            data = {**data, "grammar": 1}
        try:
            return cls(**{**data, "parts": tuple(MixPart.from_dict(part) for part in parts)})
        except TypeError as exc:
            raise CorpusError(f"invalid CorpusSpec: {exc}") from exc


@dataclass(frozen=True)
class MixPart:
    """One corpus of a mix and its weight: its share of the training pairs per epoch (transformer.data.corpora.mix)."""

    spec: CorpusSpec
    weight: float = 1.0

    def __post_init__(self) -> None:
        check_weight(self.weight)
        if self.spec.kind == "mix":
            raise CorpusError("a part of a mix cannot be a mix itself")

    def to_dict(self) -> dict[str, Any]:
        return {"corpus": self.spec.to_dict(), "weight": self.weight}

    @classmethod
    def from_dict(cls, data: Any) -> MixPart:
        if not isinstance(data, dict) or set(data) - {"corpus", "weight"} or "corpus" not in data:
            raise CorpusError(f"a mix part is {{'corpus': {{...}}, 'weight': number}}, not {data!r:.80}")
        return cls(CorpusSpec.from_dict(data["corpus"]), data.get("weight", 1.0))

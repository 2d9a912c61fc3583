"""Several corpora of one language pair in one run, each with a weight: its share of the training pairs.

An epoch keeps the parts' total size N (the sum of their train sets); part i gets round(N * w_i / sum(w))
pairs: as many whole copies of its train set as fit, then a sample without repeats of the rest, drawn from
the mix's seed (the same sample every epoch and on every rerun). A weight above a part's natural share
thus repeats its pairs; one below leaves some out.

Dev: at most `MIX_DEV_PAIRS` pairs in all, the same number from each part, evenly spaced through its dev set
and interleaved (part 0, part 1, ..., part 0, ...) so that the trainer's BLEU on the first `eval_sentences`
sees every part. Test: the parts' test sets one after another; `ParallelCorpus.parts` keeps each part as
loaded (full dev and test), so that `transformer.decoding.evaluate` scores each apart.

The training command names each part as KIND[:VALUE][=WEIGHT] (`parse_mix_arg`, `format_mix_arg`).
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass
from itertools import chain, zip_longest

from transformer.data.corpora.base import CorpusError, Pair, ParallelCorpus

log = logging.getLogger(__name__)

MIX_DEV_PAIRS = 1000  # the Bible's dev set has 788: evaluation takes about as long as with one corpus


def check_weight(weight: float) -> float:
    if not (isinstance(weight, int | float) and math.isfinite(weight) and weight > 0):
        raise CorpusError(f"a mix weight must be a positive number, not {weight!r}")
    return float(weight)


@dataclass(frozen=True)
class MixArg:
    """One --mix argument: `bible=1`, `bible:k,2/l,o=2`, `tsv:data/pairs.tsv=0.5`, `teaching`."""

    kind: str
    value: str | None  # bible: SRC_CODES/TGT_CODES; tsv, debian: a path; hf: a dataset name
    weight: float = 1.0

    def __post_init__(self) -> None:
        check_weight(self.weight)


def parse_mix_arg(text: str) -> MixArg:
    """KIND[:VALUE][=WEIGHT]; the text after the last '=' is the weight, so a path holding '=' needs one."""
    part, weight = text, 1.0
    if "=" in text:
        part, _, number = text.rpartition("=")
        try:
            weight = float(number)
        except ValueError:
            raise CorpusError(f"--mix {text!r}: the weight {number!r} after '=' is not a number "
                              "(a path holding '=' needs an explicit weight, e.g. =1)") from None
    kind, colon, value = part.partition(":")
    if not kind:
        raise CorpusError(f"--mix {text!r}: expected KIND[:VALUE][=WEIGHT], e.g. bible=1 or tsv:pairs.tsv=2")
    return MixArg(kind.strip(), value if colon else None, weight)


def format_mix_arg(kind: str, value: str | None = None, weight: float = 1.0) -> str:
    return f"{kind}{'' if value is None else ':' + value}={check_weight(weight):g}"


def split_bible_value(value: str) -> tuple[str, str]:
    """"k,2,3,4/l,o,5" (or "k,2,3,4>l,o,5", quoted in a shell) -> the source and target translation codes."""
    for separator in ("/", ">"):
        src, found, tgt = value.partition(separator)
        if found and src.strip() and tgt.strip():
            return src.strip(), tgt.strip()
    raise CorpusError(f"bible:{value}: expected SOURCE_CODES/TARGET_CODES, e.g. bible:k,2,3,4/l,o,5")


def _resample(pairs: list[Pair], count: int, rng: random.Random) -> list[Pair]:
    """`count` pairs: whole copies of `pairs`, then a sample without repeats (in corpus order) for the rest."""
    copies, rest = divmod(count, len(pairs))
    return pairs * copies + [pairs[i] for i in sorted(rng.sample(range(len(pairs)), rest))]


def _spaced(pairs: list[Pair], count: int) -> list[Pair]:
    """At most `count` pairs evenly spaced through `pairs` (all of them when there are fewer)."""
    if len(pairs) <= count:
        return list(pairs)
    return [pairs[i * len(pairs) // count] for i in range(count)]


def mix_corpora(parts: list[ParallelCorpus], weights: list[float], seed: int = 0) -> ParallelCorpus:
    if not parts or len(parts) != len(weights):
        raise CorpusError("a mix needs at least one part, and one weight per part")
    first = parts[0]
    for index, part in enumerate(parts):
        if (part.src_lang, part.tgt_lang) != (first.src_lang, first.tgt_lang):
            raise CorpusError(f"all parts of a mix translate one language pair: part 0 is {first.src_lang} -> "
                              f"{first.tgt_lang}, part {index} ({part.description}) is "
                              f"{part.src_lang} -> {part.tgt_lang}")
    total, weight_sum = sum(len(p.train) for p in parts), sum(check_weight(w) for w in weights)
    train: list[Pair] = []
    shares = []
    for index, (part, weight) in enumerate(zip(parts, weights)):
        count = max(1, round(total * weight / weight_sum))
        train += _resample(part.train, count, random.Random(f"mix {seed} part {index}"))
        shares.append(f"{weight / weight_sum:.0%} {part.description}")
        log.info("mix part %d (%s): %d train pairs -> %d per epoch (x%.2f)", index, part.description,
                 len(part.train), count, count / len(part.train))
    per_part = max(1, MIX_DEV_PAIRS // len(parts))
    dev = [p for p in chain.from_iterable(zip_longest(*(_spaced(part.dev, per_part) for part in parts)))
           if p is not None]
    return ParallelCorpus(first.src_lang, first.tgt_lang, train, dev, [p for part in parts for p in part.test],
                          description="Mix: " + "; ".join(shares),
                          alignments={k: v for part in parts for k, v in part.alignments.items()},
                          possible_alignments={k: v for part in parts for k, v in part.possible_alignments.items()},
                          parts=tuple(parts))

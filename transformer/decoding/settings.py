"""How to decode: `SearchSettings` for greedy search, beam search and sampling, checked when made.

The sampling fields carry Hugging Face `generate`'s names (do_sample, temperature, top_k, top_p,
num_return_sequences as num_samples), so that a reader who knows one knows the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from transformer.arguments import Field
from transformer.decoding import bounds
from transformer.decoding.bounds import MAX_SEED  # the seed's bound, imported from here by the app

LENGTH_PENALTIES = ("gnmt", "length")


@dataclass(frozen=True)
class SearchSettings:
    beam_size: int = 1  # 1 is greedy search or sampling (`search` and `DecodingSession` switch on it)
    nbest: int = 1  # hypotheses returned per sentence, at most beam_size
    length_penalty: str = "gnmt"  # "gnmt": ((5 + len) / 6) ** alpha (Wu et al., 2016); "length": len ** alpha
    alpha: float = 0.6  # 0 ranks by total log-probability; larger values favour longer outputs
    max_len_a: float = 1.5  # at most max_len_a * source length + max_len_b output tokens, </s> included,
    max_len_b: int = 10  # and never more than the model's max_len
    candidates: int = 5  # candidate next tokens recorded per step (the step-by-step bars)
    record_steps: bool = False  # one-shot functions: keep every step's candidates and attention rows
    do_sample: bool = False  # draw each token from the model's distribution instead of taking the best
    temperature: float = 1.0  # sampling: p(w) ** (1 / temperature), renormalised; < 1 sharpens, > 1 flattens
    top_k: int = 0  # sampling: keep the k most probable tokens only (0: all)
    top_p: float = 1.0  # sampling: keep the smallest set of most probable tokens with mass >= top_p (1: all)
    seed: int = 0  # sampling: the same seed draws the same samples
    num_samples: int = 1  # sampling: independent samples per sentence, drawn side by side through one cache

    def __post_init__(self) -> None:
        for name, field in FIELDS.items():  # types and ranges first: a float beam or a NaN alpha gets past a comparison
            object.__setattr__(self, name, field.checked(name, getattr(self, name)))
        if self.nbest > self.beam_size:
            raise ValueError(f"nbest must be between 1 and beam_size ({self.beam_size}), got {self.nbest}")
        if self.max_len_a + self.max_len_b == 0:
            raise ValueError("max_len_a + max_len_b must be above 0: the output needs room for at least one token")
        if self.do_sample and self.beam_size > 1:
            raise ValueError(f"sampling draws one token at a time: beam_size must be 1 with do_sample, got "
                             f"{self.beam_size}")
        changed = [name for name, default in SAMPLING_DEFAULTS.items() if getattr(self, name) != default]
        if changed and not self.do_sample:
            raise ValueError(f"{', '.join(changed)} only apply when sampling: set do_sample=True (--sample)")

    @property
    def method(self) -> str:
        """"greedy", "beam" or "sample"."""
        return "sample" if self.do_sample else "beam" if self.beam_size > 1 else "greedy"


# Every field's type and range, checked in this order. A temperature however close to 0 is fine: sampling divides
# log-probabilities measured from the best token's, so that its limit is greedy search (transformer.decoding.sampling).
FIELDS: dict[str, Field] = {
    "beam_size": Field(int, 1, bounds.MAX_BEAM),
    "nbest": Field(int, 1, bounds.MAX_BEAM),
    "length_penalty": Field(str, choices=LENGTH_PENALTIES),
    "alpha": Field(float, 0, bounds.MAX_ALPHA),
    "max_len_a": Field(float, 0, bounds.MAX_LEN_A),
    "max_len_b": Field(int, 0, bounds.MAX_LEN_B),
    "candidates": Field(int, 1, bounds.MAX_TOP_K),
    "record_steps": Field(bool),
    "do_sample": Field(bool),
    "temperature": Field(float, 0, bounds.MAX_TEMPERATURE, above_low=True, hint=" (near 0: greedy)"),
    "top_k": Field(int, 0, bounds.MAX_TOP_K, hint=" (0 keeps every token)"),
    "top_p": Field(float, 0, 1, above_low=True, hint=" (1 keeps every token)"),
    "seed": Field(int, 0, MAX_SEED - 1),
    "num_samples": Field(int, 1, bounds.MAX_SAMPLES),
}


SAMPLING_DEFAULTS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "num_samples": 1}  # seed may stay set
DEFAULT_SETTINGS = SearchSettings()  # greedy


def length_penalty(length: int, settings: SearchSettings) -> float:
    """The divisor of a hypothesis's log-probability when hypotheses of different lengths compete."""
    base = (5 + length) / 6 if settings.length_penalty == "gnmt" else length
    return base**settings.alpha


def max_output_lengths(src_lengths: list[int], settings: SearchSettings, max_len: int) -> list[int]:
    """Per sentence: floor(a * source length + b), clipped to [1, max_len] (the positions the model knows)."""
    return [min(max(1, math.floor(settings.max_len_a * n + settings.max_len_b)), max_len) for n in src_lengths]

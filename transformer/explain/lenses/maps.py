"""The lenses by name: one call from a sentence and its output to every map a lens gives."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import torch

import transformer.explain.checks as checks
from transformer.data.tokenizer import SpecialIds
from transformer.decoding.translate import TranslationAttention
from transformer.explain.lenses.alti import alti
from transformer.explain.lenses.attention import LensMaps, attention_rollout, norm_weighted, raw, shift_att
from transformer.explain.lenses.trace import Trace, trace
from transformer.explain.lenses.value_zeroing import value_zeroing
from transformer.model.layers import Transformer

LENSES: dict[str, Callable[[Transformer, Trace], LensMaps]] = {
    "raw": raw,
    "norm": norm_weighted,
    "shift": shift_att,
    "shift_norm": lambda model, t: shift_att(model, t, norms=True),
    "rollout": attention_rollout,
    "alti": alti,
    "value_zeroing": value_zeroing,
}
LABELS = {"raw": "raw weights", "norm": "norm-weighted (Kobayashi)", "shift": "Shift-Att (Chen)",
          "shift_norm": "Shift-Att with norms", "rollout": "rollout (Abnar & Zuidema)", "alti": "ALTI+ (Ferrando)",
          "value_zeroing": "value zeroing (Mohebbi)"}
HEADLESS = frozenset(("rollout", "alti", "value_zeroing"))  # one map per layer, of all its heads together


def check_lens(lens: str) -> None:
    if lens not in LENSES:
        raise ValueError(f"unknown lens {lens!r}; one of {', '.join(LENSES)}")


@torch.no_grad()
def lens_maps(model: Transformer, src_ids: Sequence[int], output_ids: Sequence[int], lens: str, *,
              specials: SpecialIds) -> LensMaps:
    """The maps `lens` gives for source ids and the output (ending with </s>, as decoding returns it); the decoder
    reads specials.start first."""
    check_lens(lens)
    # within one app request's limits
    src_ids = checks.source_ids(model, src_ids, "src_ids", checks.MAX_SOURCE_TOKENS)
    output_ids = checks.target_ids(model, output_ids, "output_ids", checks.MAX_OUTPUT_TOKENS, read=1)
    if model.training:
        raise ValueError("the lenses read a model in eval mode (dropout off): call model.eval() first")
    return LENSES[lens](model, trace(model, src_ids, output_ids, specials=specials))


def as_attention(att: TranslationAttention, maps: LensMaps) -> TranslationAttention:
    """A translation's attention with the lens's maps in place of the raw ones (same labels, same shapes but H)."""
    as_cpu = lambda ms: [m.float().cpu() for m in ms]  # noqa: E731
    return dataclasses.replace(att, enc_self=as_cpu(maps.enc_self), dec_self=as_cpu(maps.dec_self),
                               cross=as_cpu(maps.cross))

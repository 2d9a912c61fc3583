"""The model's own translation beside a forced one ("what if the model had said X?", issue 38): each with its total
log-probability and per-piece log-probabilities (the forced pieces flagged), their cross-attention maps, and the
difference of the two maps over the rows both outputs have.

Both outputs come from the same search (`transformer.decoding.search`) with the same settings, one from the empty
prefix and one from the forced prefix; their maps from one teacher-forced pass each (`Translator.attention_maps`),
so row t of a map is the query that emitted output piece t. Decoder query t reads the start token and the pieces
before t, so the rows up to the first piece where the outputs part (`shared` + 1 of them) are equal, and the
difference is zero there.

A map of the whole outputs can only be subtracted when they have the same length. Otherwise the difference covers
the rows both outputs have (the first min(T_own, T_forced)): row t is the query that emitted piece t in each, whatever
their lengths; `note` says which rows a difference covers, or why there is none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer.decoding.prefix import Prefix
from transformer.decoding.search import DEFAULT_SETTINGS, SearchSettings, search
from transformer.decoding.translate import Translator


@dataclass(frozen=True, eq=False)
class ComparedOutput:
    """One of the two translations of a comparison."""

    text: str
    token_ids: tuple[int, ...]  # output ids, ending with </s> unless the length limit cut it
    pieces: tuple[str, ...]  # their target pieces: the rows of cross
    log_probs: tuple[float, ...]  # log p of each piece as the search scored it (a forced piece's as the model gave it)
    forced: tuple[bool, ...]  # per piece: given by the forced prefix rather than chosen
    finished: bool  # False: cut at the length limit
    cross: Tensor  # (L, H, T, S) cross-attention, rows the output pieces, columns the source pieces

    @property
    def score(self) -> float:
        """The total log-probability: the sum of the pieces' log-probabilities."""
        return sum(self.log_probs)

    def cross_map(self, layer: int, head: int | None = None) -> Tensor:
        """(T, S): one head's cross-attention in one layer, or the mean of the layer's heads (head None)."""
        return head_map(self.cross, layer, head)


@dataclass(frozen=True, eq=False)
class ForcedComparison:
    source_ids: tuple[int, ...]  # as prepared: pieces + </s>
    source_pieces: tuple[str, ...]  # the columns of every map
    prefix: tuple[int, ...]  # the forced ids
    own: ComparedOutput  # decoded from the start token alone
    forced: ComparedOutput  # decoded on from the forced prefix
    shared: int  # leading pieces the two outputs share: their rows are equal
    difference: Tensor | None  # (L, H, R, S) own - forced over the R rows both have, None when they all read the same
    note: str  # which rows the difference covers, or why there is none

    @property
    def same(self) -> bool:
        """The forced prefix is what the model would have said anyway: the outputs (and maps) are the same."""
        return self.own.token_ids == self.forced.token_ids

    @property
    def rows(self) -> int:
        """How many rows (output positions) the difference covers."""
        return 0 if self.difference is None else self.difference.shape[2]

    def difference_map(self, layer: int, head: int | None = None) -> Tensor | None:
        """(R, S): own - forced for one head in one layer, or for the mean of the layer's heads (head None)."""
        return None if self.difference is None else head_map(self.difference, layer, head)


def head_map(maps: Tensor, layer: int, head: int | None) -> Tensor:
    """maps (L, H, T, S) -> (T, S) of one head, or the mean of the heads (head None); IndexError names the range."""
    n_layers, n_heads = maps.shape[:2]
    if not 0 <= layer < n_layers:
        raise IndexError(f"layer must be between 0 and {n_layers - 1}, got {layer}")
    if head is None:
        return maps[layer].mean(0)
    if not 0 <= head < n_heads:
        raise IndexError(f"head must be between 0 and {n_heads - 1}, got {head}")
    return maps[layer, head]


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids a and b share."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def compare_forced(translator: Translator, source: str | Sequence[int], prefix: Prefix,
                   settings: SearchSettings = DEFAULT_SETTINGS) -> ForcedComparison:
    """The model's own translation of source (a text, or its prepared ids: pieces + </s>) and the one forced to start
    with prefix (a target text or piece ids), decoded with the same settings (the best hypothesis of each); ValueError
    for a prefix the model cannot be made to emit (`transformer.decoding.prefix`), TranslationError for a source with
    nothing to translate."""
    source_ids = translator.prepare(source).ids if isinstance(source, str) else list(source)
    if not source_ids:
        raise ValueError("source: no source ids to translate")
    ids = translator.prefix_ids(prefix)
    if not ids:
        raise ValueError("prefix: no pieces to force; give a target text or piece ids")
    settings = dataclasses.replace(settings, record_steps=False)
    src = torch.tensor([source_ids], device=translator.device)  # (1, S)
    forced = _output(translator, source_ids, src, settings, ids)  # first: its search checks the prefix (check_prefix)
    own = _output(translator, source_ids, src, settings, [])
    shared = shared_prefix(own.token_ids, forced.token_ids)
    difference, note = _difference(own, forced, shared)
    return ForcedComparison(tuple(source_ids), tuple(translator.tokenizer.source_pieces(source_ids)), tuple(ids), own,
                            forced, shared, difference, note)


def _output(translator: Translator, source_ids: list[int], src: Tensor, settings: SearchSettings,
            prefix: list[int]) -> ComparedOutput:
    best = search(translator.model, src, settings, specials=translator.specials, prefix=prefix)[0].best
    maps = translator.attention_maps(source_ids, best.tokens)
    cross = torch.stack([m.float().cpu() for m in maps.cross])  # n_layers x (H, T, S) -> (L, H, T, S)
    return ComparedOutput(translator.tokenizer.decode_target(best.tokens), tuple(best.tokens),
                          tuple(maps.target_pieces), tuple(best.log_probs),
                          tuple(i < len(translator.specials.forced) + len(prefix) for i in range(len(best.tokens))),
                          best.finished, cross)


def _difference(own: ComparedOutput, forced: ComparedOutput, shared: int) -> tuple[Tensor | None, str]:
    """own - forced over the rows that can be compared, and the note saying which."""
    t_own, t_forced = len(own.token_ids), len(forced.token_ids)
    if own.token_ids == forced.token_ids:
        return own.cross - forced.cross, ("The forced prefix is what the model would have said: the two outputs are "
                                          "the same piece for piece, and so are their maps (the difference is 0).")
    # a query reads the pieces before it: the rows up to the first piece that differs read the same prefix
    equal = min(shared + 1, t_own, t_forced)
    same_rows = ("The first row is equal: its query read the same pieces in both. " if equal == 1 else
                 f"The first {equal} rows are equal: their queries read the same pieces in both. ")
    if t_own == t_forced:
        return own.cross - forced.cross, same_rows + f"Both have {t_own} pieces: the difference covers every row."
    rows = min(t_own, t_forced)  # the rows both outputs have: query t of each emitted its piece t
    longer, extra = "own" if t_own > t_forced else "forced", abs(t_own - t_forced)
    rest = "last row has" if extra == 1 else f"last {extra} rows have"
    note = (f"The outputs have {t_own} and {t_forced} pieces: the difference covers the first {rows} rows, the ones "
            f"both have; the {longer} output's {rest} no counterpart")
    if rows <= equal:
        return None, note + ", and those rows read the same pieces in both: no difference to draw."
    return own.cross[:, :, :rows] - forced.cross[:, :, :rows], same_rows + note + "."  # (L, H, rows, S)

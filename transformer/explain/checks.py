"""The argument checks every public explain function runs first: one error type (`ValueError`), whose message
names the argument and the range it must lie in, before any tensor is built.

The bounds on work are the app's request limits (the app reads MAX_SOURCE_TOKENS and MAX_ZEROED from here;
`ui.shared.models.translation_gate.OUTPUT_LIMIT` is
derived from the first, and a test holds it equal), so that a researcher's
call costs at most what one app request may: the methods that re-run the model once per token, path point or head
(attribution, patching, value zeroing) take inputs up to these lengths; the single passes (teacher forcing, the
logit lens, Eq. 1 for a cell) up to the model's max_len.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

import numpy as np

MAX_SOURCE_TOKENS = 100  # source pieces, </s> included: about 75 English words with the shipped models' vocabularies
MAX_OUTPUT_TOKENS = 160  # output pieces: the app's (ui.shared.models.translation_gate.OUTPUT_LIMIT)
MAX_ZEROED = 120  # source and output pieces together for value zeroing: longer would keep an app slot too long
MAX_STEPS = 500  # integrated gradients' path points: the app offers up to 200; 256 reach a 1% gap on the tests' models


def integer(value, name: str, low: int, high: int | None = None) -> int:
    """value as an int when it is an integer (not a bool, a float or a string) from low to high (None: no top)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)  # ints, numpy and one-element torch integers; never a float or a string
    except TypeError:
        shown = repr(value)
        raise ValueError(f"{name} must be an integer {_range(low, high)}, got "
                         f"{shown if len(shown) <= 40 else shown[:40] + '…'}") from None
    if number < low or (high is not None and number > high):
        raise ValueError(f"{name} must be an integer {_range(low, high)}, got {number}")
    return number


def _range(low: int, high: int | None) -> str:
    return f"of at least {low}" if high is None else f"from {low} to {high}"


def position(value, name: str, length: int) -> int:
    """value as an int when it is a position of a sequence of `length` items (0 to length - 1; -1 is refused:
    counting from the end would quietly pick the last one)."""
    if length < 1:
        raise ValueError(f"{name} needs a non-empty sequence to point into")
    return integer(value, name, 0, length - 1)


def token_ids(ids, name: str, vocab_size: int, limit: int, why: str = "") -> list[int]:
    """ids as a list of ints: 1 to `limit` of them (`why` says where the limit comes from), each a token of a
    vocabulary of vocab_size."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise ValueError(f"{name} must be a sequence of token ids, got {type(ids).__name__}")
    ids = list(ids)
    if not 1 <= len(ids) <= limit:
        raise ValueError(f"{name} must hold 1 to {limit} token ids{why}, got {len(ids)}")
    for i, token in enumerate(ids):
        ids[i] = integer(token, f"{name}[{i}]", 0, vocab_size - 1)
    return ids


def source_ids(model, ids, name: str = "source_ids", limit: int | None = None) -> list[int]:
    """Source token ids of model's vocabulary, at most `limit` (default: the model's max_len) and max_len."""
    max_len = model.config.max_len
    limit = max_len if limit is None else min(limit, max_len)
    why = " (the model's max_len)" if limit == max_len else " (the app's limit on one request)"
    return token_ids(ids, name, model.config.src_vocab_size, limit, why)


def target_ids(model, ids, name: str, limit: int | None = None, read: int = 0) -> list[int]:
    """Target token ids of model's vocabulary, at most `limit` (default: none but max_len); the decoder reads
    len(ids) + read positions, which must fit in max_len."""
    max_len = model.config.max_len - read
    limit = max_len if limit is None else min(limit, max_len)
    why = (f" (the decoder reads {read} more, and the model's max_len is {model.config.max_len})" if read else
           " (the model's max_len)") if limit == max_len else " (the app's limit on one request)"
    return token_ids(ids, name, model.config.tgt_vocab_size, limit, why)


def target_token(model, value, name: str) -> int:
    """A token id of model's target vocabulary."""
    return integer(value, name, 0, model.config.tgt_vocab_size - 1)


def layer_index(value, name: str, n_layers: int) -> int:
    if n_layers < 1:
        raise ValueError(f"{name}: there are no layers to pick from")
    return integer(value, name, 0, n_layers - 1)


def indices(values: Sequence[int] | None, name: str, count: int) -> list[int] | None:
    """Each of values (None: every one) an integer from 0 to count - 1."""
    if values is None:
        return None
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a list of integers from 0 to {count - 1}, got {values!r}")
    return [integer(v, f"{name}[{i}]", 0, count - 1) for i, v in enumerate(values)]


def finite_weights(maps: np.ndarray, name: str = "weights", dims: Sequence[str] = ("layer", "head")) -> None:
    """ValueError naming where `maps` first holds a NaN or an infinity (by its leading `dims`): a NaN weight
    would draw nothing, and say nothing."""
    bad = ~np.isfinite(maps)
    if bad.any():
        where = np.argwhere(bad)[0]
        at = ", ".join(f"{dim} {i}" for dim, i in zip(dims, where))
        raise ValueError(f"{name} must be finite numbers, but {at} holds {maps[tuple(where)]}")

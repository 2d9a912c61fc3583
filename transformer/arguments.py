"""The values that commands and the API are given, checked alike: one checker of a value's type and range
(`Field`, one ValueError naming the value and what it accepts), numbers that begin with "-" on a command line
(`parse_args`), and the bound on CPU threads (`check_threads`).

Nothing here imports torch: the training command plans its threads before torch starts its own.
"""

from __future__ import annotations

import argparse
import math
import numbers
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# --threads is bounded by the usable cores times this: more threads than that only wait for each other, and
# 100,000 of them crashed torch (a segmentation fault after 10.8 s, issue 41 item 11)
THREADS_PER_CORE = 4


def shown(value: object, limit: int = 20) -> str:
    """value in an error message, cut to `limit` characters (the repr of a 5,000-digit int raises ValueError)."""
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} too long to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def real_number(value: object) -> bool:
    """An int or a float (numpy's scalars too). Not a bool, a complex, a string, a Decimal or a Fraction: they
    compare with numbers but compute differently (a Decimal meets a float tensor with a TypeError)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real)
                                                   and not isinstance(value, numbers.Rational))


@dataclass(frozen=True)
class Field:
    """What one value accepts, and how it is stored: `checked(name, value)`."""

    kind: type  # int: a whole number (4 and 4.0, stored as 4); float: a finite real number; bool; str
    low: float = 0
    high: float = math.inf
    above_low: bool = False  # low itself is refused (a temperature, top_p)
    below_high: bool = False  # high itself is refused (label smoothing 1 would leave no signal)
    choices: tuple[str, ...] = ()  # str: the values allowed
    optional: bool = False  # None is allowed (and means the field's default behaviour)
    hint: str = ""  # appended to the range, e.g. " (0 keeps every token)"

    def describe(self) -> str:
        if self.kind is bool:
            return "True or False"
        if self.kind is str:
            return f"one of {self.choices}"
        low, high = (f"{self.low:,}", f"{self.high:,}") if self.kind is int else (f"{self.low:g}", f"{self.high:g}")
        what = "a whole number" if self.kind is int else "a number"
        if not self.above_low and not self.below_high:
            return f"{what} from {low} to {high}"
        above, below = "above" if self.above_low else "from", "below" if self.below_high else "at most"
        return f"{what} {above} {low}, {below} {high}"

    def checked(self, name: str, value: Any) -> Any:
        """value as stored (an int field's 4.0 as 4, so that seed 1.0 draws what seed 1 draws), or one ValueError
        that names the value, what it accepts and what it got."""
        if value is None and self.optional:
            return None
        problem = ValueError(f"{name} must be {self.describe()}{self.hint}, got {shown(value)}")
        if self.kind is bool or self.kind is str:
            if isinstance(value, bool) if self.kind is bool else (isinstance(value, str) and value in self.choices):
                return value
            raise problem
        if not real_number(value):
            raise problem
        try:
            if self.kind is int and not isinstance(value, numbers.Integral) and not float(value).is_integer():
                raise problem  # 1.5, inf, nan
            number = int(value) if self.kind is int else float(value)  # float(10**400): OverflowError
        except (OverflowError, ValueError):
            raise problem from None
        above = self.low < number if self.above_low else self.low <= number
        below = number < self.high if self.below_high else number <= self.high
        if not (above and below) or (self.kind is float and not math.isfinite(number)):
            raise problem  # nan fails every comparison
        return number


# ----------------------------------------------------------------------------- command lines


def number(text: str) -> int | float:
    """argparse type of a number flag: the text as an int or a float, ranges left to a Field (so that "1e20"
    steps and "-inf" get the range message rather than argparse's "invalid int value")."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text, 40)}") from None


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parser.parse_args(argv), where a flag that takes one value may be given a number that begins with "-":
    argparse reads "-inf" or "-1e-3" as an option and stops with "expected one argument", so that
    `--temperature -inf` never reached the range check; `--temperature=-inf` did."""
    args = list(sys.argv[1:] if argv is None else argv)
    takes_one = {option for action in parser._actions if action.option_strings and action.nargs is None
                 and action.type is not None for option in action.option_strings}
    joined: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in takes_one and i + 1 < len(args) and args[i + 1].startswith("-") and _is_number(args[i + 1]):
            joined.append(f"{args[i]}={args[i + 1]}")
            i += 2
        else:
            joined.append(args[i])
            i += 1
    return parser.parse_args(joined)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- CPU threads


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (taskset, cgroups' cpusets), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def max_threads() -> int:
    """The most CPU threads a command may ask for here: the usable cores times THREADS_PER_CORE."""
    return usable_cores() * THREADS_PER_CORE


def check_threads(value: Any, name: str = "--threads") -> int:
    """value as a thread count from 1 to max_threads(), or a ValueError naming `name` and the range."""
    cores = usable_cores()
    field = Field(int, 1, max_threads(), hint=f" ({THREADS_PER_CORE} per usable core; this machine lets this "
                                                f"process use {cores})")
    return field.checked(name, value)


def thread_count(text: str) -> int:
    """argparse type of a --threads flag: check_threads on the number given."""
    try:
        return check_threads(number(text), "the thread count")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None

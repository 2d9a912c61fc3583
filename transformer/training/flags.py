"""The range of every number a training run is given, in one table: `TrainConfig` and `TokenizerSettings` check
their fields with it (run.json, resumes, the API), the command line checks its flags with it before anything is
written, and the Train page's form takes its fields' bounds from it.

Model sizes are ModelConfig's to check (transformer.model.config.LIMITS), the corpus's CorpusSpec's; the command
line checks both before anything is written too (training.cli.spec_from_args).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from transformer.arguments import Field, check_threads

MAX_STEPS = 10**9
MAX_SECONDS = 7 * 24 * 3600.0  # a week: the longest a rank of a distributed run may wait for the others

RANGES: dict[str, Field] = {
    # TrainConfig
    "lr": Field(float, 0, 10, above_low=True),
    "warmup_steps": Field(int, 0, MAX_STEPS),
    "label_smoothing": Field(float, 0, 1, below_high=True, hint=" (Section 5.4 uses 0.1)"),
    "clip_grad_norm": Field(float, 0, 1e9, hint=" (0 disables clipping)"),
    "max_tokens": Field(int, 1, 10**8),
    "accumulation": Field(int, 1, 10**4),
    "max_steps": Field(int, 1, MAX_STEPS),
    "max_epochs": Field(int, 1, 10**6, optional=True),
    "log_every": Field(int, 1, MAX_STEPS),
    "eval_every": Field(int, 1, MAX_STEPS),
    "save_every": Field(int, 1, MAX_STEPS),
    "keep_last": Field(int, 0, 10**6, hint=" (0 keeps only latest and best)"),
    "eval_sentences": Field(int, 1, 10**6),
    "weight_decay": Field(float, 0, 10),
    "seed": Field(int, 0, 2**32 - 1),
    "threads": Field(int, 1, 10**6, optional=True),  # the command line bounds it by the cores (check_threads)
    # TokenizerSettings: the 4 special pieces and a few more (a 1-piece vocabulary failed with "Missing [UNK]")
    "vocab_size": Field(int, 8, 1_000_000),
    "min_frequency": Field(int, 1, 10**9),
    # the command line's own
    "start_timeout": Field(float, 0, MAX_SECONDS, above_low=True),
    "collective_timeout": Field(float, 0, MAX_SECONDS, above_low=True),
    "nice": Field(int, 0, 19, hint=" (Unix nice: 0 keeps the priority, 19 is the lowest)"),
}


def check_fields(config: Any, names: Iterable[str]) -> None:
    """Check (and store, a whole float as an int) each named field of a frozen dataclass against RANGES."""
    for name in names:
        object.__setattr__(config, name, RANGES[name].checked(name, getattr(config, name)))


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_args(args: argparse.Namespace) -> None:
    """Every flag of the training command that RANGES bounds, and --threads by this machine's cores: a ValueError
    naming the flag and its range, before anything is written. Whole numbers are stored back as ints."""
    for name, field in RANGES.items():
        value = getattr(args, name, None)
        if value is not None:
            setattr(args, name, field.checked(flag(name), value))
    if getattr(args, "threads", None) is not None:
        args.threads = check_threads(args.threads)

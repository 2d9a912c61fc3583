"""Progress for the command-line entry points: a tqdm bar on a terminal, plain log lines otherwise.

When stderr is not a terminal (CI, nohup, a redirected log) a bar's carriage returns would make the log
unreadable, so the same progress goes out as a log line now and then. Only the CLIs (train, evaluate,
translate) use this module: the library reports progress through its metric records and callbacks.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from tqdm import tqdm

PROGRESS = "progress"  # a log record with this attribute set is drawn by the bar on a terminal, not printed


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether stream (default sys.stderr) is a terminal that can draw a bar."""
    stream = sys.stderr if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or foreign stream
        return False


class BarSafeHandler(logging.StreamHandler):
    """Log lines printed above a live tqdm bar (tqdm.write), leaving out the records the bar shows itself."""

    def __init__(self, stream: TextIO | None = None):
        super().__init__(sys.stderr if stream is None else stream)
        self.addFilter(lambda record: not getattr(record, PROGRESS, False))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=self.stream)
        except Exception:  # noqa: BLE001 - as logging.StreamHandler does
            self.handleError(record)


class Counter:
    """A `progress(done, total)` callback: a tqdm bar on a terminal, else a log line at each tenth done."""

    def __init__(self, desc: str, logger: logging.Logger, *, unit: str = "sentence", terminal: bool | None = None):
        self.desc, self.log, self.unit = desc, logger, unit
        self.terminal = is_terminal() if terminal is None else terminal
        self.bar: tqdm | None = None
        self.tenths = 0

    def __call__(self, done: int, total: int) -> None:
        if self.terminal:
            if self.bar is None:
                self.bar = tqdm(total=total, desc=self.desc, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
            self.bar.update(done - self.bar.n)
        elif (tenths := done * 10 // max(total, 1)) > self.tenths:
            self.tenths = tenths
            self.log.info("%s: %d/%d %ss (%d%%)", self.desc, done, total, self.unit, 100 * done // max(total, 1))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Counter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

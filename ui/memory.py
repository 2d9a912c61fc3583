"""Giving freed memory back to the operating system, so that a server returns to its idle size after a class
leaves. No streamlit.

glibc's malloc keeps the pages of freed blocks inside its heaps: after four users translated long texts, the
server's resident size stayed about 90 MiB above its idle level although the objects were gone. `malloc_trim(0)`
hands every whole free page back. A daemon thread does that every TRIM_EVERY seconds, after a garbage
collection, once per process. That collection is also the server's only forced one: Streamlit's own after every
script run (0.13 s of a translation's CPU, the interpreter held meanwhile) is off in .streamlit/config.toml.
Elsewhere than glibc (musl, macOS, a preloaded jemalloc) trimming is a no-op.

Trimming cannot undo the other cause: Streamlit runs every script run in a new thread, and glibc gives threads
arenas of their own (up to 8 per core, 18 in a server four users had used), each keeping its own free pages. The
limit has to be set before the server starts its first thread, so it is the environment's: the README's start
command and `attention-explorer` set MALLOC_ARENA_MAX=2 (3 arenas then, and back below the idle size after four
users left: BENCHMARKS.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time

log = logging.getLogger(__name__)

TRIM_EVERY = 30.0  # seconds
_started = threading.Event()


def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


def trim() -> bool:
    """Collect garbage and return free heap pages to the OS; False where the C library cannot."""
    gc.collect()
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))


def _loop(every: float) -> None:
    while True:
        time.sleep(every)
        try:
            trim()
        except Exception:  # a trimmer that dies must not take the server with it
            log.exception("malloc_trim failed; memory is no longer trimmed")
            return


def start_trimming(every: float = TRIM_EVERY) -> bool:
    """Start the trimming thread unless it runs already; True when this call started it."""
    if _MALLOC_TRIM is None or _started.is_set():
        return False
    _started.set()
    threading.Thread(target=_loop, args=(every,), name="malloc-trim", daemon=True).start()
    return True

"""Giving freed memory back to the operating system: a server returns to its idle size after a class leaves, and a
training run stays at its working size. No streamlit.

glibc's malloc keeps the pages of freed blocks inside its heaps. After four users translated long texts, the
server's resident size stayed about 90 MiB above its idle level although the objects were gone; a training run of
the small preset (bucketed batches of varying shapes, bf16 copies) grew to 5.8 GB in 7 minutes and 10.6 GB by step
1,900. `malloc_trim(0)` hands every whole free page back. A daemon thread does that every `every` seconds, once per
process: the app's every 30 s after a garbage collection (the server's only forced one: Streamlit's own after every
script run, 0.13 s of a translation's CPU with the interpreter held, is off in .streamlit/config.toml), the
trainer's every TRAINING_TRIM_EVERY seconds without one. It is stopped and joined at the process's exit, so that
it is never in a collection or in the C library while the interpreter finalises. Elsewhere than glibc (musl,
macOS, a preloaded jemalloc) trimming is a no-op.

Trimming cannot undo the server's other cause: Streamlit runs every script run in a new thread, and glibc gives
threads arenas of their own (up to 8 per core, 18 in a server four users had used), each keeping its own free
pages. The limit has to be set before the server starts its first thread, so it is the environment's: the README's
start command and `attention-explorer` set MALLOC_ARENA_MAX=2 (3 arenas then, and back below the idle size after
four users left: BENCHMARKS.md).
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import gc
import logging
import threading

log = logging.getLogger(__name__)

TRIM_EVERY = 30.0  # seconds, the app's
TRAINING_TRIM_EVERY = 15.0  # seconds, a training run's
EXIT_WAIT = 5.0  # seconds the exit waits for a trim under way
_started = threading.Event()
_stop = threading.Event()


def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


def trim(collect: bool = True) -> bool:
    """Collect garbage (unless told not to) and return free heap pages to the OS; False where the C library cannot."""
    if collect:
        gc.collect()
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))


def _loop(every: float, collect: bool) -> None:
    while not _stop.wait(every):
        try:
            trim(collect)
        except Exception:  # a trimmer that dies must not take the server with it
            log.exception("malloc_trim failed; memory is no longer trimmed")
            return


def start_trimming(every: float = TRIM_EVERY, *, collect: bool = True) -> bool:
    """Start the trimming thread unless it runs already; True when this call started it."""
    if _MALLOC_TRIM is None or _started.is_set():
        return False
    _started.set()
    thread = threading.Thread(target=_loop, args=(every, collect), name="malloc-trim", daemon=True)
    thread.start()
    atexit.register(_stop_trimming, thread)
    return True


def _stop_trimming(thread: threading.Thread) -> None:
    _stop.set()
    thread.join(EXIT_WAIT)

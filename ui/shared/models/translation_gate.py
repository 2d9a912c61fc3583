"""The pages' gate to the `Translator`: the app's limits on the work one request may ask for, the server-wide cap
on decodes running at once, the translations the server keeps (`RECENT`: a page opened again decodes nothing), and
the app's own wording for input it cannot translate. No streamlit.

Limits (README, "Limits"): at most MAX_CHARS characters and MAX_SOURCE_TOKENS source pieces, refused before any
decoding with a message that says so; at most OUTPUT_LIMIT output pieces, and as many for a typed reference
translation (`reference_ids`, checked before any mask is built); at most DECODE_SLOTS decodes at once in
one server, shared by every session (each on one CPU thread). A request that finds every slot taken waits, with a
message on its page, for up to WAIT_TIMEOUT seconds, then is told the server is busy.

Background work (a split's table, head importance) runs in daemon threads started with `start_background`: at the
process's exit (the end of a script, Ctrl+C or SIGTERM of `streamlit run`) each is asked to stop and waited for, up
to EXIT_WAIT seconds in all. A daemon thread still inside torch when the interpreter finalises aborts the process
("terminate called without an active exception", SIGABRT): Python ends such a thread with pthread_exit as it takes
the GIL back, and the unwinding meets a C++ destructor that may not throw.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from transformer.data.corpora.base import normalize_text
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Source, Translation, TranslationError, Translator, check_text
from transformer.explain.checks import MAX_SOURCE_TOKENS  # the explain API takes what one request may
from ui.shared.models.recent import Recent

MAX_CHARS = 1000  # a long sentence; the same cap as a link's text (ui.shared.state.links.MAX_TEXT)
MAX_LEN_A, MAX_LEN_B = 1.5, 10  # output <= a * source + b pieces, the package's defaults, never more here
OUTPUT_LIMIT = math.floor(MAX_LEN_A * MAX_SOURCE_TOKENS + MAX_LEN_B)  # 160 pieces
DECODE_SLOTS = int(os.environ.get("EXPLORER_DECODE_SLOTS") or 2)  # one per core of a 2-core machine
WAIT_TIMEOUT = float(os.environ.get("EXPLORER_DECODE_WAIT") or 60)  # seconds a request waits for a slot
DECODE_THREADS = 1  # torch threads: slots run side by side, each on one core, rather than fight over both
EXIT_WAIT = 20.0  # seconds the exit waits for background work to stop (it stops within a sentence or a head)
STOP_POLL = 0.2  # seconds between two looks at a stop event while waiting for a slot

log = logging.getLogger(__name__)

OnWait = Callable[[int, int], None]  # (decodes running, requests waiting including this one)


class ServerBusy(TranslationError):
    """Every decode slot stayed taken for WAIT_TIMEOUT seconds."""


class Stopped(TranslationError):
    """Background work was asked to stop (a user's Stop, or the server shutting down)."""


class DecodeLimiter:
    """At most `slots` decodes at once across every session of the server; the others wait their turn."""

    def __init__(self, slots: int, timeout: float = WAIT_TIMEOUT):
        if slots < 1:
            raise ValueError(f"a limiter needs at least one slot, got {slots}")
        self.slots, self.timeout = slots, timeout
        self._free = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self.running = 0
        self.waiting = 0

    @contextmanager
    def slot(self, on_wait: OnWait | None = None, timeout: float | None = None,
             stop: threading.Event | None = None) -> Iterator[None]:
        """Hold a slot for the block; when none is free, call on_wait(running, waiting) once, then wait (Stopped
        once stop is set)."""
        if not self._free.acquire(blocking=False):
            with self._lock:
                self.waiting += 1
                running, waiting = self.running, self.waiting
            try:
                if on_wait is not None:
                    on_wait(running, waiting)
                got = self._acquire(self.timeout if timeout is None else timeout, stop)
            finally:
                with self._lock:
                    self.waiting -= 1
            if not got:
                raise ServerBusy(f"The server is busy: {self.slots} translations were running the whole time you "
                                 "waited. Try again in a minute.")
        with self._lock:
            self.running += 1
        try:
            yield
        finally:
            with self._lock:
                self.running -= 1
            self._free.release()

    def _acquire(self, timeout: float, stop: threading.Event | None) -> bool:
        if stop is None:
            return self._free.acquire(timeout=timeout)
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            if self._free.acquire(timeout=max(0.0, min(STOP_POLL, deadline - time.monotonic()))):
                return True
            if time.monotonic() >= deadline:
                return False
        raise Stopped("stopped before it began, while it waited for a decode slot")


LIMITER = DecodeLimiter(DECODE_SLOTS)


def decode_slot(on_wait: OnWait | None = None, stop: threading.Event | None = None) -> AbstractContextManager[None]:
    """One of the server's decode slots, for model work other than `translate` (the step-by-step page, background
    work: waiting for it ends with Stopped once stop is set)."""
    return LIMITER.slot(on_wait, stop=stop)


@dataclasses.dataclass(frozen=True)
class Background:
    """A background work's thread and the event that asks it to stop."""

    thread: threading.Thread
    stop: threading.Event

    @property
    def running(self) -> bool:
        return self.thread.is_alive()


_background: set[Background] = set()  # the process's running background work, stopped at its exit
_background_lock = threading.Lock()


def start_background(name: str, work: Callable[[threading.Event], None]) -> Background:
    """work(stop) in a daemon thread, which the process asks to stop and waits for at its exit (`stop_background`).
    work checks stop between sentences, heads or other small steps and returns soon after it is set."""
    stop = threading.Event()

    def run() -> None:
        try:
            work(stop)
        finally:
            with _background_lock:
                _background.discard(handle)

    handle = Background(threading.Thread(target=run, name=name, daemon=True), stop)
    with _background_lock:
        _background.add(handle)
    handle.thread.start()
    return handle


def stop_background(timeout: float | None = None) -> list[str]:
    """Ask every running background work to stop and wait for it, timeout seconds at most in all (EXIT_WAIT unless
    told); the names of the threads still running then."""
    timeout = EXIT_WAIT if timeout is None else timeout
    with _background_lock:
        running = list(_background)
    for work in running:
        work.stop.set()
    deadline = time.monotonic() + timeout
    for work in running:
        work.thread.join(max(0.0, deadline - time.monotonic()))
    return sorted(work.thread.name for work in running if work.thread.is_alive())


def _stop_background_at_exit() -> None:
    left = stop_background()
    if left:  # better an exit status than a SIGABRT and a core file
        log.error("background work %s did not stop within %g s; exiting without finalising", ", ".join(left),
                  EXIT_WAIT)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


atexit.register(_stop_background_at_exit)


def bounded(settings: SearchSettings) -> SearchSettings:
    """settings with the app's output bound: at most OUTPUT_LIMIT pieces for a source at the limit."""
    return dataclasses.replace(settings, max_len_a=min(settings.max_len_a, MAX_LEN_A),
                               max_len_b=min(settings.max_len_b, MAX_LEN_B))


def check_length(text: str) -> None:
    """TranslationError before any work when text is longer than the app takes."""
    if len(text) > MAX_CHARS:
        raise TranslationError(f"That is {len(text):,} characters; the app translates at most {MAX_CHARS:,} at a "
                               "time. Try one sentence (the command-line translator, python -m "
                               "transformer.decoding.translate, takes longer texts).")  # no Markdown: shown escaped


def _check_characters(text: str) -> None:
    try:
        check_text(text)
    except TranslationError:
        raise TranslationError("The text holds a broken character (a lone UTF-16 surrogate, as left by a bad "
                               "copy and paste); retype it.") from None


def reference_ids(translator: Translator, text: str) -> list[int]:
    """A typed reference translation as target ids (</s> last, no <s>: what teacher forcing scores), within the
    app's limits (MAX_CHARS characters, OUTPUT_LIMIT pieces and the model's max_len), or TranslationError in the
    page's words. Checked before any work: scoring it builds (T, T) masks and maps."""
    check_length(text)
    _check_characters(text)
    ids = translator.tokenizer.encode_target(normalize_text(text))[1:]
    limit = min(OUTPUT_LIMIT, translator.model.config.max_len)
    if len(ids) > limit:
        raise TranslationError(f"That reference is {len(ids)} pieces long for this model; the app scores at most "
                               f"{limit}. Try a shorter one.")
    return ids


def prepare(translator: Translator, text: str) -> Source:
    """The Translator's source of text within the app's limits, or TranslationError in the page's words."""
    check_length(text)
    _check_characters(text)
    try:
        source = translator.prepare(text)
    except TranslationError:  # the Translator's only other one: nothing left to translate after normalisation
        raise TranslationError("Type a sentence to translate.") from None
    if len(source.ids) > MAX_SOURCE_TOKENS:
        raise TranslationError(f"That sentence is {len(source.ids)} pieces long for this model; the app reads at "
                               f"most {MAX_SOURCE_TOKENS} (about 75 English words). Try a shorter sentence.")
    return source


class RecentTranslations:
    """The last `size` translations of each Translator, by text and settings, shared by every session: a page opened
    again (a reload, a shared link, a class on the same sentence) shows its translation without decoding it again.
    Decoding is deterministic (sampling draws from its seed), so a kept translation is the one decoding would give;
    pages only read them. A model dropped from the app's cache drops its translations with it (weak keys)."""

    def __init__(self, size: int):
        self.size = size
        self._by_model: weakref.WeakKeyDictionary[Translator, Recent[Translation]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def of(self, translator: Translator) -> Recent[Translation]:
        with self._lock:
            return self._by_model.setdefault(translator, Recent(self.size))

    def clear(self) -> None:
        with self._lock:
            self._by_model.clear()


RECENT = RecentTranslations(8)  # per model: a few MB each at most (a long sentence's attention maps on opus-mt)


def translate(translator: Translator, text: str, settings: SearchSettings,
              on_wait: OnWait | None = None) -> Translation:
    """The translation of text with every attention map, within the app's limits and a decode slot (or as the
    server last made it: `RECENT`), or TranslationError (ServerBusy included) in the page's words."""
    prepare(translator, text)
    settings, recent = bounded(settings), RECENT.of(translator)
    if (kept := recent.get((text, settings))) is not None:
        return kept
    with LIMITER.slot(on_wait):
        translation = translator.translate(text, settings, attention=True)
    recent.put((text, settings), translation)
    return translation


def follow_prefix(picked: Sequence[int] | None, prefixes: Sequence[Sequence[int]]) -> int | None:
    """Which of a step's live prefixes continues the hypothesis picked at another step (its identity is its
    prefix): one that extends it after Next, or that it extends after Back; the best ranked first. None when
    it left the beam (finished or pruned)."""
    if picked is None:
        return None
    picked = list(picked)
    for i, prefix in enumerate(prefixes):
        prefix = list(prefix)
        n = min(len(prefix), len(picked))
        if prefix[:n] == picked[:n]:
            return i
    return None

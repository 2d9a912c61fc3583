"""The pages' gate to the `Translator`: the app's limits on the work one request may ask for, the server-wide cap
on decodes running at once, the translations the server keeps (`RECENT`: a page opened again decodes nothing), and
the app's own wording for input it cannot translate. No streamlit.

Limits (README, "Limits"): at most MAX_CHARS characters and MAX_SOURCE_TOKENS source pieces, refused before any
decoding with a message that says so; at most OUTPUT_LIMIT output pieces, and as many for a typed reference
translation (`reference_ids`, checked before any mask is built); at most DECODE_SLOTS decodes at once in
one server, shared by every session (each on one CPU thread). A request that finds every slot taken waits, with a
message on its page, for up to WAIT_TIMEOUT seconds, then is told the server is busy.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
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

OnWait = Callable[[int, int], None]  # (decodes running, requests waiting including this one)


class ServerBusy(TranslationError):
    """Every decode slot stayed taken for WAIT_TIMEOUT seconds."""


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
    def slot(self, on_wait: OnWait | None = None, timeout: float | None = None) -> Iterator[None]:
        """Hold a slot for the block; when none is free, call on_wait(running, waiting) once, then wait."""
        if not self._free.acquire(blocking=False):
            with self._lock:
                self.waiting += 1
                running, waiting = self.running, self.waiting
            try:
                if on_wait is not None:
                    on_wait(running, waiting)
                got = self._free.acquire(timeout=self.timeout if timeout is None else timeout)
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


LIMITER = DecodeLimiter(DECODE_SLOTS)


def decode_slot(on_wait: OnWait | None = None) -> AbstractContextManager[None]:
    """One of the server's decode slots, for model work other than `translate` (the step-by-step page)."""
    return LIMITER.slot(on_wait)


def bounded(settings: SearchSettings) -> SearchSettings:
    """settings with the app's output bound: at most OUTPUT_LIMIT pieces for a source at the limit."""
    return dataclasses.replace(settings, max_len_a=min(settings.max_len_a, MAX_LEN_A),
                               max_len_b=min(settings.max_len_b, MAX_LEN_B))


def check_length(text: str) -> None:
    """TranslationError before any work when text is longer than the app takes."""
    if len(text) > MAX_CHARS:
        raise TranslationError(f"That is {len(text):,} characters; the app translates at most {MAX_CHARS:,} at a "
                               "time. Try one sentence (the command-line translator, python -m transformer.translate, "
                               "takes longer texts).")  # no Markdown: some pages show it escaped


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

"""The pages' gate to the `Translator`: the app's own wording for input it cannot translate. No streamlit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from transformer.decoding import SearchSettings
from transformer.translate import Source, Translation, TranslationError, Translator

MAX_WORDS = 200  # a page is for one sentence; longer input is refused before any work


@contextmanager
def _friendly(text: str) -> Iterator[None]:
    if len(text.split()) > MAX_WORDS:
        raise TranslationError(f"That is more than {MAX_WORDS} words; try a single sentence.")
    try:
        yield
    except TranslationError:  # the Translator's only one: nothing left to translate after normalisation
        raise TranslationError("Type a sentence to translate.") from None


def prepare(translator: Translator, text: str) -> Source:
    """The Translator's source of text, or TranslationError in the page's words."""
    with _friendly(text):
        return translator.prepare(text)


def translate(translator: Translator, text: str, settings: SearchSettings) -> Translation:
    """The Translator's translation of text with every attention map, or TranslationError in the page's words."""
    with _friendly(text):
        return translator.translate(text, settings, attention=True)


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

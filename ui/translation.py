"""The pages' gate to the `Translator`: the app's own wording for input it cannot translate. No streamlit."""

from __future__ import annotations

from collections.abc import Iterator
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

"""The sentence a page opens on for a model: decided here for every page (ui.shared.sentences puts it in the box).

It is the first test sentence of the corpus the model was trained on (a grammar sentence for the teaching model, a
verse for a Bible model), so that every page opens on text the model can translate.
"""

from __future__ import annotations

from ui.shared.models import languages
from ui.shared.widgets import example_sentences

FALLBACK = "In the beginning God created the heaven and the earth."  # for an English model whose corpus is not here


def default_sentence(metadata: dict | None) -> str:
    """The sentence a page opens on for a model (metadata None: no model): its corpus's first test sentence, else
    FALLBACK for a model that reads English (or no model), else "" (no English sentence for another language)."""
    examples = example_sentences(metadata) if metadata else []
    if examples:
        return examples[0]
    source = (languages(metadata or {}) or ("en",))[0]
    return FALLBACK if source == "en" else ""

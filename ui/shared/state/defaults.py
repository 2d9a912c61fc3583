"""The sentence a page opens on for a model: decided here for every page (ui.shared.state.sentences puts it in the box).

It is the model's own `opening_sentence` (metadata.json) when it has one: a sentence it translates well, chosen for
a first screen (the teaching model's short everyday sentence, a verse of the Arabic model's card). Else the first
test sentence of the corpus the model was trained on, so that every page opens on text the model can translate.
"""

from __future__ import annotations

from ui.shared.models.catalog import languages
from ui.shared.models.example_sentences import example_sentences

FALLBACK = "In the beginning God created the heaven and the earth."  # for an English model whose corpus is not here


def default_sentence(metadata: dict | None) -> str:
    """The sentence a page opens on for a model (metadata None: no model): its opening sentence, else its corpus's
    first test sentence, else FALLBACK for a model that reads English (or no model), else "" (no English sentence
    for another language)."""
    opening = (metadata or {}).get("opening_sentence")
    if isinstance(opening, str) and opening.strip():
        return opening
    examples = example_sentences(metadata) if metadata else []
    if examples:
        return examples[0]
    source = (languages(metadata or {}) or ("en",))[0]
    return FALLBACK if source == "en" else ""

"""Example sentences for a corpus part that cannot be loaded on this machine. No streamlit.

The Debian corpus (`docs/debian-corpus.md`) is built from Debian's archive on demand and is not in the
repository, so the Bible + Debian model's example list held only verses. OFFLINE gives its kind a few modern
sentences instead: the software sentences of `checkpoints/en-fr-bible-debian/MODEL_CARD.md`'s table, with the
outputs it reports there.

A generated teaching corpus can be loaded anywhere, but building its test split takes 3-5 s on the first Translate
of a server: STORED_FILE keeps the first test sources of the shipped teaching model's corpus, keyed by its spec
(tests/project/test_page_imports.py rebuilds them and compares).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformer.data.spec import CorpusSpec

STORED_FILE = Path(__file__).resolve().parents[1] / "assets" / "teaching_examples.json"

OFFLINE = {
    "debian": ["The file could not be opened.", "Click the button to save the document.",
               "Do you want to close this window?", "Please enter your password.", "Select a cell and type a number.",
               "This game has three levels.", "The printer is not connected."],
}


def offline_examples(kind: str) -> list[str]:
    """Modern sentences for a corpus kind whose data is not here; [] for kinds that have none."""
    return list(OFFLINE.get(kind, []))


def stored_key(spec: CorpusSpec) -> str:
    """The key of spec's test split in STORED_FILE: the spec as read for evaluation (its train size left out)."""
    return json.dumps(spec.for_evaluation().to_dict(), sort_keys=True)


def stored_examples(spec: CorpusSpec) -> list[str] | None:
    """The first test sources of spec's corpus as STORED_FILE keeps them, or None for a corpus it does not hold."""
    try:
        stored = json.loads(STORED_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sources = stored.get(stored_key(spec)) if isinstance(stored, dict) else None
    return list(sources) if isinstance(sources, list) else None

"""Example sentences for a corpus part that cannot be loaded on this machine. No streamlit.

The Debian corpus (`docs/debian-corpus.md`) is built from Debian's archive on demand and is not in the
repository, so the Bible + Debian model's example list held only verses. OFFLINE gives its kind a few modern
sentences instead: the software sentences of `checkpoints/en-fr-bible-debian/MODEL_CARD.md`'s table, with the
outputs it reports there.
"""

from __future__ import annotations

OFFLINE = {
    "debian": ["The file could not be opened.", "Click the button to save the document.",
               "Do you want to close this window?", "Please enter your password.", "Select a cell and type a number.",
               "This game has three levels.", "The printer is not connected."],
}


def offline_examples(kind: str) -> list[str]:
    """Modern sentences for a corpus kind whose data is not here; [] for kinds that have none."""
    return list(OFFLINE.get(kind, []))

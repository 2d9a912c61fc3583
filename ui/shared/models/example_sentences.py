"""Example sentences of a model: the first test sources of the corpus it was trained on, read only where its
metadata may point (`ui.shared.models.corpus_access`), else what `ui.shared.models.offline_examples` keeps."""

from __future__ import annotations

import streamlit as st

from transformer.data.spec import LOCAL_KINDS
from ui.shared.models.offline_examples import offline_examples, stored_examples

EXAMPLES = 300


@st.cache_data(max_entries=8, show_spinner="Loading example sentences…")
def _examples(corpus: str) -> list[str]:
    """The first test sources of one corpus; of a mix, the parts' in turn (a verse, a help sentence, …); a part that
    cannot be loaded here (the Debian corpus is built on demand) gives its
    `ui.shared.models.offline_examples.offline_examples`."""
    import json
    from itertools import chain, zip_longest

    from transformer.data.corpora.base import CorpusError
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec

    try:
        spec = CorpusSpec.from_dict(json.loads(corpus))
    except (CorpusError, ValueError):
        return []
    sources = []
    for part in [part.spec for part in spec.parts] or [spec]:
        stored = stored_examples(part)  # the shipped teaching model's: no 3-5 s build on the first request
        if stored is not None:
            sources.append(stored[:EXAMPLES])
            continue
        try:
            sources.append([src for src, _ in load_corpus(part.for_evaluation()).test][:EXAMPLES])
        except (CorpusError, OSError, ValueError, ImportError):
            sources.append(offline_examples(part.kind))  # e.g. Debian's, built on demand: the model card's
    interleaved = chain.from_iterable(zip_longest(*sources))
    return [src for src in interleaved if src is not None][:EXAMPLES]


def example_sentences(metadata: dict) -> list[str]:
    """Test-split sources of the corpus the model was trained on (none when it cannot be loaded here)."""
    import json

    from ui.shared.models.corpus_access import readable_parts

    corpus = metadata.get("corpus")
    if not isinstance(corpus, dict) or corpus.get("kind") not in LOCAL_KINDS:
        return []
    corpus = readable_parts(corpus)  # a path in the metadata never makes the page read a file elsewhere
    return _examples(json.dumps(corpus, sort_keys=True)) if corpus else []

"""What a checkpoint's metadata.json may hold: the types of the fields the app and the CLI read.

metadata.json is descriptive (the corpus, the step, the scores) and people edit it by hand (the shipped models
carry test scores added after training), so it is not checksummed; it is checked by type instead, so that a
malformed one (`"corpus": "bible"`, `"n_params": "many"`) is one clear error for its model and never a crash on
every page. `metadata_problem` says what is wrong, or returns None.
"""

from __future__ import annotations

import math
import re
from typing import Any

NUMBER = (int, float)
FIELDS: dict[str, tuple[type, ...]] = {  # top-level field -> the types it may have (None is allowed for each)
    "corpus": (dict,), "description": (str,), "run": (str,), "chosen": (str,),
    "n_params": (int,), "step": (int,), "epoch": (int,), "test_beam": (int,),
    "elapsed": NUMBER, "best_dev_bleu": NUMBER, "test_bleu": NUMBER, "test_chrf": NUMBER, "test_exact": NUMBER,
    "test_aer_best_head": (dict,),
    "languages": (dict,), "source_model": (str,), "licence": (str,), "credit": (str,),  # an imported model's
    "opening_sentence": (str,),  # the sentence the app's pages open on (else the corpus's first test sentence)
}
CORPUS_TEXT = ("kind", "src", "tgt", "src_translation", "tgt_translation", "path", "hf_name", "hf_config",
               "src_field", "tgt_field")
# a language or Bible translation code as the trainer records it: what the pages print in labels and captions
CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,15}")
MAX_PARTS = 32  # parts of a mix, each checked in turn


def _kind(value: Any) -> str:
    return "a boolean" if isinstance(value, bool) else f"{type(value).__name__} {str(value)[:30]!r}"


def _number_problem(name: str, value: Any, types: tuple[type, ...]) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, types):
        return f"{name} should be {' or '.join(t.__name__ for t in types)}, not {_kind(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} should be a finite number, not {value}"
    return None


def corpus_problem(corpus: Any, where: str = "corpus", depth: int = 0) -> str | None:
    """What is wrong with a recorded corpus spec's types (a mix's parts included), or None."""
    if not isinstance(corpus, dict):
        return f"{where} should be an object, not {_kind(corpus)}"
    for name in CORPUS_TEXT:
        value = corpus.get(name)
        if value is not None and not isinstance(value, str):
            return f"{where}.{name} should be text, not {_kind(value)}"
    for name in ("src", "tgt"):
        value = corpus.get(name)
        if value is not None and not CODE.fullmatch(value):
            return f"{where}.{name} should be a language code such as en or fr, not {value[:30]!r}"
    for name in ("max_words", "seed"):
        if problem := _number_problem(f"{where}.{name}", corpus.get(name), (int,)):
            return problem
    for name in ("dev_fraction", "test_fraction"):
        if problem := _number_problem(f"{where}.{name}", corpus.get(name), NUMBER):
            return problem
    parts = corpus.get("parts")
    if parts is None:
        return None
    if not isinstance(parts, list) or len(parts) > MAX_PARTS or depth > 0:
        return f"{where}.parts should be a list of at most {MAX_PARTS} corpora (a mix is not nested)"
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            return f"{where}.parts[{index}] should be an object, not {_kind(part)}"
        if problem := corpus_problem(part.get("corpus"), f"{where}.parts[{index}].corpus", depth + 1):
            return problem
        if problem := _number_problem(f"{where}.parts[{index}].weight", part.get("weight"), NUMBER):
            return problem
    return None


def metadata_problem(metadata: Any) -> str | None:
    """What is wrong with a checkpoint's metadata (as parsed from JSON), or None when every known field has a
    type its readers can use. Unknown fields are left alone."""
    if not isinstance(metadata, dict):
        return f"expected a JSON object, got {type(metadata).__name__}"
    for name, types in FIELDS.items():
        value = metadata.get(name)
        if value is None:
            continue
        if types in ((dict,), (str,)):
            if not isinstance(value, types[0]):
                return f"{name} should be {'an object' if types == (dict,) else 'text'}, not {_kind(value)}"
        elif problem := _number_problem(name, value, types):
            return problem
    if metadata.get("corpus") is not None:
        return corpus_problem(metadata["corpus"])
    if metadata.get("languages") is not None:  # {src, tgt}, read where a corpus would be
        return corpus_problem(metadata["languages"], "languages")
    return None

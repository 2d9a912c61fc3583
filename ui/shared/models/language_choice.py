"""The source and target language of a many-to-many model (M2M100, NLLB-200, mBART, mBART-50), picked in the sidebar
of every page; every page then translates with them (`chosen`).

The codes come from the checkpoint's tokenizer.json (read once per checkpoint version, and only for a model whose
metadata.json says it was imported from one of those families), so that pages which load no model load none here.
A model with one language pair (ours, opus-mt, BART) shows nothing. A target written right to left (Arabic, Hebrew,
Persian, Urdu: `transformer.data.languages.is_rtl`) says so under the picker; its sentences and pieces are laid out
right to left as every page lays out such text (`ui.shared.bidi`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from transformer.data.languages import is_rtl
from transformer.model.checkpoint_files import METADATA_FILE, TOKENIZER_FILE
from ui.shared.models.catalog import checkpoint_stamp, read_json

if TYPE_CHECKING:
    from transformer.decoding.translate import Translator

KEY = "_languages"  # session state: {model path: (source code, target code)}
MANY_TO_MANY = ("M2M100", "NLLB-200", "mBART", "mBART-50")  # metadata.json's imported.family


@st.cache_data(max_entries=8, show_spinner=False)
def model_languages(path: str, stamp: float) -> tuple[list[str], str | None, str | None]:
    """(the model's language codes, the source and target it was imported with); ([], None, None) for a model with
    one language pair, or files that cannot be read (the model picker reports those)."""
    meta = read_json(Path(path) / METADATA_FILE)  # only a regular file is read (a FIFO would block the page)
    tokenizer = Path(path) / TOKENIZER_FILE
    if (meta.get("imported") or {}).get("family") not in MANY_TO_MANY or not tokenizer.is_file():
        return [], None, None
    try:
        data = json.loads(tokenizer.read_text(encoding="utf-8"))
        return list(data["languages"]), data["src_lang"], data["tgt_lang"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return [], None, None


def sidebar(path: str | None) -> None:
    """Two select boxes under the model picker for a many-to-many model; nothing for another."""
    if path is None:
        return
    codes, src, tgt = model_languages(path, checkpoint_stamp(path))
    if not codes:
        return
    picked = st.session_state.setdefault(KEY, {}).get(path, (src, tgt))
    suffix = hashlib.blake2s(path.encode(), digest_size=6).hexdigest()  # one pair of widgets per model
    boxes = []
    for label, code, side in (("Source language", picked[0], "src"), ("Target language", picked[1], "tgt")):
        boxes.append(st.sidebar.selectbox(label, codes, index=codes.index(code) if code in codes else 0,
                                          key=f"_{side}_lang_{suffix}",
                                          help="The model's own code for the language (NLLB-200: fra_Latn, "
                                               "M2M100: fr, mBART: fr_XX); the target's is the output's first, "
                                               "forced token (mBART: the decoder's start)."))
    st.session_state[KEY][path] = tuple(boxes)
    if is_rtl(boxes[1]):
        st.sidebar.caption(f"{boxes[1]} reads right to left: the translation and its pieces are laid out so.")


@st.cache_resource(max_entries=8, show_spinner=False)
def _with_languages(_translator: Translator, path: str, stamp: float, src: str, tgt: str) -> Translator:
    """The model's Translator for another pair, sharing its weights: one per server and pair, so that the
    translations the server keeps (`ui.shared.models.translation_gate.RECENT`) serve every session."""
    return _translator.with_languages(src, tgt)


def chosen(translator: Translator, path: str) -> Translator:
    """translator translating the languages picked for path; itself for a model without languages, or the pair it
    was imported with."""
    src, tgt = st.session_state.get(KEY, {}).get(path, (None, None))
    if src is None or (src, tgt) == (getattr(translator.tokenizer, "src_lang", None),
                                     getattr(translator.tokenizer, "tgt_lang", None)):
        return translator
    return _with_languages(translator, path, checkpoint_stamp(path), src, tgt)

"""Which sentences the Dataset page tabulates: the model's test or dev split, the teaching corpus's (for another
English -> French model), or an uploaded TSV within the app's upload limit; how many of them, and which lenses.
The choice (not an upload) is kept in the link: `split=test|dev|teaching-test|teaching-dev`, `limit=N`."""

from __future__ import annotations

import json

import streamlit as st

from transformer.data.spec import LOCAL_KINDS
from transformer.explain.dataset import DatasetError, Split, model_split, teaching_split, tsv_split
from transformer.explain.lenses import LABELS
from ui.shared.models.catalog import languages, no_corpus
from ui.shared.models.corpus_access import corpus_readable
from ui.shared.models.teaching_model import is_teaching
from ui.shared.state.page_state import link, link_problems, share
from ui.shared.training.jobs import MAX_TSV_BYTES

LIMITS = (10, 20, 50, 100, 200, 500)  # sentences; the package's own cap is higher, the page's time cap bounds it
DEFAULT_LIMIT = 100
UPLOAD = "upload"
LENS_CHOICES = ("raw", "norm", "alti", "value_zeroing")  # raw costs nothing more; each other one a pass a sentence


def split_options(metadata: dict) -> dict[str, str]:
    """Link value -> label of the splits this model offers."""
    options = {}
    if isinstance(metadata.get("corpus"), dict):  # an imported model records its languages, not a corpus
        options = {"test": "this model's test split", "dev": "this model's dev split"}
    if not is_teaching(metadata) and languages(metadata) == ("en", "fr"):
        options |= {"teaching-test": "the teaching corpus's test split",
                    "teaching-dev": "the teaching corpus's dev split"}
    return options | {UPLOAD: "an uploaded TSV (source<TAB>reference)"}


@st.cache_resource(max_entries=8, show_spinner="Loading the split…")
def _model_split(corpus: str, split: str, limit: int) -> Split:
    return model_split({"corpus": json.loads(corpus)}, split, limit=limit)


@st.cache_resource(max_entries=4, show_spinner="Generating the teaching corpus…")
def _teaching_split(split: str, limit: int) -> Split:
    return teaching_split(split, limit=limit)


def _seed_from_link(options: dict[str, str]) -> None:
    params, problems = link(), []
    if "split" in params:
        if params["split"] in options and params["split"] != UPLOAD:
            st.session_state["ds_split"] = params["split"]
        else:
            problems.append(f"Split {params['split'][:40]!r} in the link is not offered here (use "
                            f"{', '.join(o for o in options if o != UPLOAD)}).")
    if "limit" in params:
        if params["limit"].isdigit() and int(params["limit"]) in LIMITS:
            st.session_state["ds_limit"] = int(params["limit"])
        else:
            problems.append(f"Limit {params['limit'][:20]!r} in the link is not one of {', '.join(map(str, LIMITS))}.")
    link_problems(problems)


def choose_split(metadata: dict) -> tuple[Split | None, tuple[str, ...]]:
    """The split and lenses picked, or (None, ()) after saying on the page what is missing or wrong."""
    options = split_options(metadata)
    _seed_from_link(options)
    if st.session_state.get("ds_split") not in options:
        st.session_state["ds_split"] = next(iter(options))
    if "test" not in options:
        st.caption(no_corpus(metadata))
    st.session_state.setdefault("ds_limit", DEFAULT_LIMIT)
    c1, c2, c3 = st.columns([2, 1, 2])
    choice = c1.selectbox("Sentences", list(options), format_func=options.get, key="ds_split")
    limit = c2.select_slider("At most", LIMITS, key="ds_limit", help="The first N sentences of the split.")
    share(split=None if choice == UPLOAD else choice, limit=str(limit))
    try:
        if choice == UPLOAD:
            split = _uploaded(limit)
        elif choice.startswith("teaching-"):
            split = _teaching_split(choice.removeprefix("teaching-"), limit)
        else:
            split = _model_split(_local_corpus(metadata), choice, limit)
    except DatasetError as e:
        st.warning(f"These sentences cannot be tabulated: {e}")
        return None, ()
    if split is None:
        return None, ()
    lenses = ("raw",)
    if split.has_gold:
        lenses = tuple(c3.multiselect("Lenses scored against the gold links (AER per slice)", LENS_CHOICES,
                                      default=["raw"], format_func=LABELS.get, key="ds_lenses",
                                      help="Raw weights come with the pass the table makes anyway; every other "
                                           "lens costs one more pass per sentence.")) or ("raw",)
    return split, lenses


def _local_corpus(metadata: dict) -> str:
    """The model's corpus as JSON when this server may read it (a local kind, its files where pages read corpora
    from: ui.shared.models.corpus_access); DatasetError otherwise."""
    corpus = metadata.get("corpus")
    if not isinstance(corpus, dict) or corpus.get("kind") not in LOCAL_KINDS or not corpus_readable(corpus):
        raise DatasetError("the corpus this model was trained on is not one this server reads (a download, or a "
                           "file outside its data folders); pick the teaching corpus or upload a TSV")
    return json.dumps(corpus, sort_keys=True)


def _uploaded(limit: int) -> Split | None:
    upload = st.file_uploader("A TSV file: source<TAB>reference per line (a third column is ignored)",
                              type=["tsv", "txt"], key="ds_upload")
    if upload is None:
        st.info("Upload a TSV of sentence pairs to tabulate them.")
        return None
    data = upload.getvalue()
    if len(data) > MAX_TSV_BYTES:
        raise DatasetError(f"the file has {len(data) / 2**20:.1f} MB; at most {MAX_TSV_BYTES // 2**20} MB are "
                           "accepted")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DatasetError(f"the file is not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    return tsv_split(text, f"{upload.name} (uploaded)", limit=limit)

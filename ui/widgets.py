"""Streamlit pieces shared by the pages: the cached translator, the model picker, the attention explorer."""

from __future__ import annotations

import streamlit as st

from transformer.checkpoint import CheckpointError, load_checkpoint
from transformer.tokenizer import TokenizerError
from transformer.translate import TranslationAttention, Translator
from ui import attention, figures
from ui.attention import FAMILIES
from ui.models import checkpoint_stamp, checkpoints_dir, find_models, runs_dir

PAGES = [("app.py", "Home", ":material/home:"),
         ("pages/1_Translate.py", "Translate & Attention", ":material/translate:"),
         ("pages/2_Step_by_step.py", "Decode step by step", ":material/step:"),
         ("pages/3_Train.py", "Train", ":material/model_training:"), ("pages/4_Learn.py", "Learn", ":material/school:")]
MODEL_KEY = "model_path"  # session state: the checkpoint directory this user explores
MEAN = -1  # the Head picker's "mean of heads" (not None: a select box shows None as "nothing chosen")


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load(path: str, stamp: float) -> Translator:
    """One model per server and checkpoint version (stamp), with its Translator; pages only read them."""
    return Translator(load_checkpoint(path, "cpu"))


def page_setup() -> None:
    """Every page starts here: the wide layout and the sidebar model picker."""
    st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")
    for path, label, icon in PAGES:
        st.sidebar.page_link(path, label=label, icon=icon)
    st.sidebar.divider()
    model_picker()


def model_picker() -> None:
    """Sidebar select box over shipped checkpoints and run checkpoints; the choice lives in session state."""
    choices = find_models()
    paths = [c.path for c in choices]
    labels = {c.path: c.label for c in choices}
    if not choices:
        st.sidebar.info("No model yet.")
        return
    current = st.session_state.get(MODEL_KEY)
    if current not in paths:
        # A model opened from the Train page may not be listed under that exact label yet.
        current = paths[0] if current is None else current
        if current not in paths:
            paths.append(current)
            labels[current] = current
    st.sidebar.selectbox("Model", paths, index=paths.index(current), format_func=lambda p: labels.get(p, p),
                         key="_model_select", on_change=_picked)
    st.session_state[MODEL_KEY] = current


def _picked() -> None:
    st.session_state[MODEL_KEY] = st.session_state["_model_select"]


def open_model(path: str) -> None:
    """Make path the explored model (e.g. from the Train page)."""
    st.session_state[MODEL_KEY] = path
    st.session_state.pop("_model_select", None)


def current_translator(required: bool = True) -> Translator | None:
    """The chosen model's Translator (its checkpoint: `.checkpoint`), or None after saying on the page why
    there is none."""
    path = st.session_state.get(MODEL_KEY)
    if path is None:
        if required:
            st.info(
                f"No model found in `{checkpoints_dir()}` or `{runs_dir()}`. Train one on the **Train** page "
                "(the *tiny* preset learns visible alignments in a few minutes on a laptop CPU), or from a shell:\n\n"
                "`python -m transformer.train --corpus bible --src en --tgt fr --preset tiny --out runs/tiny`"
            )
        return None
    try:
        return _load(path, checkpoint_stamp(path))
    except (CheckpointError, TokenizerError, OSError) as e:  # a checkpoint without tokenizer.json included
        st.error(f"This checkpoint cannot be loaded: {e}")
        return None


def attention_explorer(att: TranslationAttention, key: str) -> None:
    """Family, layer and head pickers, one heatmap, the model view and the export buttons."""
    n_layers = {f: len(getattr(att, f)) for f in FAMILIES}
    n_heads = att.cross[0].shape[0]
    c1, c2, c3, c4 = st.columns([2, 1, 1.5, 1.5])  # wide enough for "mean of heads" and the toggle's label
    family = c1.radio("Attention", list(FAMILIES), format_func=FAMILIES.get, key=f"{key}_family")
    layer = c2.selectbox("Layer", range(n_layers[family]), key=f"{key}_layer")
    picked = c3.selectbox("Head", [MEAN, *range(n_heads)], key=f"{key}_head",
                          format_func=lambda h: "mean of heads" if h == MEAN else f"head {h}")
    head = None if picked == MEAN else picked
    hide = c4.toggle("Hide special tokens", key=f"{key}_hide",
                     help="Drop the <s>, </s> and <pad> rows and columns; rows then sum to less than 1.")
    matrix, rows, cols = attention.matrix(att, family, layer, head, hide_special=hide)
    if matrix.size == 0:
        st.info("Nothing left to show without the special tokens.")
        return
    names = {"enc_self": ("source query", "source key"), "dec_self": ("target query", "target key"),
             "cross": ("target query", "source key")}[family]
    title = f"{FAMILIES[family]}, layer {layer}, {'mean of heads' if head is None else f'head {head}'}"
    notes = attention.row_notes(att, family, hide_special=hide)
    st.plotly_chart(figures.attention_heatmap(matrix, rows, cols, title=title, query_name=names[0],
                                              key_name=names[1], row_notes=notes), key=f"{key}_heatmap",
                    theme=None)
    sums = ("each row sums to 1" if not hide else
            "with the special tokens hidden a row sums to less than 1: the rest went to <s> or </s>")
    st.caption(f"Rows are queries, columns keys; {sums}. A decoder row is labelled with the token its "
               "query emitted; the query read the token before it (`<s>` first), which the hover names. Use the "
               "camera icon of the chart toolbar to save a PNG.")
    with st.expander("Model view: every layer and head"):
        grid = figures.model_view(*attention.every_head(att, family, hide_special=hide))
        event = st.plotly_chart(grid, key=f"{key}_model_view", theme=None, on_select="rerun",
                                selection_mode=("points", "box"))
        points = event.get("selection", {}).get("points", []) if event else []
        if points and "customdata" in points[0]:
            picked = tuple(int(v) for v in points[0]["customdata"][:2])
            # The selection stays in the widget state: act on a new one only, or it would undo later choices.
            if picked != st.session_state.get(f"{key}_last_pick"):
                st.session_state[f"{key}_last_pick"] = st.session_state[f"{key}_pending"] = picked
                st.rerun()
        st.caption("Click or box-select a small map to open that layer and head above.")
    c1, c2 = st.columns(2)
    c1.download_button("Download all maps (.npz)", attention.to_npz(att), "attention.npz",
                       "application/octet-stream", key=f"{key}_npz")
    c2.download_button("Download all maps (.json)", attention.to_json(att), "attention.json", "application/json",
                       key=f"{key}_json")


def apply_pending_head(key: str) -> None:
    """Open the head picked in the model view; must run before the explorer's widgets are drawn."""
    pending = st.session_state.pop(f"{key}_pending", None)
    if pending is not None and pending != (st.session_state.get(f"{key}_layer"), st.session_state.get(f"{key}_head")):
        st.session_state[f"{key}_layer"], st.session_state[f"{key}_head"] = pending


@st.cache_data(max_entries=8, show_spinner="Loading example sentences…")
def _examples(corpus: str) -> list[str]:
    import json

    from transformer.data import CorpusError, CorpusSpec, load_corpus

    try:
        return [src for src, _ in load_corpus(CorpusSpec.from_dict(json.loads(corpus))).test][:300]
    except (CorpusError, OSError, ValueError, ImportError):
        return []


def example_sentences(metadata: dict) -> list[str]:
    """Test-split sources of the corpus the model was trained on (none when it cannot be loaded here)."""
    import json

    corpus = metadata.get("corpus")
    if not isinstance(corpus, dict) or corpus.get("kind") not in ("bible", "tsv"):
        return []
    return _examples(json.dumps(corpus, sort_keys=True))


def search_settings(key: str):
    """Greedy or beam search controls; returns a SearchSettings."""
    from transformer.decoding import SearchSettings

    c1, c2, c3, c4 = st.columns(4)
    method = c1.radio("Search", ["greedy", "beam"], horizontal=True, key=f"{key}_method")
    if method == "greedy":
        return SearchSettings(record_steps=False)
    beam = c2.slider("Beam size", 2, 8, 4, key=f"{key}_beam")
    alpha = c3.slider("Length penalty α", 0.0, 2.0, 0.6, 0.1, key=f"{key}_alpha",
                      help="GNMT penalty ((5 + length) / 6)^α: 0 ranks by total log-probability, "
                           "larger values favour longer outputs.")
    nbest = c4.slider("n-best", 1, beam, min(3, beam), key=f"{key}_nbest")
    return SearchSettings(beam_size=beam, nbest=nbest, alpha=alpha)

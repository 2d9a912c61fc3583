"""Streamlit pieces shared by the pages: page setup, the cached translator, the model picker, shareable links,
select boxes that follow their options, search settings, charts and the token glossary."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import plotly.graph_objects as go
import streamlit as st

from transformer.data.spec import LOCAL_KINDS
from transformer.data.tokenizer import TokenizerError
from transformer.memory import start_trimming
from ui.shared import class_mode, heatmaps, language_choice, links, sentences, svg_chart
from ui.shared.models import (
    PAGE_SIZE,
    checkpoint_stamp,
    checkpoints_dir,
    find_model,
    find_models,
    is_model_path,
    runs_dir,
)
from ui.shared.offline_examples import offline_examples, stored_examples
from ui.shared.text import code, plain

if TYPE_CHECKING:  # torch and the model load on a model page's first call, never on the Train page or the guide
    from transformer.decoding.translate import Translator
    from ui.shared.translation_gate import OnWait

T = TypeVar("T")
ICON = Path(__file__).resolve().parent / "assets" / "icon.png"  # bundled: a font server's icon fails offline
PAGES = [("app.py", "Home", ":material/home:"),
         ("pages/1_Translate.py", "Translate & Attention", ":material/translate:"),
         ("pages/2_Step_by_step.py", "Decode step by step", ":material/step:"),
         ("pages/3_Train.py", "Train", ":material/model_training:"), ("pages/4_Learn.py", "Learn", ":material/school:"),
         ("pages/5_Teaching_guide.py", "Teacher's guide", ":material/menu_book:"),
         ("pages/6_Explain_heads.py", "Explain heads", ":material/psychology:"),
         ("pages/7_Dataset.py", "Dataset", ":material/table_chart:")]
MODEL_KEY = "model_path"  # session state: the checkpoint directory this user explores
LINK_KEY = "_link"  # session state: the query parameters the page was opened with
SHOWN_MODELS = "_models_shown"  # session state: how many models the picker lists
TOKENS_HELP = ("**Reading the tokens.** The model reads and writes *subword pieces*: a rare word is cut into "
               "pieces it knows (`▁congreg` `ation`). `▁` marks a piece that starts a new word (it stands for the "
               "space before it); a piece without it continues the word before. `<s>` starts the output (the "
               "decoder's first input; `<pad>` in a Marian model such as opus-mt), `</s>` ends a sentence, `<unk>` "
               "is a character the vocabulary never saw and `<pad>` fills a short sentence up to its batch's "
               "length.")


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load(path: str, stamp: float) -> Translator:
    """One model per server and checkpoint version (stamp), with its Translator; pages only read them."""
    import torch

    from transformer.decoding.translate import Translator
    from transformer.model.checkpoint import load_checkpoint
    from ui.shared.translation_gate import DECODE_THREADS

    torch.set_num_threads(DECODE_THREADS)  # the decode slots (ui.shared.translation_gate) share the cores, one each
    return Translator(load_checkpoint(path, "cpu"))


def page_setup(page: str) -> None:
    """Every page starts here: the wide layout, the navigation, the model picker and the page's link.

    The query parameters are read on the page's first run in a session only (a link opens a new session);
    afterwards the page writes its state into them, so that the address bar is always a shareable link.
    """
    st.set_page_config(page_title="Attention Explorer", page_icon=str(ICON), layout="wide")
    start_trimming()
    opened = st.session_state.setdefault("_opened_pages", set())
    st.session_state[LINK_KEY] = {} if page in opened else {k: st.query_params[k] for k in st.query_params}
    opened.add(page)
    kept = (*links.PAGE_PARAMS[page], class_mode.PARAM)
    if any(name not in kept for name in st.query_params):  # another page's state, or a parameter nobody reads:
        # dropped in one message (one per parameter, a thousand of them held the browser for half a minute)
        st.query_params.from_dict({name: st.query_params.get_all(name) for name in st.query_params if name in kept})
    for path, label, icon in PAGES:
        st.sidebar.page_link(path, label=label, icon=icon)
    st.sidebar.divider()
    class_mode.seed(link())  # the model picker's labels follow it
    model_picker()
    language_choice.sidebar(st.session_state.get(MODEL_KEY))  # a many-to-many model's languages
    class_mode.sidebar_toggle(link())
    st.sidebar.radio("Charts download as", ["png", "svg"], horizontal=True, key="chart_format",
                     format_func=str.upper, help="Every chart's download button (top right, or the camera icon of "
                     "its toolbar) saves this format: PNG for a quick look, SVG (a vector drawing) for slides and "
                     "papers.")


def link() -> dict[str, str]:
    """The query parameters this page was opened with (empty after the page's first run)."""
    return st.session_state.get(LINK_KEY, {})


def link_problems(problems: Sequence[str]) -> None:
    for problem in problems:
        st.warning(plain(problem), icon=":material/link_off:")  # they quote the link, which anyone can write


def share(**params: object) -> None:
    """Write params into the address bar (None removes one; numbers as `links.as_param` writes them); only changed
    ones, each change is a message."""
    for name, value in params.items():
        if value is None:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != links.as_param(value):
            st.query_params[name] = links.as_param(value)


def model_picker() -> None:
    """Sidebar select box over shipped checkpoints and run checkpoints, a page of them at a time (and the link's, found
    by its key); the choice lives in session state."""
    shown = st.session_state.setdefault(SHOWN_MODELS, PAGE_SIZE)
    choices = find_models(shown + 1)  # one more than shown: whether there are more
    more, choices = len(choices) > shown, choices[:shown]
    asked = link().get("model")
    if asked is not None and asked not in {c.key for c in choices}:
        choices += [c for c in [find_model(asked)] if c is not None]
    if not choices:
        st.sidebar.info("No model yet.")
        return
    by_key = {c.key: c.path for c in choices}
    key, problems = links.read_model(link(), list(by_key))
    link_problems(problems)
    if key is not None:
        open_model(by_key[key])
    paths = [c.path for c in choices]
    labels = {c.path: c.label for c in choices}
    current = st.session_state.get(MODEL_KEY)
    if current not in paths:
        # A model opened from the Train page may not be listed under that exact label yet.
        current = paths[0] if current is None or not is_model_path(current) else current
        if current not in paths:
            paths.append(current)
            labels[current] = current
    if class_mode.is_on():  # the key alone: the whole label does not fit the sidebar's box at the class's size
        labels.update({c.path: c.key for c in choices})
    st.sidebar.selectbox("Model", paths, index=paths.index(current), format_func=lambda p: labels.get(p, p),
                         key="_model_select", on_change=_picked)
    st.session_state[MODEL_KEY] = current
    if more:
        st.sidebar.button(f"Show {PAGE_SIZE} more models", key="_more_models", on_click=_more_models,
                          help="Runs are listed newest first, a page at a time.")
    summaries = {c.path: c.summary for c in choices}
    if summaries.get(current):
        st.sidebar.caption(plain(summaries[current]))  # words from a metadata file: text, never Markdown
    keys = {c.path: c.key for c in choices}
    if current in keys:
        share(model=keys[current])


def _more_models() -> None:
    st.session_state[SHOWN_MODELS] += PAGE_SIZE


def _picked() -> None:
    # A callback may run after its key was dropped (open_model, between the browser's widget state and its rerun):
    # every callback reads its widget with .get and does nothing without it (tests/test_class_pass3.py).
    if (path := st.session_state.get("_model_select")) is not None:
        st.session_state[MODEL_KEY] = path


def open_model(path: str) -> None:
    """Make path the explored model (e.g. from the Train page)."""
    st.session_state[MODEL_KEY] = path
    st.session_state.pop("_model_select", None)


def current_translator(required: bool = True) -> Translator | None:
    """The chosen model's Translator (its checkpoint: `.checkpoint`), or None after saying on the page why
    there is none."""
    from transformer.model.checkpoint import CheckpointError

    path = st.session_state.get(MODEL_KEY)
    if path is None:
        if required:
            st.info(
                f"No model found in `{checkpoints_dir()}` or `{runs_dir()}`. Train one on the **Train** page "
                "(the *tiny* preset learns visible alignments in a few minutes on a laptop CPU), or from a shell:\n\n"
                "`python -m transformer.train --corpus bible --src en --tgt fr --preset tiny --out runs/tiny`"
            )
        return None
    if not is_model_path(path):
        st.error(f"The explorer opens models from {code(checkpoints_dir())} and {code(runs_dir())} only.")
        return None
    try:
        return language_choice.chosen(_load(path, checkpoint_stamp(path)), path)
    except (CheckpointError, TokenizerError, OSError) as e:  # a checkpoint without tokenizer.json included
        st.error(f"This checkpoint cannot be loaded: {code(e)}")
        return None


def sentence_input(label: str, key: str, default: str) -> str:
    """A text box for the sentence, seeded from the link's `text` (else ui.shared.sentences.seed_box) and shared back
    into it."""
    text, problems = links.read_text(link())
    link_problems(problems)
    sentences.seed_box(key, default, text)
    value = st.text_input(label, key=key)
    sentences.keep(key, value)
    if len(value) <= links.MAX_TEXT:  # a refused text stays out of the link, which keeps the last one taken
        share(text=value or None)
    return value


def choice_box(container: Any, label: str, options: Sequence[T], *, key: str, format_func: Callable[[T], str] = str,
               follow: Callable[[Any, Sequence[T]], int] | None = None, help: str | None = None) -> T:
    """A select box whose browser state is tied to the text of its options, and the pick kept by value.

    The browser keeps showing the text of the option picked last, even after the options change under the
    same key. Here the widget's key includes a digest of the option texts, so new options make a new widget,
    opened at the option equal to the pick (st.session_state[key], which code may also set), else at
    follow(pick, options), else at the first.
    """
    texts = [format_func(o) for o in options]
    widget = f"_{key}_{hashlib.blake2s(chr(10).join(texts).encode(), digest_size=6).hexdigest()}"
    pick = st.session_state.get(key)
    index = list(options).index(pick) if pick in options else (follow(pick, options) if follow else 0)
    index = max(0, min(index, len(options) - 1))
    if st.session_state.get(widget) != index:
        st.session_state[widget] = index  # a new widget, or the pick was set by code (a link, the model view)
    container.selectbox(label, range(len(options)), format_func=texts.__getitem__, key=widget, help=help,
                        on_change=_chosen, args=(key, widget, list(options)))
    st.session_state[key] = options[st.session_state[widget]]
    return st.session_state[key]


def _chosen(key: str, widget: str, options: list) -> None:
    if (index := st.session_state.get(widget)) is not None:
        st.session_state[key] = options[index]


def chart(container: Any, fig, *, key: str, filename: str, share: float = 1.0, **kwargs) -> Any:
    """Every chart of the app: the figure drawn as SVG without plotly.js (`ui.shared.svg_chart`: heatmaps, bars and
    lines, with hover, clicks and box selections as st.plotly_chart reports them), else by st.plotly_chart (what the
    renderer cannot draw exactly); either saves `filename` in the sidebar's format (PNG or SVG). share: the part of
    the page's width its container has (0.5 in one of two columns), which class mode fits its labels to. kwargs:
    st.plotly_chart's (theme, on_select, selection_mode)."""
    config = heatmaps.chart_config(filename, st.session_state.get("chart_format", "png"))
    fig = heatmaps.without_zero_lines(go.Figure(fig))  # a copy: a cached figure stays as it was
    if class_mode.is_on():
        fig = heatmaps.fit_cell_numbers(class_mode.enlarge(fig, share), class_mode.CELL_PX, class_mode.PAGE_PX, share,
                                        class_mode.COLOUR_BAR_PX)
    else:
        fig = heatmaps.fit_cell_numbers(class_mode.thin_columns(fig, share), share=share)
    root_px, tip_px = (class_mode.ROOT_PX, class_mode.LABEL_PX) if class_mode.is_on() else (16, 13)
    drawn = svg_chart.show(container, fig, key=key, width=svg_chart.column_px(root_px, share), config=config,
                           tip_px=tip_px, **kwargs)
    return drawn if drawn is not None else container.plotly_chart(fig, key=key, config=config, **kwargs)


def search_settings(key: str):
    """Greedy search, beam search or sampling controls, seeded from the link and shared back into it; returns a
    SearchSettings."""
    from transformer.decoding.search import SearchSettings
    from ui.shared import sampling

    values, problems = links.read_search(link())
    link_problems(problems)
    for name, default in {"method": "greedy", "beam": 4, "alpha": 0.6, "nbest": 3}.items():
        if name in values or f"{key}_{name}" not in st.session_state:  # set before the widgets, which get no default
            st.session_state[f"{key}_{name}"] = values.get(name, default)
    # The methods on a line of their own: in a quarter of the page "sample" went to a second line at 1280 px.
    method = st.radio("Search", list(links.METHODS), horizontal=True, key=f"{key}_method")
    c2, c3, c4 = st.columns(3)
    if method == "sample":
        settings, problems = sampling.sampling_controls(key, link(), [c2, c3, c4])
        link_problems(problems)
        share(**sampling.sampling_params(dataclasses.asdict(settings)))
        return settings
    if method == "greedy":
        share(**links.search_params("greedy"))
        return SearchSettings(record_steps=False)
    beam = c2.slider("Beam size", *links.BEAM_RANGE, key=f"{key}_beam")
    alpha = c3.slider("Length penalty α", *links.ALPHA_RANGE, step=0.1, key=f"{key}_alpha",
                      help="GNMT penalty ((5 + length) / 6)^α: 0 ranks by total log-probability, "
                           "larger values favour longer outputs.")
    st.session_state[f"{key}_nbest"] = min(st.session_state[f"{key}_nbest"], beam)
    nbest = c4.slider("n-best", 1, beam, key=f"{key}_nbest")
    share(**links.search_params("beam", beam, alpha, nbest))
    return SearchSettings(beam_size=beam, nbest=nbest, alpha=alpha)


def tokens_help() -> None:
    """What ▁, <s>, </s>, <unk>, <pad> and subword pieces mean: said next to every view of token pieces."""
    with st.expander("What do ▁, <s>, </s> and <unk> mean?", icon=":material/help:"):
        st.markdown(TOKENS_HELP)


EXAMPLES = 300


@st.cache_data(max_entries=8, show_spinner="Loading example sentences…")
def _examples(corpus: str) -> list[str]:
    """The first test sources of one corpus; of a mix, the parts' in turn (a verse, a help sentence, …); a part that
    cannot be loaded here (the Debian corpus is built on demand) gives its
    `ui.shared.offline_examples.offline_examples`."""
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

    from ui.shared.corpus_access import readable_parts

    corpus = metadata.get("corpus")
    if not isinstance(corpus, dict) or corpus.get("kind") not in LOCAL_KINDS:
        return []
    corpus = readable_parts(corpus)  # a path in the metadata never makes the page read a file elsewhere
    return _examples(json.dumps(corpus, sort_keys=True)) if corpus else []


@contextmanager
def decode_turn() -> Iterator[OnWait]:
    """An on_wait for ui.shared.translation_gate: while every decode slot of the server is taken, this place on the page
    says so; the note goes once the work is done. Nothing is drawn unless it waits: an element drawn on some runs only
    would move the elements after it, and Streamlit would redraw them (closing an open expander)."""
    shown = []

    def waiting(running: int, waiting: int) -> None:
        shown.append(st.info(f"Waiting for a free slot: {running} translations are running on this server and "
                             f"{waiting} request{'s' if waiting > 1 else ''} (yours included) wait their turn.",
                             icon=":material/hourglass_top:"))

    try:
        yield waiting
    finally:
        for note in shown:
            note.empty()

"""The Translate page's panels for the teaching model: gold word links, per-head alignment error rates, the
words it knows, contractions it cannot read, a random test sentence.

Shown for a model trained on the generated teaching corpus (`--corpus teaching`), whose grammar gives
every sentence it can parse its French and its gold word alignment.
"""

from __future__ import annotations

import dataclasses
import random
import re

import streamlit as st

from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from transformer.decoding.translate import Translation, Translator
from transformer.explain import HeadAlignment, Link, sentence_aer, words
from ui.shared.attention import gold_alignment, lens_switch
from ui.shared.charts.show import chart
from ui.shared.models.catalog import checkpoint_stamp
from ui.shared.models.teaching_model import is_teaching
from ui.shared.state import class_mode
from ui.shared.text.plain import plain


def gold_links(text: str, translation: Translation) -> tuple[frozenset[Link] | None, str]:
    """The sentence's gold links when they apply to the model's output, else None and a reason to show."""
    pair = align(normalize_text(text))
    if pair is None:
        hint = contraction_hint(text)
        return None, ("This sentence is outside the teaching grammar, so there are no gold links for it. "
                      "Build one from the words listed under “Words the teaching model knows” at the top of this "
                      "page to get them." + (f" {hint}" if hint else ""))
    if words(translation.text) != words(pair.tgt):
        hint = contraction_hint(text)
        return None, (f"The grammar translates it as “{pair.tgt}”. The model's output differs, so the gold links, "
                      "which join the grammar's words, are not drawn." + (f" {hint}" if hint else ""))
    return pair.links, ""


# English contractions the grammar never writes: the tokenizer cuts "don't" into "don", "'", "t", so a negation
# can vanish from the translation without a word. Irregular ones first.
_CONTRACTIONS = ((r"\bcan['’]t\b", "cannot"), (r"\bwon['’]t\b", "will not"), (r"\bshan['’]t\b", "shall not"),
                 (r"n['’]t\b", " not"), (r"\bI['’]m\b", "I am"), (r"['’]re\b", " are"), (r"['’]ve\b", " have"),
                 (r"['’]ll\b", " will"), (r"['’]d\b", " would"))


def expand_contractions(text: str) -> str:
    """text with its English contractions written out ("doesn't" -> "does not", "I'm" -> "I am")."""
    for pattern, full in _CONTRACTIONS:
        text = re.sub(pattern, full, text, flags=re.IGNORECASE)
    return text


def contraction_hint(text: str) -> str:
    """A sentence telling the student to write text's contractions out, or "" when it has none."""
    full = expand_contractions(text)
    if full == text:
        return ""
    return (f"The teaching grammar has no contractions (n't, 'm, 're, 've…), and the model may drop a negation it "
            f"cannot read: write “{plain(full)}”.")


def contraction_warning(text: str) -> None:
    """Warns beside the sentence box when the sentence holds a contraction the teaching model cannot read."""
    hint = contraction_hint(text)
    if hint:
        st.warning(hint, icon=":material/edit_note:")


def random_sentence_button(examples: list[str], text_key: str) -> None:
    """A button that puts a random test-split sentence in the text box (before the box is drawn)."""
    def pick() -> None:
        st.session_state[text_key] = random.choice(examples)

    st.button("Random test sentence", key=f"{text_key}_random", on_click=pick, disabled=not examples,
              help="Draws from the teaching corpus's test split: sentences the model never saw in training.")


@st.cache_data(max_entries=4, show_spinner="Scoring every cross-attention head on the test split…")
def _test_split_aer(path: str, stamp: float, _translator: Translator) -> HeadAlignment:
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec
    from transformer.explain import AlignedExample, cross_attention_aer

    corpus = load_corpus(CorpusSpec.from_dict(_translator.checkpoint.metadata["corpus"]).for_evaluation())
    examples = [AlignedExample(s, t, corpus.alignments[(s, t)], corpus.possible_alignments.get((s, t), frozenset()))
                for s, t in corpus.test]
    return cross_attention_aer(_translator.model, _translator.tokenizer, examples)


def alignment_panel(translator: Translator, translation: Translation, links: frozenset[Link], key: str) -> None:
    """This sentence's AER for every head beside the test split's, and the selected head's figure. The test split's
    (every head over its sentences, seconds of work) is scored only once its expander is opened."""
    att = translation.attention
    mine = sentence_aer(att.cross, att.source_pieces, att.target_pieces, links)
    if (own := lens_switch.layer_maps(key)) is not None:  # the lens's own layer map is the "mean" column
        layer_aer = sentence_aer(list(own.cross), att.source_pieces, att.target_pieces, links)
        mine = dataclasses.replace(mine, layer_mean=[row[0] for row in layer_aer.heads])
    layer, head = st.session_state.get(f"{key}_layer", 0), st.session_state.get(f"{key}_head", -1)
    picked = mine.layer_mean[layer] if head is None or head < 0 else mine.heads[layer][head]
    st.markdown(
        f"**Alignment error rate** of the selected cross-attention map on this sentence: **{100 * picked:.0f}%** "
        "(0% = every target word's strongest source word is its gold translation).")
    (c1, c2), share = class_mode.map_columns(2)
    sizes = class_mode.sizes(share)
    chart(c1, gold_alignment.aer_grid(mine.heads, mine.layer_mean, title="AER %, this sentence", sizes=sizes),
          key=f"{key}_aer_sentence", filename="aer-this-sentence")
    split_box = c2.expander("Every head on the test split", key=f"{key}_aer_split_open", on_change="rerun")
    with split_box:
        if split_box.open:
            path = str(translator.checkpoint.path)
            split = _test_split_aer(path, checkpoint_stamp(path), translator)
            best_layer, best_head, best = split.best
            st.markdown(f"Best head on the test split: layer {best_layer}, head {best_head}, AER {100 * best:.1f}% "
                        f"over {split.sentences} sentences.")
            chart(st, gold_alignment.aer_grid(split.heads, split.layer_mean, title="AER %, test split", sizes=sizes),
                  key=f"{key}_aer_split", filename="aer-test-split")
    st.caption("AER (Och and Ney, 2003) compares the links read off attention (each target word to the source "
               "word its row attends to most, pieces merged into words) with the grammar's gold links; the black "
               "outline marks the best head. Heads that align well are the ones to show a class.")


def words_known(metadata: dict | None = None) -> None:
    """The lexicon of the teaching grammar the model was trained on, searchable, so that students type sentences
    the model can translate."""
    from transformer.data.corpora.teaching.suggest import search_vocabulary
    from transformer.data.spec import CorpusSpec

    grammar = CorpusSpec.from_dict(metadata["corpus"]).grammar if metadata and is_teaching(metadata) else None
    # tracked, so that the lexicon (some 30 kB of Markdown) is built and drawn only while the expander is open
    known = st.expander("Words the teaching model knows", key="words_known_open", on_change="rerun")
    with known:
        if not known.open:
            return
        st.caption("The model was trained on generated sentences over this lexicon only: sentences built from "
                   "these words (\"The young man buys a green bicycle.\") translate well, others do not.")
        query = st.text_input("Search the words (English or French)", key="words_known_search",
                              placeholder="e.g. cat, chat, bicycle")
        groups = search_vocabulary(query, grammar)
        if not groups:
            st.info(f"No word of the teaching grammar contains “{query.strip()}”.")
            return
        columns = st.columns(min(4, len(groups)) or 1)
        for i, (category, pairs) in enumerate(groups.items()):
            columns[i % len(columns)].markdown(
                f"**{category}** ({len(pairs)})  \n" + ", ".join(f"{en} → {fr}" for en, fr in pairs))

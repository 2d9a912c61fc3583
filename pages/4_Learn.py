"""Learn: positional encodings, masks, scaled dot-product attention and one token through the whole model, with the
real model's numbers."""

import numpy as np
import pandas as pd
import streamlit as st
import torch

from transformer.charts.heatmap import mask_map
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import TranslationError
from transformer.model.layers import padding_mask, sinusoidal_encoding, subsequent_mask
from ui.learn.attention_steps import AttentionSteps, encoder_attention_steps
from ui.learn.positional_figures import positional_heatmap, sinusoids
from ui.learn.token_flow import flow_section
from ui.shared.attention import svg_views
from ui.shared.charts.show import chart
from ui.shared.models.example_sentences import example_sentences
from ui.shared.models.loading import current_translator, decode_turn
from ui.shared.models.translation_gate import MAX_SOURCE_TOKENS, translate
from ui.shared.page import page_setup
from ui.shared.state import class_mode
from ui.shared.state.defaults import default_sentence
from ui.shared.state.linked_choices import seed_indexes, share_indexes
from ui.shared.state.page_state import choice_box, sentence_input
from ui.shared.text.token_help import tokens_help


def positions(d_model: int) -> None:
    st.header("1. Positional encodings")
    st.markdown("Attention by itself ignores word order, so each embedding gets a position vector added "
                "(Section 3.5): $PE_{pos,2i} = \\sin(pos / 10000^{2i/d})$, $PE_{pos,2i+1} = \\cos(\\cdot)$. "
                "Low dimensions wave fast, high ones slowly: together they form a unique code per position.")
    n = st.slider("Positions", 10, 200, 60, key="learn_pe_len")
    pe = sinusoidal_encoding(n, d_model).numpy()
    chart(st, positional_heatmap(pe, class_mode.sizes()), key="learn_pe_heatmap", filename="positional-encoding")
    dims = st.multiselect("Dimensions to plot", list(range(d_model)), default=[0, 1, 8, min(32, d_model - 2)],
                          key="learn_pe_dims")
    chart(st, sinusoids(pe, dims, class_mode.sizes()), key="learn_pe_lines",
          filename="positional-encoding-dimensions")


def masks(pieces: list[str], tgt_pieces: list[str]) -> int:
    """Both masks; returns the padded length chosen, which section 3 uses too."""
    st.header("2. Masks")
    st.markdown("Sentences in a batch have different lengths, so shorter ones are padded with `<pad>`; the "
                "**padding mask** stops every query from attending to those keys. The decoder also gets a "
                "**causal mask**: position t may only look at positions ≤ t, since later words are not written yet "
                "(shown on the model's translation of your sentence).")
    pad_to = st.slider("Pad the sentence to the length of a longer one in its batch", len(pieces), len(pieces) + 10,
                       len(pieces) + 3, key="learn_pad_to")
    ids = torch.tensor([[1] * len(pieces) + [0] * (pad_to - len(pieces))])  # (1, L): 0 pads, only that matters here
    labels = pieces + ["<pad>"] * (pad_to - len(pieces))
    mask = padding_mask(ids, 0).expand(1, 1, pad_to, pad_to)[0, 0].numpy()
    c1, c2 = st.columns(2)
    sizes = class_mode.sizes(share=0.5)
    chart(c1, mask_map(mask, labels, labels, title="encoder: padding mask", sizes=sizes), key="learn_pad",
          filename="padding-mask")
    causal = subsequent_mask(len(tgt_pieces))[0, 0].numpy()
    chart(c2, mask_map(causal, tgt_pieces, tgt_pieces, title="decoder: causal mask", sizes=sizes),
          key="learn_causal", filename="causal-mask")
    st.caption("Green: may attend (True). Grey: masked; its score becomes -inf before the softmax, so it gets "
               "exactly 0 weight (the model writes the smallest float instead, which gives the same 0). Rows are "
               "queries, columns keys.")
    return pad_to


def dot_product(checkpoint, src_ids: list[int], pieces: list[str], pad_to: int) -> None:
    st.header("3. Scaled dot-product attention, step by step")
    n_pad = max(0, pad_to - len(pieces))
    st.markdown("Eq. 1: $\\mathrm{Attention}(Q, K, V) = \\mathrm{softmax}(QK^T / \\sqrt{d_k})\\,V$. Pick an encoder "
                "layer, a head and a query token: these are the model's own numbers for your sentence, padded with "
                f"{n_pad} `<pad>` as in section 2 (the slider there sets how many).")
    c = checkpoint.config
    c1, c2, c3 = st.columns(3)
    seed_indexes({"layer": ("learn_layer", c.n_encoder_layers), "head": ("learn_head", c.n_heads),
                  "query": ("learn_query", len(pieces))})
    layer = c1.selectbox("Encoder layer", range(c.n_encoder_layers), key="learn_layer")
    head = c2.selectbox("Head", range(c.n_heads), key="learn_head")
    query = choice_box(c3, "Query token", list(range(len(pieces))), key="learn_query",
                       format_func=lambda i: f"{i}: {pieces[i]}", follow=lambda old, opts: 0)
    share_indexes(layer=layer, head=head, query=query)
    s = encoder_attention_steps(checkpoint.model, src_ids, layer, head, query, pad_to=pad_to)
    keys = pieces + ["<pad>"] * n_pad
    padded = src_ids + [checkpoint.tokenizer.specials.pad] * n_pad
    svg_views.eq1_picture(checkpoint.model, padded, None, "enc_self", layer, head, query, pieces[query], keys)
    d_head = len(s.q)
    # tracked, so that the tables (and the browser's data grid) are built only while the expander is open
    tables = st.expander("The same numbers as tables", key="learn_tables_open", on_change="rerun")
    with tables:
        if tables.open:
            number_tables(s, pieces, keys, query, d_head)
    if not np.allclose(s.weights, s.model_weights, atol=1e-5):
        st.warning("The hand computation differs from the model's weights.")


def number_tables(s: AttentionSteps, pieces: list[str], keys: list[str], query: int, d_head: int) -> None:
    """Eq. 1's numbers of one cell as tables: Q and K, the scores through the softmax, the output."""
    st.markdown(f"**Q and K.** The layer input (LayerNorm'd) is projected to a query of the chosen token and a key "
                f"and value for every token, each of $d_k$ = {d_head} numbers (first 8 shown).")
    show = min(8, d_head)
    st.dataframe(pd.DataFrame(np.vstack([s.q[None, :show], s.k[:, :show]]),
                              index=[f"q ({pieces[query]})"] + [f"k {i} ({p})" for i, p in enumerate(keys)],
                              columns=[f"d{j}" for j in range(show)]).style.format("{:.3f}"), key="learn_qk")
    table = pd.DataFrame({"key": keys, f"q·k / √{d_head}": s.scores, "may attend": s.mask,
                          "after mask": s.masked, "softmax": s.weights, "model's weight": s.model_weights})
    st.markdown("**Scores, mask, softmax.** The dot product of the query with each key, divided by "
                "$\\sqrt{d_k}$ so that the softmax does not saturate; the `<pad>` keys may not be attended to, so "
                "their scores become `-inf` and their weights exactly 0; softmax turns scores into weights that "
                "sum to 1. The last column is what the model itself returned: they agree.")
    st.dataframe(table.style.format({c: "{:.4f}" for c in table.columns[1:] if c != "may attend"}),
                 key="learn_table", height="content")  # every row, the -inf of the <pad> keys, no scrolling
    st.markdown(f"**Times V.** The output is the weighted sum of the values: first {show} of {d_head} numbers.")
    st.dataframe(pd.DataFrame([s.output[:show]], index=["output"], columns=[f"d{j}" for j in range(show)]),
                 key="learn_out")


def main() -> None:
    page_setup("learn")
    st.title("Learn: how attention works")
    translator = current_translator(required=False)
    sentence = sentence_input("Your sentence", "learn_sentence",
                              default_sentence(translator.checkpoint.metadata if translator else None))
    d_model = translator.model.config.d_model if translator else 64
    positions(d_model)
    if not sentence.strip():
        st.info("Type a sentence above to see its masks and attention.")
        return
    if translator is None:
        words = sentence.split()[:MAX_SOURCE_TOKENS - 1]  # the app's limit: a mask of a pasted book would not fit
        masks(words + ["</s>"], ["<s>", *words[:11]])
        st.header("3. Scaled dot-product attention, step by step")
        st.info("This part uses a trained model: train one on the Train page, then come back.")
        return
    try:
        with decode_turn() as on_wait:
            translation = translate(translator, sentence, SearchSettings(), on_wait)
    except TranslationError as e:
        st.info(str(e))
        return
    tokens_help()
    pad_to = masks(translation.source_pieces, translation.attention.target_input_pieces[:16])
    dot_product(translator.checkpoint, translation.source_ids, translation.source_pieces, pad_to)
    flow_section(translator, translation, lambda: example_sentences(translator.checkpoint.metadata))


main()

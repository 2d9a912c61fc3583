"""Attention Explorer: `streamlit run app.py`. Home page: what the tool is, and the model being explored."""

import streamlit as st

from ui.shared.models.catalog import describe, find_models, translates
from ui.shared.models.loading import current_translator
from ui.shared.page import page_setup
from ui.shared.text.plain import table


def main() -> None:
    page_setup("home")
    st.title("Attention Explorer")
    st.markdown(
        "A Transformer (Vaswani et al., 2017) written from scratch in PyTorch, translating "
        f"{translates(find_models())}, with every attention weight on show. **Translate & Attention** translates "
        "your sentence and draws the "
        "encoder self-, decoder self- and cross-attention of every layer and head; **Decode step by step** "
        "walks through greedy or beam search one token at a time; **Train** trains a model and plots the run "
        "live; **Learn** takes you through positional encodings, masks and scaled dot-product attention "
        "with the real model's numbers."
    )
    st.page_link("pages/5_Teaching_guide.py", label="Teaching with it: a 45-minute lesson plan, what to point at, "
                 "questions for students", icon=":material/menu_book:")
    translator = current_translator()
    if translator is None:
        return
    checkpoint = translator.checkpoint
    st.subheader("The loaded model")
    st.caption(f"`{checkpoint.path}` (change it in the sidebar; the choice follows you across pages)")
    facts = describe(checkpoint.config, checkpoint.metadata, checkpoint.tokenizer)
    st.markdown(table(facts, ("", "value")))
    c1, c2, c3 = st.columns(3)
    c1.page_link("pages/1_Translate.py", label="Translate a sentence", icon=":material/translate:")
    c2.page_link("pages/2_Step_by_step.py", label="Decode step by step", icon=":material/step:")
    c3.page_link("pages/4_Learn.py", label="Learn how attention works", icon=":material/school:")
    st.page_link("pages/6_Explain_heads.py", label="Explain heads: switch heads off, open the arithmetic of any cell, "
                 "measure every head, watch one form during training", icon=":material/psychology:")


main()

"""The foil of the Explain page's contrastive questions, "why this token rather than that one?" (Yin & Neubig,
"Interpreting Language Models with Contrastive Explanations", EMNLP 2022), for the Attribution and Patching views: one
of the tokens the view offers at the position (quick picks in a box), or any target word typed beside the box, which
stands for its first piece (`transformer.explain.foil`). The pick is kept in the link: `foil`, a picked token's id, or
`foil_word`, a typed word; a bad one is said through the link-problems path and nothing is contrasted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from transformer.bidi import isolate
from transformer.data.vocabulary import TokenizerLike
from transformer.explain.foil import FoilWord, foil_word
from ui.shared.state import links
from ui.shared.state.page_state import choice_box, link, link_problems, share
from ui.shared.text.plain import plain

MAX_WORD = 40  # characters of a typed foil (a word; the link may carry no more)
WORD = "foil_word"  # the link parameter of a typed foil; `foil` holds a picked token's id


@dataclass(frozen=True)
class Foil:
    """The foil a view contrasts with: its token id and piece (a typed word's first)."""

    id: int
    piece: str


def typed_foil(tokenizer: TokenizerLike, text: str) -> tuple[FoilWord | None, str]:
    """The typed text as a foil, or None and why not in a sentence ('' for an empty box: no typed foil)."""
    if not text:
        return None, ""
    if len(text) > MAX_WORD:
        return None, f"a foil is one word of at most {MAX_WORD} characters, got {len(text)}"
    try:
        return foil_word(tokenizer, text), ""
    except ValueError as e:
        return None, str(e).removeprefix("foil: ")


def same_as_token(word: FoilWord, token_piece: str) -> str:
    """Why a typed word whose first piece is the token itself contrasts nothing."""
    start = f"“{word.word}” begins with {word.piece}," if word.several else f"“{word.word}” is"
    return (f"{start} the token itself ({token_piece}) at this position: log p(token) − log p(foil) would be 0 "
            "everywhere. Pick or type another foil.")


def _take_typed(key: str, tokenizer: TokenizerLike) -> None:
    """The box's callback: a valid typed word becomes the pick."""
    word, _ = typed_foil(tokenizer, st.session_state.get(f"{key}_word", "").strip())
    if word is not None:
        st.session_state[key] = word.id


def _seed(key: str, tokenizer: TokenizerLike, target: int, quick: Sequence[int]) -> bool:
    """The link's foil (a typed word, else a token id) into the view's widgets; True when the link had a typed word
    (whose problems, if any, are said here, as the link's)."""
    text, problems = links.read_text(link(), WORD)
    if text is not None:
        st.session_state[f"{key}_word"] = text[:MAX_WORD]
        word, why = typed_foil(tokenizer, text.strip())
        if word is None:
            why = why or "it is empty"
            problems = [*problems, f"Foil word {links.quoted(text)} in the link: {why}; nothing is contrasted."]
        elif word.id == target:
            token = tokenizer.target_pieces([target])[0]
            problems = [*problems, f"Foil word of the link: {same_as_token(word, token)}"]
        st.session_state[key] = word.id if word is not None and word.id != target else None
        link_problems(problems)
        return True
    linked, problems = links.read_index(link(), "foil", tokenizer.tgt_vocab_size)
    link_problems(problems if linked is None or linked in quick else
                  [f"Foil {linked} of the link is not among this token's candidates; nothing is contrasted."])
    if linked is not None:
        st.session_state[key] = linked if linked in quick else None
    return False


def foil_choice(box, word_box, key: str, tokenizer: TokenizerLike, target: int, quick: Sequence[int],
                log_probs: Mapping[int, float]) -> Foil | None:
    """The foil box (nothing, the quick picks, and a valid typed word) in `box`, the typed word's text box in
    `word_box`, and what is wrong with the typed word below them; the pick (None: no contrast) is shared into the
    link. key: the session key of the pick (a token id or None); key + "_word": the typed word's."""
    piece_of: Callable[[int], str] = lambda t: tokenizer.target_pieces([t])[0]  # noqa: E731
    quick = [t for t in quick if t != target]
    from_link = _seed(key, tokenizer, target, quick)
    text = word_box.text_input(
        "…or type a word", key=f"{key}_word", max_chars=MAX_WORD, placeholder="any target word",
        on_change=_take_typed, args=(key, tokenizer),
        help="Any word of the target language as the foil (press Enter): the contrast is with its first piece, the "
             "one the model would have to emit first to go on to that word.")
    word, why = typed_foil(tokenizer, text.strip())
    if text and not text.strip():
        why = "type a target word (the box holds only spaces)"
    options: list[int | None] = [None, *quick]
    if word is not None and word.id != target and word.id not in options:
        options.append(word.id)

    def label(t: int | None) -> str:
        if t is None:
            return "nothing (no contrast)"
        if t in log_probs:
            return f"{isolate(piece_of(t))} (log p {log_probs[t]:.2f})"
        if word is not None and t == word.id:
            shown = isolate(word.word) + (f" → {isolate(word.piece)}" if word.several else "")
            return f"{shown} (typed)"
        return isolate(piece_of(t))

    pick = choice_box(box, "…rather than (contrastive)", options, key=key, format_func=label,
                      help="The model's most probable tokens here, or the word typed beside.")
    if why and not from_link:
        st.warning(plain(f"Typed foil: {why}."))
    elif word is not None and word.id == target and not from_link:
        st.warning(plain(same_as_token(word, piece_of(target))))
    typed = word is not None and pick == word.id
    share(foil=None if pick is None or typed else str(pick), **{WORD: word.word if typed else None})
    if pick is None:
        return None
    if typed and word.several:
        st.caption(plain(word.note))
    return Foil(pick, piece_of(pick))

"""The step page's forced steps ("what if the model had said X?", issue 38): continue with any candidate of a step or
with a typed word, "Back" that takes a forced piece back, and the forced pieces marked in the page's text.

The page's session (`DecodingSession`) holds the forced prefix: its first len(prefix) steps emitted those pieces,
given rather than chosen, and the search goes on from there (`transformer.decoding.prefix`). The page keeps one
rule: the forced pieces are all among the steps taken (len(prefix) <= n_steps), so that every forced piece is on
the page and "Back" at a forced step takes that piece out of the prefix, and "Next" asks the model again.

A forced prefix is checked (`check_prefix`: no special token, no </s>, under the output limit of the source)
before anything is decoded, in the buttons' callbacks: a prefix the page cannot force is a message, never a session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from transformer.bidi import isolate
from transformer.decoding.prefix import check_prefix
from transformer.decoding.session import DecodingSession
from transformer.decoding.settings import max_output_lengths
from ui.shared.state.links import MAX_TEXT, linkable, quoted, read_prefix
from ui.shared.state.page_state import choice_box
from ui.shared.text.plain import code, plain
from ui.step.candidate_bars import FORCED_MARK, number

PENDING = "step_pending"  # session state: the action main() takes before drawing (a button's name, or a Force)
ERROR, NOTE = "step_force_error", "step_force_note"  # session state (Markdown): a refused force; a word's pieces
WORD = "step_force_word"  # the typed word's text box
PICK, PICK_AT = "step_force_pick", "_step_force_pick_at"  # the candidate picked; the step it was picked at
WORD_CHARS = 200  # a word, or a few: a longer prefix comes from a link or from steps


@dataclass(frozen=True)
class Force:
    """The output to decode on from, every piece of it forced (a pending action of the page)."""

    tokens: tuple[int, ...]


def checked(session: DecodingSession, tokens: Sequence[int]) -> list[int]:
    """tokens when the session's model can be made to emit them for its source (ValueError "prefix: ..." else)."""
    limits = max_output_lengths([len(session.src_ids)], session.settings, session.model.config.max_len)
    return check_prefix(list(tokens), session.specials, session.model.config.tgt_vocab_size, limits)


def forced(session: DecodingSession, tokens: Sequence[int]) -> DecodingSession:
    """A session of the same source and search that has emitted tokens, every one forced, and decodes on from them."""
    new = DecodingSession(session.model, session.src_ids, session.settings, specials=session.specials,
                          prefix=checked(session, tokens))
    while new.n_steps < len(new.prefix):
        new.step()
    return new


def apply(session: DecodingSession, action: str | Force) -> DecodingSession:
    """The session after a button: Next, Back, Run to end, Reset (which drops the forced prefix) or a Force."""
    if isinstance(action, Force):
        return forced(session, action.tokens)
    if action == "Reset":
        return forced(session, [])
    if action == "Back":
        if session.prefix and session.n_steps <= len(session.prefix):  # a forced step: its piece leaves the prefix
            return forced(session, session.prefix[:session.n_steps - 1])
        session.back()
    elif action == "Next":
        session.step()
    elif action == "Run to end":
        session.run_to_end()
    return session


def start(fresh: DecodingSession, previous: DecodingSession | None, linked: list[int] | None
          ) -> tuple[DecodingSession, list[str]]:
    """A new sentence, search or model: fresh, forced with the link's prefix (on the page's first run) or with the
    previous session's when only the search changed; and the sentences saying why a prefix was not forced."""
    prefix, whose = linked, "The link's forced prefix"
    if linked is None:
        if previous is None or not previous.prefix:
            return fresh, []
        if previous.model is not fresh.model:
            return fresh, ["Another model: the forced pieces were dropped (they were the other model's pieces)."]
        if previous.src_ids != fresh.src_ids:
            return fresh, ["A new sentence: the forced pieces were dropped."]
        prefix, whose = previous.prefix, "The forced prefix"
    try:
        return forced(fresh, prefix), []
    except ValueError as e:
        return fresh, [f"{whose} cannot be forced here: {reason(e)}"]


def reason(error: ValueError) -> str:
    return str(error).removeprefix("prefix: ")


def link_prefix(translator, params: dict[str, str]) -> tuple[list[int] | None, list[str]]:
    """The link's forced prefix (`prefix`, its text) as target ids, or None (none, or an empty one) and why the
    tokenizer cannot make it."""
    text, problems = read_prefix(params)
    if text is None or not text.strip():
        return None, problems
    try:
        return translator.prefix_ids(text), problems
    except ValueError as e:
        return None, [f"The link's forced prefix {quoted(text)} cannot be forced: {reason(e)}"]


def link_text(tokenizer, session: DecodingSession) -> str | None:
    """The forced prefix as the link keeps it: its text, read back through the tokenizer (None: no prefix)."""
    return linkable(tokenizer.decode_target(session.prefix)) if session.prefix else None


def marked(tokenizer, tokens: Sequence[int], n_forced: int, as_code: bool = True) -> str:
    """An output as Markdown: its forced pieces' text after ✎ on a violet background, the rest as the page shows
    text (a code span, or plain)."""
    whole = tokenizer.decode_target(tokens)

    def shown(text: str) -> str:
        return (code(isolate(text)) if as_code else plain(isolate(text))) if text else ""

    if not n_forced:
        return shown(whole) or "∅"
    head = tokenizer.decode_target(tokens[:n_forced])
    rest = whole[len(head):] if whole.startswith(head) else " " + tokenizer.decode_target(tokens[n_forced:])
    return f":violet-background[{FORCED_MARK}{plain(isolate(head))}]" + (" " if rest[:1].isspace() else "") \
        + shown(rest.strip())


def marked_pieces(pieces: Sequence[str], start: int, n_forced: int) -> str:
    """Pieces joined by spaces as bold Markdown, pieces[start:start + n_forced] (the forced ones) after ✎ on the
    violet background of `marked`."""
    def bold(part: Sequence[str]) -> str:
        return f"**{plain(isolate(' '.join(part)))}**" if part else ""

    head, forced_part, rest = pieces[:start], pieces[start:start + n_forced], pieces[start + n_forced:]
    if not forced_part:  # nothing forced: one bold run, as the page wrote it before forcing existed
        return bold(pieces)
    middle = f":violet-background[{FORCED_MARK}{bold(forced_part)}]"
    return " ".join(filter(None, (bold(head), middle, bold(rest))))


def piece_labels(pieces: Sequence[str], start: int, n_forced: int) -> list[str]:
    """Pieces as a chart's token labels: pieces[start:start + n_forced] (the forced ones) after ✎."""
    return [FORCED_MARK + p if start <= i < start + n_forced else p for i, p in enumerate(pieces)]


def _request(tokens: Sequence[int], what: str, note: str = "") -> bool:
    """A button's callback: a Force for main() to take, or the message saying why these pieces cannot be forced
    (False)."""
    session = st.session_state.get("step_session")
    if session is None:
        return False
    try:
        st.session_state[PENDING] = Force(tuple(checked(session, tokens)))
    except ValueError as e:
        st.session_state[ERROR] = f"Cannot force {what}: {plain(reason(e))}"
        return False
    if note:
        st.session_state[NOTE] = note
    return True


def _typed(translator, before: tuple[int, ...]) -> None:
    text = st.session_state.get(WORD, "")
    if not text.strip():
        st.session_state[ERROR] = "Type a word to force, then press Force."
        return
    try:
        ids = translator.prefix_ids(text)
    except ValueError as e:
        st.session_state[ERROR] = f"Cannot force {plain(quoted(text))}: {plain(reason(e))}"
        return
    pieces = translator.tokenizer.target_pieces(ids)
    note = "" if len(ids) == 1 else (f"{plain(quoted(text))} is {len(ids)} pieces ("
                                      f"{', '.join(code(isolate(p)) for p in pieces)}): all {len(ids)} are forced.")
    if _request(before + tuple(ids), plain(quoted(text)), note):
        st.session_state[WORD] = ""  # forced: the word is in the output now, not left for another step or model


def continue_from(tokens: Sequence[int]) -> None:
    """The beam tree's "Continue from here": that node's output, forced."""
    _request(tokens, "this node's output")


def force_panel(container: Any, session: DecodingSession, hyp, pieces, translator, order: Sequence[int]) -> None:
    """Under a step's candidate bars: continue with any candidate shown (order: their ids as drawn), or with a
    typed word, from the prefix the step read (hyp: the followed hypothesis)."""
    before = tuple(hyp.prefix[1:])  # the output before this step's piece (prefix[0]: the start token)
    options = [t for t in order if t != session.specials.eos and t not in session.specials.never]
    probs = dict(zip(hyp.candidates.tokens, hyp.candidates.probs))
    container.markdown("**What if it said something else here?**")
    at = (session.n_steps, before, tuple(session.prefix))
    if st.session_state.get(PICK_AT) != at:  # another step, or this one forced: the box opens at the piece emitted
        index = session.current.live.index(hyp)
        st.session_state[PICK] = next((n.token for n in session.current.nodes if n.parent == index), None)
        st.session_state[PICK_AT] = at
    if options:  # each button under its own box: side by side they were cut short in class mode's half page
        pick = choice_box(container, "A candidate", options, key=PICK,
                          format_func=lambda t: f"{pieces([t])[0]}  (P = {number(probs[t])})")
        container.button("Continue with this", key="step_force_candidate", on_click=_request,
                         args=(before + (pick,), code(isolate(pieces([pick])[0]))))
    container.text_input("…or type a word", key=WORD, max_chars=min(WORD_CHARS, MAX_TEXT),
                         help="Encoded with the model's tokenizer: a word of several pieces forces all of them.")
    container.button("Force", key="step_force_typed", on_click=_typed, args=(translator, before))
    if (error := st.session_state.pop(ERROR, None)) is not None:
        container.error(error)


def forced_note(session: DecodingSession, translator) -> None:
    """Under the output line: what its violet part is, the pieces of a word just forced, and when the link's text
    reads back as other pieces (a piece picked in the middle of a word the tokenizer would cut otherwise)."""
    if (note := st.session_state.pop(NOTE, None)) is not None:
        st.info(note, icon=":material/edit:")
    if not session.prefix:
        return
    n = len(session.prefix)
    text = link_text(translator.tokenizer, session)
    try:
        kept = text is not None and translator.prefix_ids(text) == session.prefix
    except ValueError:
        kept = False
    link = "" if kept else (" The link keeps them as text, which the tokenizer reads back as other pieces (or "
                            "cannot read back): a link opens with what it reads.")
    st.caption(f"{FORCED_MARK}on violet: the {'forced piece' if n == 1 else f'{n} forced pieces'} (step"
               f"{' 1' if n == 1 else f's 1 to {n}'}), given to the decoder rather than chosen; the model decodes "
               f"on from them. **Back** takes the last forced piece back, **Reset** all of them.{link}")

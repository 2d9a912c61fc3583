"""The package's self-contained views (`transformer.explain.views`) on the app's pages: the head view and model
view of token lines, Eq. 1 as one picture and the clickable beam tree. Each is drawn by the package; this module
only places it (st.iframe for the views, a bidirectional streamlit component for the tree's clicks)
and adds the few widgets around it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import streamlit as st
import streamlit.components.v2 as bidi_components

from transformer.bidi import piece_labels
from transformer.decoding.search import HypothesisStep
from transformer.decoding.translate import TranslationAttention, Translator
from transformer.explain import cell_arithmetic, views
from transformer.explain.views import tree
from ui.shared.attention import families
from ui.shared.models.loading import decode_turn
from ui.shared.models.translation_gate import decode_slot
from ui.shared.state import class_mode
from ui.shared.text.plain import code, plain

MAX_HEIGHT = 900  # px of an iframe; a taller view scrolls inside it
TREE_JS = f"""export default function(component){{const {{data,setTriggerValue,parentElement}}=component;
let host=parentElement.querySelector('div.bt-host');if(!host){{host=document.createElement('div');
host.className='bt-host';parentElement.appendChild(host);}}host.innerHTML=data.html;
({tree.TREE_JS})(host.querySelector('.bt'),(s,r)=>setTriggerValue('node',s+':'+r));}}"""
_tree_component = bidi_components.component("attention_beam_tree", js=TREE_JS)


def show(view: views.View, container=None) -> None:
    """A view in an iframe of its own height (at most MAX_HEIGHT, then it scrolls), at class mode's size."""
    view = class_mode.view(view)
    with container or st.container():
        st.iframe(view.document(), height=min(view.height, MAX_HEIGHT))


def head_view(att: TranslationAttention, family: str, layer: int, head: int | None, hide: bool = False) -> None:
    """The explorer's family as token lines: every head on (or only the picked one), on the explorer's layer (its
    Layer picker is the view's: the view has none of its own to disagree with it)."""
    maps, rows, cols = families.every_head(att, family, hide_special=hide)
    if maps.size == 0:
        return
    names = views.NAMES[family]
    show(views.head_view_from(maps, piece_labels(rows), piece_labels(cols), layer=layer,
                              heads=None if head is None else [head], query_name=names[0], key_name=names[1],
                              layer_picker=False))


def model_view(att: TranslationAttention, family: str, hide: bool = False) -> None:
    maps, rows, cols = families.every_head(att, family, hide_special=hide)
    if maps.size:
        names = views.NAMES[family]
        show(views.model_view_from(maps, piece_labels(rows), piece_labels(cols), query_name=names[0],
                                   key_name=names[1]))


def step_head_view(hyp: HypothesisStep, prefix: list[str], source: list[str], layer: int, key: str) -> None:
    """Decode step by step: the current query's lines to the source or to the prefix it read."""
    family = st.radio("Token lines of", ["cross", "dec_self"], horizontal=True, key=f"{key}_family",
                      format_func={"cross": "cross-attention", "dec_self": "decoder self-attention"}.get)
    show(views.step_head_view(hyp, piece_labels(prefix), piece_labels(source), family, layer, layer_picker=False))


def eq1_picture(model, source_ids: list[int], decoder_input: list[int] | None, family: str, layer: int, head: int,
                query: int, query_label: str, key_labels: list[str], key_index: int | None = None):
    """Eq. 1 as one picture for one cell; returns the cell (its numbers, for the tables under it)."""
    with decode_turn() as on_wait, decode_slot(on_wait):
        cell = cell_arithmetic(model, source_ids, decoder_input, family, layer, head, query)
    show(views.cell_flow(cell, query_label, piece_labels(key_labels), key_index, compact=class_mode.is_on()))
    return cell


def beam_tree(session, translator: Translator, source_ids: list[int], key: str,
              on_continue: Callable[[Sequence[int]], None] | None = None,
              marked: Callable[[Sequence[int]], str] | None = None, forced_mark: str = "") -> None:
    """The beam tree of a session, its forced steps (`session.prefix`) marked; a click on a node opens its hypothesis
    at that step with its attention, and with on_continue a "Continue from here" button that calls it with the
    node's output tokens. marked: a node's output as the page writes it (Markdown, its forced pieces marked);
    forced_mark: before a forced piece's label in the node's head view."""
    tok = translator.tokenizer
    best = (session.finished or session.live or [None])[0]
    forced = len(session.prefix)
    svg, _, height = tree.beam_tree_svg(session.history, tok.target_pieces, best.tokens if best else None, forced)
    factor = class_mode.zoom(tree.FONT_PX)
    body = (f"<style>{tree.CSS}</style><div class='tv bt' style='zoom:{factor:.3f}'>{tree.legend(forced > 0)}"
            f"<div class='wide'>{svg}</div><div class='info note'></div></div>")
    result = _tree_component(data={"html": body}, key=key, on_node_change=lambda: None,
                             height=math.ceil((height + 100) * factor))
    if st.session_state.get(f"{key}_session") != id(session):  # another sentence's tree: nothing opened yet
        st.session_state[f"{key}_session"] = id(session)
        st.session_state.pop(f"{key}_open", None)
    picked = getattr(result, "node", None)
    if picked:
        st.session_state[f"{key}_open"] = picked
    opened = st.session_state.get(f"{key}_open")
    if not opened:
        st.caption("Click a node to open that hypothesis at that step" + (", and to continue from it" if on_continue
                                                                          else "") + ".")
        return
    step, rank = map(int, opened.split(":"))
    if step < 0 or step >= len(session.history) or rank >= len(session.history[step].nodes):
        return
    node = session.history[step].nodes[rank]
    tokens = tree.node_prefix(session.history, step, rank)
    shown = marked(tokens) if marked else plain(tok.decode_target(tokens)) or "∅"
    st.markdown(f"**Step {step + 1}, rank {rank}** ({node.status}{', forced' if step < forced else ''}): "
                f"{shown} with {code(tok.target_pieces([node.token])[0])} "
                f"{'given' if step < forced else 'chosen'} at P = {math.exp(node.log_prob):.3f}, log-probability "
                f"{node.score:.3f}. Where the decoder looked while it {'read' if step < forced else 'chose'} that "
                "piece:")
    if on_continue is not None:
        ended = {"finished": f"ended with {code('</s>')}", "stopped": "stopped at the length limit"}
        if node.status in ended:  # nothing can follow it: the button could only be refused
            st.caption(f"This hypothesis {ended[node.status]}: there is nothing after it to decode.")
        else:
            st.button("Continue from here", key=f"{key}_continue", on_click=on_continue, args=(tokens,),
                      help="Force this node's output so far (every piece of it) and decode on from there.")
    with decode_turn() as on_wait, decode_slot(on_wait):
        att = translator.attention_maps(source_ids, tokens)
    names = views.NAMES["cross"]
    rows, cols = piece_labels(att.target_pieces), piece_labels(att.source_pieces)
    rows = [forced_mark + r if i < forced else r for i, r in enumerate(rows)]
    show(views.head_view_from(families.stacked(att, "cross"), rows, cols, focus=len(rows) - 1,
                              query_name=names[0], key_name=names[1]))

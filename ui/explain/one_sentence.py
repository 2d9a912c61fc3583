"""The Explain page's views of one sentence: heads switched off, the arithmetic behind a clicked cell, what-if
switches, greedy / beam / reference side by side and another model on the same sentence (the HTML report:
`ui.explain.report_download`).

Every number comes from `transformer.explain`; this module draws widgets and figures only. Work on a model goes
through `ui.shared.models.translation_gate` (the app's limits and its decode slots), like the other pages' translations.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from transformer.charts.heatmap import heatmap
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translation, TranslationAttention, TranslationError, Translator
from transformer.explain import (
    Intervention,
    TeacherForced,
    changed_tokens,
    intervened_translator,
    teacher_forced,
)
from transformer.explain.interventions import every_head, shared_prefix
from transformer.explain.lenses import LABELS as LENS_LABELS
from transformer.model.checkpoint import load_checkpoint
from ui.explain import head_maps, model_comparison, search_comparison, switched_off_maps
from ui.shared.attention import families, lens_switch, svg_views
from ui.shared.attention.families import FAMILIES
from ui.shared.charts.show import chart, selected
from ui.shared.models.catalog import checkpoint_stamp, find_model, find_models
from ui.shared.models.loading import decode_turn
from ui.shared.models.translation_gate import decode_slot, reference_ids, translate
from ui.shared.state import class_mode, linked_choices, links
from ui.shared.state.page_state import choice_box, link, link_problems, share
from ui.shared.text.plain import code, piece_line, plain

SHORT = {"enc_self": "encoder self", "dec_self": "decoder self", "cross": "cross"}
NAMES = {"enc_self": ("source query", "source key"), "dec_self": ("target query", "target key"),
         "cross": ("target query", "source key")}
MEAN = -1


def head_name(head: tuple[str, int, int]) -> str:
    family, layer, index = head
    return f"{SHORT[family]} · layer {layer} · head {index}"


@st.cache_resource(max_entries=4, show_spinner="Preparing the changed model…")
def changed_translator(path: str, stamp: float, intervention: Intervention, _translator: Translator) -> Translator:
    """One changed copy per checkpoint version and intervention, shared by the sessions that ask for it."""
    return intervened_translator(_translator, intervention)


def _changed(translator: Translator, intervention: Intervention) -> Translator:
    path = str(translator.checkpoint.path)
    return changed_translator(path, checkpoint_stamp(path) if translator.checkpoint.path else 0.0, intervention,
                              translator)


def marked(pieces: list[str], marks: list[bool]) -> str:
    """Pieces as Markdown, the changed ones on an orange background (right-to-left pieces kept apart)."""
    return piece_line(pieces, marks)


def as_attention(translator: Translator, source_ids: list[int], output_ids: list[int],
                 forced: TeacherForced) -> TranslationAttention:
    tok = translator.tokenizer
    decoder_input = [tok.specials.start, *output_ids[:-1]]
    return TranslationAttention(tok.source_pieces(source_ids), tok.target_pieces(decoder_input),
                                tok.target_pieces(output_ids), forced.enc_self, forced.dec_self, forced.cross)


def map_picker(key: str, att: TranslationAttention, mean: bool = True) -> tuple[str, int, int | None]:
    """Family, layer and head (None: the mean of the heads) of the maps a view shows."""
    c1, c2, c3 = st.columns([2, 1, 1])
    family = c1.radio("Attention", list(FAMILIES), format_func=FAMILIES.get, key=f"{key}_family", horizontal=True)
    layer = choice_box(c2, "Layer", list(range(len(getattr(att, family)))), key=f"{key}_layer",
                       follow=lambda old, opts: min(old or 0, len(opts) - 1))
    heads = ([MEAN] if mean else []) + list(range(att.cross[0].shape[0]))
    head = c3.selectbox("Head", heads, key=f"{key}_head", format_func=lambda h: "mean of heads" if h == MEAN
                        else f"head {h}")
    return family, layer, None if head == MEAN else head


def draw_map(container, att: TranslationAttention, family: str, layer: int, head: int | None, *, key: str,
             title: str, share: float, subtitle: str = "") -> None:
    matrix, rows, cols = families.matrix(att, family, layer, head)
    drawn = heatmap(matrix, rows, cols, title=title, subtitle=subtitle, row_title=NAMES[family][0],
                    col_title=NAMES[family][1], notes=families.row_notes(att, family),
                    note_title=families.NOTE_TITLE, sizes=class_mode.sizes(share))
    chart(container, drawn, key=key, filename=title)


def translated(translator: Translator, text: str, settings: SearchSettings) -> Translation | None:
    try:
        with decode_turn() as on_wait:
            return translate(translator, text, settings, on_wait)
    except TranslationError as e:
        st.warning(plain(e))
        return None


def _forced(translator: Translator, source_ids: list[int], output_ids: list[int], causal: bool = True
            ) -> TeacherForced:
    with decode_turn() as on_wait, decode_slot(on_wait):
        return teacher_forced(translator.model, source_ids, output_ids, specials=translator.specials, causal=causal)


# ----------------------------------------------------------------------------- 1. switch heads off


def _switch_off(heads: list[tuple[str, int, int]], reset: bool = False) -> None:
    st.session_state["ex_off"] = sorted(set(heads) | (set() if reset else set(st.session_state.get("ex_off", []))))


def ablation_view(translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    st.markdown("Switch off any heads and the sentence is decoded again at once: a head switched off adds nothing "
                "to its layer's output (its columns of $W^O$ are zero), everything else is the trained model.")
    heads = every_head(translator.model)
    st.session_state["ex_off"] = [h for h in st.session_state.get("ex_off", []) if h in heads]
    st.multiselect("Heads to switch off", heads, format_func=head_name, key="ex_off",
                   placeholder="Pick heads, or open Head importance and click one")
    columns = st.columns(len(FAMILIES) + 1)
    for column, family in zip(columns, FAMILIES):
        column.button(f"Every {SHORT[family]} head", key=f"ex_off_all_{family}", on_click=_switch_off,
                      args=([h for h in heads if h[0] == family],))
    columns[-1].button("Every head back on", key="ex_off_none", on_click=_switch_off, args=([], True))
    off = frozenset(map(tuple, st.session_state["ex_off"]))
    if not off:
        st.info("No head is off: pick some above.")
        return
    changed = _changed(translator, Intervention(off))
    new = translated(changed, text, settings)
    if new is None:
        return
    under = _forced(changed, translation.source_ids, translation.token_ids).score
    before, after = changed_tokens(translation.target_pieces, new.target_pieces)
    c1, c2 = st.columns(2)
    c1.markdown(f"**The trained model**\n\n{marked(translation.target_pieces, before)}")
    c2.markdown(f"**With {len(off)} head{'s' if len(off) > 1 else ''} off**\n\n{marked(new.target_pieces, after)}")
    c1.metric("log-probability of its output", f"{translation.score:.3f}")
    c2.metric("log-probability of its output", f"{new.score:.3f}", delta=f"{new.score - translation.score:+.3f}")
    c2.metric("log-probability of the original output without the heads", f"{under:.3f}",
              delta=f"{under - translation.score:+.3f}")
    st.caption("Orange pieces differ between the two outputs. The last number scores the trained model's output with "
               "the heads off: how much less likely the heads' absence makes it.")
    switched_off_maps.jump_to_switched_off(off, "ex_ab")
    base, off_maps = lens_switch.lens_pair(translator, translation, changed, new, key="ex_ab")
    family, layer, head = map_picker("ex_ab", base)
    base_title, new_title, is_off = switched_off_maps.map_titles(off, family, layer, head)
    (c1, c2), width = class_mode.map_columns(2)
    draw_map(c1, base, family, layer, head, key="ex_ab_map_base", title=base_title, share=width)
    draw_map(c2, off_maps, family, layer, head, key="ex_ab_map_new", title=new_title, subtitle=is_off, share=width)
    st.caption(switched_off_maps.OFF_NOTE)


# ----------------------------------------------------------------------------- 4. the arithmetic behind a cell


def _cell_picked(key: str) -> None:
    cell = head_maps.picked_cell(selected(f"{key}_map", head_maps.CELL))
    if cell is not None:
        st.session_state[f"{key}_cell"] = cell


def cell_view(translator: Translator, translation: Translation, key: str = "ex_cell") -> None:
    att = translation.attention
    family, layer, head = map_picker(key, att, mean=False)
    matrix, rows, cols = families.matrix(att, family, layer, head)
    picked = st.session_state.get(f"{key}_cell")
    if picked is not None and not (picked[0] < len(rows) and picked[1] < len(cols)):
        picked = None
    drawn = head_maps.clickable_heatmap(matrix, rows, cols, title=f"{FAMILIES[family]}, layer {layer}, head {head}",
                                        query_name=NAMES[family][0], key_name=NAMES[family][1], picked=picked,
                                        sizes=class_mode.sizes())
    chart(st, drawn, key=f"{key}_map", filename=f"{family}-{layer}-{head}", on_select=partial(_cell_picked, key))
    if picked is None:
        st.info("Click a cell of the map: its query's arithmetic opens here.")
        return
    query, column = picked
    decoder_input = [translator.specials.start, *translation.token_ids[:-1]]
    cell = svg_views.eq1_picture(translator.model, translation.source_ids, decoder_input, family, layer, head, query,
                             rows[query], cols, column)
    d_head = cell.q.numel()
    st.markdown(f"**Query {code(rows[query])} (row {query}) → key {code(cols[column])} (column {column}).** The "
                f"layer's input at the query is projected to $q$, at every key to $k$ and $v$ ($d_k$ = {d_head}). "
                "The score is $q \\cdot k / \\sqrt{d_k}$; masked keys get $-\\infty$; the softmax of the row gives "
                "the weights; the head's output is the weighted sum of the values.")
    c1, c2, c3 = st.columns(3)
    c1.metric("q · k / √d_k", f"{float(cell.scores[column]):.4f}")
    c2.metric("weight (softmax)", f"{float(cell.weights[column]):.4f}")
    c3.metric("the model's weight", f"{float(cell.model_weights[column]):.4f}")
    with st.expander("The same numbers as tables"):
        table = pd.DataFrame({"key": cols, "q·k / √d_k": cell.scores.numpy(), "may attend": cell.mask.numpy(),
                              "after mask": cell.masked.numpy(), "softmax": cell.weights.numpy(),
                              "model's weight": cell.model_weights.numpy()})
        st.dataframe(table.style.format({c: "{:.4f}" for c in table.columns[1:] if c != "may attend"}).apply(
            lambda r: ["background-color: #fde2e2" if r.name == column else "" for _ in r], axis=1),
            key=f"{key}_table")
        show = min(8, d_head)
        values = np.vstack([cell.v[:, :show].numpy(), cell.output[None, :show].numpy()])
        st.markdown(f"**The head's output** $\\sum_k w_k v_k$ for this query (first {show} of {d_head} numbers), under "
                    "the values it mixes:")
        st.dataframe(pd.DataFrame(values, index=[f"v {i} ({c}) × {w:.3f}" for i, (c, w) in
                                                 enumerate(zip(cols, cell.weights.tolist()))] + ["output"],
                                  columns=[f"d{j}" for j in range(show)]).style.format("{:.3f}"), key=f"{key}_values")
    if not np.allclose(cell.weights.numpy(), cell.model_weights.numpy(), atol=1e-5):
        st.warning("The hand computation differs from the model's weights.")


# ----------------------------------------------------------------------------- 5. what if


def what_if_view(translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    c1, c2, c3 = st.columns(3)
    no_positions = c1.toggle("Remove the positional encodings", key="ex_nopos",
                             help="The model then sees a bag of pieces: word order is gone (Section 3.5).")
    no_causal = c2.toggle("Remove the causal mask", key="ex_nocausal",
                          help="Teacher-forced on the model's own output: each decoder query may read the tokens "
                               "after it, which it never could in training.")
    temperature = c3.select_slider("Attention temperature", [0.25, 0.5, 1.0, 2.0, 4.0], value=1.0, key="ex_temp",
                                   help="Every logit q·k/√d_k is divided by it: above 1 flattens each row, below 1 "
                                        "sharpens it.")
    intervention = Intervention(positions=not no_positions, temperature=temperature)
    if intervention.identity and not no_causal:
        st.info("Every switch is off: the model is unchanged. Turn one on to compare.")
        return
    changed = _changed(translator, intervention)
    if no_causal:
        forced = _forced(changed, translation.source_ids, translation.token_ids, causal=False)
        pieces = translator.tokenizer.target_pieces(forced.predicted)
        new_att = as_attention(translator, translation.source_ids, translation.token_ids, forced)
        title = "what it predicts at each position, reading the whole output"
        score, score_name = forced.score, "log-probability of the original output"
    else:
        new = translated(changed, text, settings)
        if new is None:
            return
        pieces, new_att, title = new.target_pieces, new.attention, "its translation"
        score, score_name = new.score, "log-probability of its output"
    before, after = changed_tokens(translation.target_pieces, pieces)
    c1, c2 = st.columns(2)
    c1.markdown(f"**The trained model**\n\n{marked(translation.target_pieces, before)}")
    what = intervention.describe() if not intervention.identity else ""
    what = ", ".join(x for x in (what, "no causal mask" if no_causal else "") if x)
    c2.markdown(f"**{plain(what)}**: {title}\n\n{marked(pieces, after)}")
    c1.metric("log-probability of its output", f"{translation.score:.3f}")
    c2.metric(score_name, f"{score:.3f}", delta=f"{score - translation.score:+.3f}")
    if no_causal:
        st.caption("Without the mask, decoder self-attention fills its upper triangle: each query reads the tokens "
                   "after it. The model never learnt to use them, so what it predicts drifts, and the last row, which "
                   "could read everything anyway, is unchanged.")
    family, layer, head = map_picker("ex_wi", translation.attention)
    (c1, c2), width = class_mode.map_columns(2)
    draw_map(c1, translation.attention, family, layer, head, key="ex_wi_map_base", title="trained model",
             share=width)
    draw_map(c2, new_att, family, layer, head, key="ex_wi_map_new", title=what, share=width)


# ----------------------------------------------------------------------------- 6. greedy, beam, reference


def search_view(translator: Translator, text: str, reference: str) -> None:
    if linked_choices.seed_text("ex_ref", "ref"):  # a link's reference, for the link's sentence
        st.session_state["ex_ref_source"] = text
    elif st.session_state.get("ex_ref_source") != text:  # a new sentence: its own reference, if the corpus has one
        st.session_state["ex_ref_source"], st.session_state["ex_ref"] = text, reference
    ref = st.text_input("Reference translation", key="ex_ref",
                        help="Filled in when the sentence is one of the corpus's examples.")
    share(ref=links.linkable(ref) if ref != reference else None)  # the corpus's own goes without
    greedy = translated(translator, text, SearchSettings())
    beam = translated(translator, text, SearchSettings(beam_size=4))
    if greedy is None or beam is None:
        return
    outputs = {"greedy": (greedy.token_ids, greedy.attention), "beam 4": (beam.token_ids, beam.attention)}
    rows = [["greedy", greedy.text, greedy.score], ["beam 4", beam.text, beam.score]]
    try:  # the app's limits, before the reference's masks are built
        ref_ids = reference_ids(translator, ref) if ref.strip() else None  # without <s>, with </s>
    except TranslationError as e:
        st.warning(plain(e))
        ref_ids = None
    if ref_ids:
        forced = _forced(translator, greedy.source_ids, ref_ids)
        outputs["reference"] = (ref_ids, as_attention(translator, greedy.source_ids, ref_ids, forced))
        rows.append(["reference (teacher-forced)", translator.tokenizer.decode_target(ref_ids), forced.score])
        rows.append(["its best token at each position", translator.tokenizer.decode_target(forced.predicted), None])
    class_mode.table(st, pd.DataFrame(search_comparison.table_rows(rows),
                                      columns=["output", "text", "log-probability"]),
                     key="ex_search_table", hide_index=True)
    lens, read = lens_switch.lens_outputs(translator, greedy.source_ids, outputs, key="ex_search")  # one lens for all
    c1, c2, c3, c4 = st.columns(4)
    names = list(outputs)
    a = c1.selectbox("Map of", names, key="ex_search_a")
    b = c2.selectbox("minus the map of", [n for n in names if n != a], key="ex_search_b")
    layer = c3.selectbox("Layer", list(range(len(read[a].cross))), key="ex_search_layer")
    heads = read[a].cross[0].shape[0]  # one map per layer for rollout, ALTI+ and value zeroing
    head = c4.selectbox("Head", [MEAN, *range(heads)] if heads > 1 else [MEAN], key="ex_search_head",
                        format_func=lambda h: "mean of heads" if h == MEAN else f"head {h}")
    head = None if head == MEAN else head
    (ids_a, _), (ids_b, _) = outputs[a], outputs[b]
    att_a, att_b = read[a], read[b]
    map_a, rows_a, cols = families.matrix(att_a, "cross", layer, head)
    map_b, _, _ = families.matrix(att_b, "cross", layer, head)
    prefix = shared_prefix(ids_a, ids_b)
    caption = search_comparison.difference_caption(a, b, prefix, ids_a, ids_b)
    if caption is None:
        st.success(search_comparison.same_output_note(a, b), icon=":material/check_circle:")
        return
    title = f"cross-attention{'' if lens == 'raw' else ' (' + LENS_LABELS[lens] + ')'}: {a} − {b}"
    drawn = head_maps.difference_heatmap(map_a, map_b, rows_a, cols, title=title, names=(a, b), divergence=prefix,
                                         query_name=NAMES["cross"][0], key_name=NAMES["cross"][1],
                                         sizes=class_mode.sizes())
    chart(st, drawn, key="ex_search_diff", filename=f"cross-attention-{a}-minus-{b}")
    st.caption(caption)


# ------------------------------------------------------- 8. another model (9. the report: ui.explain.report_download)


@st.cache_resource(max_entries=2, show_spinner="Loading the other model…")
def _other_model(path: str, stamp: float) -> Translator:
    return Translator(load_checkpoint(path, "cpu"))


def compare_view(translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    models = find_models()
    asked = link().get("partner")
    if asked is not None and asked not in {c.key for c in models}:  # a link's partner, wherever it is listed
        models += [c for c in [find_model(asked)] if c is not None]
    offered = model_comparison.partners(models, str(translator.checkpoint.path))
    if not offered:
        st.info("Only one model is available: train another (Train page) or pick a checkpoint of a run.")
        return
    choices = {c.path: c.label for c in offered}
    by_key = {c.key: c for c in offered}
    current = next((c.key for c in models if c.path == str(translator.checkpoint.path)), None)
    if asked is not None and asked == current:
        st.info("The link compares this model with itself: pick another model below.")
    else:
        key, problems = links.read_model({} if asked is None else {"model": asked}, list(by_key))
        link_problems(problems)
        if key is not None:
            st.session_state["ex_other"] = by_key[key].path
    path = st.selectbox("Compare with", list(choices), format_func=choices.get, key="ex_other",
                        help="Models with this model's language pair come first: their maps can be subtracted.")
    partner = next(c for c in offered if c.path == path)
    share(partner=partner.key)
    other = translated(_other_model(path, checkpoint_stamp(path)), text, settings)
    if other is None:
        return
    c1, c2 = st.columns(2)
    c1.markdown(f"**This model**\n\n{plain(translation.text)}")
    c2.markdown(f"**{plain(choices[path])}**\n\n{plain(other.text)}")
    c1.metric("log-probability of its output", f"{translation.score:.3f}")
    c2.metric("log-probability of its output", f"{other.score:.3f}")
    att_b = other.attention
    if len(att_b.cross) != len(translation.attention.cross) or att_b.cross[0].shape[0] != \
            translation.attention.cross[0].shape[0]:
        st.info("The two models have different numbers of layers or heads: their maps are shown side by side only "
                "as far as both have them.")
        att_b = dataclasses.replace(att_b, **{f: getattr(att_b, f)[: len(getattr(translation.attention, f))]
                                              for f in FAMILIES})
    family, layer, head = map_picker("ex_cmp", translation.attention)  # above the maps it controls
    layer = min(layer, len(getattr(att_b, family)) - 1)
    (m1, m2), width = class_mode.map_columns(2)
    draw_map(m1, translation.attention, family, layer, head, key="ex_cmp_map_a", title="this model", share=width)
    draw_map(m2, att_b, family, layer, head, key="ex_cmp_map_b", title="the other model", share=width)
    me = next((c for c in models if c.path == str(translator.checkpoint.path)), None)
    why_not = model_comparison.why_no_difference(family, translation, other, me, partner)
    if why_not:
        st.info(why_not)
        return
    map_a, rows, cols = families.matrix(translation.attention, family, layer, head)
    map_b, _, _ = families.matrix(att_b, family, layer, head)
    chart(st, head_maps.difference_heatmap(map_a, map_b, rows, cols, title="this model − the other",
                                           names=("this model", "the other"), query_name=NAMES[family][0],
                                           key_name=NAMES[family][1], sizes=class_mode.sizes()),
          key="ex_cmp_diff", filename="model-difference")
    st.caption("Both models cut the sentence into the same pieces and wrote the same output, so each row is the same "
               "query in both: red is more weight in this model, blue more in the other.")


"""The Explain page's views beyond attention: what one output token owes to each input word (Attribution), what
every layer would predict or translate (Logit lens, DecoderLens), and which activations carry a counterfactual
difference (Patching). Every number comes from `transformer.explain`; the figures from `ui.explain.attribution_figures`.
Model work runs in a decode slot, like every other translation of the app; each result is kept in the session
until its request changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import streamlit as st

from transformer.bidi import isolate
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translation, TranslationError, Translator
from transformer.explain.attribution import BASELINES, MAX_IG_STEPS, METHODS, attribute, candidates
from transformer.explain.interventions import changed_tokens
from transformer.explain.logit_lens import decoder_lens, logit_lens
from transformer.explain.patching import PatchingError, activation_patching, check_pair
from transformer.labels import shorten
from ui.explain import attribution_figures as figs
from ui.explain.foil_choice import foil_choice
from ui.shared.charts.show import chart
from ui.shared.models.loading import decode_turn
from ui.shared.models.translation_gate import bounded, decode_slot, prepare, translate
from ui.shared.state import class_mode, linked_choices, links
from ui.shared.state.page_state import choice_box, link, link_problems, share
from ui.shared.text.plain import piece_line, plain

VIEWS = {"attribution": "Attribution", "lens": "Logit lens", "patching": "Patching"}
# a word and one of the other gender (or person), for a first counterfactual source
AUTO, GAP = "auto", 0.05  # IG steps: raised until the completeness gap is under 5% (issue 37)
SWAPS = dict(pair for a, b in [("girl", "boy"), ("woman", "man"), ("women", "men"), ("king", "queen"),
                               ("he", "she"), ("his", "her"), ("him", "her"), ("father", "mother"),
                               ("son", "daughter"), ("brother", "sister"), ("husband", "wife"), ("lord", "lady")]
             for pair in ((a, b), (b, a)))


def swapped(text: str) -> str:
    """text with its first word of SWAPS replaced by the other one (capitals kept); text itself when none."""
    match = re.search(r"\b(" + "|".join(SWAPS) + r")\b", text, flags=re.IGNORECASE)
    if match is None:
        return text
    word = match.group(0)
    other = SWAPS[word.lower()]
    other = other.capitalize() if word[0].isupper() else other
    return text[: match.start()] + other + text[match.end():]


def _memo(name: str, request: tuple, compute: Callable[[], Any]) -> Any:
    """compute() in a decode slot, kept in the session until the request changes."""
    if st.session_state.get(f"{name}_request") != request:
        with decode_turn() as on_wait, decode_slot(on_wait):
            st.session_state[name] = compute()
        st.session_state[f"{name}_request"] = request
    return st.session_state[name]


def _piece(translator: Translator, token: int) -> str:
    return translator.tokenizer.target_pieces([token])[0]


def _marked(pieces: list[str], marks: list[bool]) -> str:
    return piece_line(pieces, marks)


def token_picker(container, key: str, translator: Translator, token_ids: list[int], label: str = "Output token"
                 ) -> int:
    pieces = translator.tokenizer.target_pieces(token_ids)
    return choice_box(container, label, list(range(len(token_ids))), key=key,
                      format_func=lambda t: f"{t}: {isolate(shorten(pieces[t]))}",
                      follow=lambda old, opts: min(old or 0, len(opts) - 1))


def show(view: str, translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    try:
        {"attribution": attribution_view, "lens": lens_view, "patching": patching_view}[view](
            translator, text, translation, settings)
    except TranslationError as e:  # the server busy, or a source beyond the app's limits
        st.warning(plain(e))


# ----------------------------------------------------------------------------- attribution


def _attribution_picks(translation: Translation) -> tuple[int, int | None, int | str, str]:
    """The Attribution view's picks: output position, foil (None: no contrast), IG steps ("auto" or a number) and
    baseline."""
    ss = st.session_state
    position = min(ss.get("ex_attr_pos", 0), len(translation.token_ids) - 1)
    foil, steps = ss.get("ex_attr_foil"), ss.get("ex_attr_steps", AUTO)
    baseline = ss.get("ex_attr_baseline", "zeros")
    return position, None if foil == translation.token_ids[position] else foil, steps, baseline


def _attribute(translator: Translator, translation: Translation, position: int, foil: int | None,
               steps: int | str, baseline: str):
    """attribute(); steps "auto": integrated gradients from 50 steps, doubled until its gap is under 5%."""
    fixed = steps != AUTO
    return attribute(translator.model, translator.tokenizer, translation.source_ids, translation.token_ids, position,
                     foil=foil, steps=steps if fixed else 50, baseline=baseline, target_gap=None if fixed else GAP)


def attribution_view(translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    st.markdown("Pick an output token: each method scores how much every source word and every word of the target "
                "prefix contributes to $f = \\log p(y_t)$, or, with a foil, to $\\log p(y_t) - \\log p(\\text{foil})$: "
                "why this token *rather than* the other (Yin & Neubig, 2022). Scores are of the token embeddings "
                "before the positions are added; a word's score is the sum of its pieces'.")
    if class_mode.is_on():  # the IG settings on a row of their own: five boxes in a row cut their values
        (c1, c2, c3), (c4, c5, _) = st.columns([2, 2, 1.6]), st.columns([1, 1, 2])
    else:
        c1, c2, c3, c4, c5 = st.columns([2, 2, 1.6, 1, 1])
    linked_choices.seed_indexes({"pos": ("ex_attr_pos", len(translation.token_ids))})
    position = token_picker(c1, "ex_attr_pos", translator, translation.token_ids)
    target = translation.token_ids[position]
    found = _memo("ex_attr_candidates", (str(translator.checkpoint.path), tuple(translation.source_ids),
                                         tuple(translation.token_ids), position),
                  lambda: candidates(translator.model, translation.source_ids, translation.token_ids, position,
                                     specials=translator.specials))
    foil = foil_choice(c2, c3, "ex_attr_foil", translator.tokenizer, target, [c.token for c in found],
                       {c.token: c.log_prob for c in found})
    c4.selectbox("IG steps", [AUTO, 20, 50, 100, 200], key="ex_attr_steps",
                 help=f"Points of the Riemann sum along the path from the baseline; more steps, smaller gap. auto: "
                      f"from 50, doubled until the gap is under {100 * GAP:g}% (at most {MAX_IG_STEPS}).")
    c5.selectbox("IG baseline", list(BASELINES), key="ex_attr_baseline",
                 help="zeros: every token embedding 0; pad: every token the <pad> embedding.")
    share(pos=str(position) if position else None)
    picks = _attribution_picks(translation)
    request = (str(translator.checkpoint.path), tuple(translation.source_ids), tuple(translation.token_ids), *picks)
    result = _memo("ex_attr_result", request, lambda: _attribute(translator, translation, *picks))
    token, foil_piece = _piece(translator, target), None if foil is None else foil.piece
    if foil is not None:  # a line of its own: a metric's label is cut at its column's width
        shown = plain(isolate(foil_piece))
        st.markdown(f"**Explained:** f = {plain(figs.question(isolate(token), isolate(foil_piece)))}: the log of how "
                    f"many times likelier the model finds the token than the foil (log p({shown}) = "
                    f"{result.foil_log_prob:.3f}; the difference of their logits: the softmax's normaliser cancels).")
    m1, m2, m3 = st.columns(3)
    m1.metric(f"log p({plain(isolate(token))})", f"{result.log_prob:.3f}")
    m2.metric("f (explained)", f"{result.f:.3f}")
    # short: a metric's label is cut at its column's width ("IG completeness gap at 5…" in class mode at 1280 px)
    m3.metric(f"IG gap at {result.completeness.steps} steps", f"{100 * result.completeness.relative_gap:.2f}%",
              help="The completeness gap: integrated gradients' attributions should sum to f(input) − f(baseline) "
                   "(Sundararajan et al., 2017); the gap shrinks with more steps.")
    st.caption(plain(figs.completeness_line(result)))
    chart(st, figs.attribution_bars(result, title=figs.attribution_title(token, foil_piece),
                                    sizes=class_mode.sizes()), key="ex_attr_bars", filename=f"attribution-{position}")
    special = ", ".join(f"{METHODS[m]} {s.special:+.3f}" for m, s in result.methods.items() if m != "occlusion")
    st.caption("Red raises f, blue lowers it (saliency is a norm: never negative). Occlusion replaces every piece of "
               "one word by <unk> and measures the drop of f; the gradient methods read the model at this input only. "
               f"The bars leave out what </s> and <s> take (in the IG total): {plain(special)}.")


# ----------------------------------------------------------------------------- logit lens and DecoderLens


def lens_view(translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    st.markdown("**Logit lens.** The decoder's state after each layer, at every position, read through the final "
                "norm and the output projection as if the layers above were gone: what each layer would already "
                "predict. The last column is the model's own distribution; bold: the token it emitted.")
    request = (str(translator.checkpoint.path), tuple(translation.source_ids), tuple(translation.token_ids))
    lens = _memo("ex_lens", request, lambda: logit_lens(translator.model, translation.source_ids,
                                                         translation.token_ids, k=5, specials=translator.specials))
    chart(st, figs.lens_table(lens, translation.target_pieces, lambda t: _piece(translator, t),
                              sizes=class_mode.sizes()), key="ex_lens_table", filename="logit-lens")
    st.caption("Column “embeddings” reads the decoder's input itself: with tied embeddings it mostly shows the token "
               "fed at that step (the one before the emitted one). Hover a cell for the top 5 and the emitted token's "
               "rank.")
    st.markdown("**DecoderLens** (Langedijk et al., 2024). The whole decoder cross-attends to an intermediate encoder "
                "layer's output (through the encoder's final norm) and translates: what each encoder layer alone "
                "would give. Orange pieces differ from the model's translation.")
    layers = _memo("ex_declens", (*request, text, settings), lambda: decoder_lens(translator, text, bounded(settings)))
    for item in layers:
        _, marks = changed_tokens(translation.target_pieces, item.translation.target_pieces)
        st.markdown(f"**{item.layer}** (log p {item.translation.score:.2f}): "
                    f"{_marked(item.translation.target_pieces, marks)}")


# ----------------------------------------------------------------------------- patching


def _pair_inputs(translator: Translator, text: str) -> tuple[str, str]:
    ss = st.session_state
    if ss.get("ex_patch_for") != text:  # a new sentence: its own pair
        ss["ex_patch_for"], ss["ex_patch_clean"], ss["ex_patch_other"] = text, text, swapped(text)
    linked_choices.seed_text("ex_patch_clean", "clean")  # a link's pair, for the link's sentence
    linked_choices.seed_text("ex_patch_other", "other")
    c1, c2 = st.columns(2)
    clean = c1.text_input("Clean source", key="ex_patch_clean")
    other = c2.text_input("Counterfactual source", key="ex_patch_other",
                          help="The same sentence with a word changed, e.g. a noun of the other gender; it must cut "
                               "into as many pieces as the clean one.")
    share(clean=links.linkable(clean) if clean != text else None,
          other=links.linkable(other) if other != swapped(clean) else None)
    return clean, other


def _patching(translator: Translator, clean: Translation, other: Translation, position: int, token: int,
              foil: int | None):
    request = (str(translator.checkpoint.path), tuple(clean.source_ids), tuple(other.source_ids),
               tuple(clean.token_ids[:position]), token, foil)
    return _memo("ex_patch_result", request, lambda: activation_patching(
        translator.model, clean.source_ids, other.source_ids, [translator.specials.start, *clean.token_ids[:position]],
        token, foil=foil))


def patching_view(translator: Translator, text: str, translation: Translation, settings: SearchSettings) -> None:
    st.markdown("Two runs: the clean source and a counterfactual one. One activation of the clean run is copied into "
                "the counterfactual run and everything after it recomputed; each cell is the change in the log-"
                "probability of the chosen token, or, with a foil, in $\\log p(\\text{token}) - \\log p(\\text{foil})$"
                " (Vig et al., 2020, measure a ratio of two words' probabilities). A cell near the full difference "
                "restores the clean prediction alone: that is where the difference is carried.")
    clean_text, other_text = _pair_inputs(translator, text)
    sources = [prepare(translator, t) for t in (clean_text, other_text)]
    try:
        check_pair(sources[0].ids, sources[1].ids, sources[0].pieces, sources[1].pieces)
    except PatchingError as e:
        st.warning(plain(e))
        return
    if sources[0].ids == sources[1].ids:  # every cell would be 0 up to rounding: nothing to draw
        st.info("The two sources are the same: change a word of the counterfactual one (the map would be all 0).")
        return
    clean = translation if clean_text == text else translate(translator, clean_text, settings)
    other = translate(translator, other_text, settings)
    before, after = changed_tokens(clean.target_pieces, other.target_pieces)
    c1, c2 = st.columns(2)
    c1.markdown(f"**Clean:** {_marked(clean.target_pieces, before)}")
    c2.markdown(f"**Counterfactual:** {_marked(other.target_pieces, after)}")
    linked_choices.seed_indexes({"pos": ("ex_patch_pos", len(clean.token_ids))})
    position = token_picker(c1, "ex_patch_pos", translator, clean.token_ids, "Position (of the clean output)")
    share(pos=str(position) if position else None)
    options = [clean.token_ids[position]]
    if position < len(other.token_ids) and other.token_ids[position] not in options:
        options.append(other.token_ids[position])
    found = candidates(translator.model, clean.source_ids, clean.token_ids, position, specials=translator.specials)
    options += [c.token for c in found if c.token not in options]
    if st.session_state.get("ex_patch_token_for") != (tuple(clean.token_ids), position):  # new options: the clean token
        st.session_state["ex_patch_token_for"] = (tuple(clean.token_ids), position)
        st.session_state.pop("ex_patch_token", None)
    linked, problems = links.read_index(link(), "token", translator.model.config.tgt_vocab_size)
    link_problems(problems if linked is None or linked in options else
                  [f"Token {linked} of the link is not among this position's choices; the clean token is measured."])
    if linked in options:
        st.session_state["ex_patch_token"] = linked
    token = choice_box(c2, "Token whose log-probability is measured", options, key="ex_patch_token",
                       format_func=lambda t: isolate(_piece(translator, t)))
    share(token=str(token) if token != options[0] else None)
    f1, f2 = st.columns(2)
    foil = foil_choice(f1, f2, "ex_patch_foil", translator.tokenizer, token, options,
                       {c.token: c.log_prob for c in found})
    result = _patching(translator, clean, other, position, token, None if foil is None else foil.id)
    pieces = (_piece(translator, token), None if foil is None else foil.piece)
    measure = plain(figs.question(*(None if p is None else isolate(p) for p in pieces)))
    st.markdown(f"**Measured:** {measure}")
    m1, m2, m3 = st.columns(3)
    m1.metric("clean run", f"{result.clean_log_prob:.3f}")
    m2.metric("counterfactual run", f"{result.counterfactual_log_prob:.3f}")
    m3.metric("difference to restore", f"{result.difference:+.3f}")
    above = st.container()  # the residual map above the heads' row
    columns, width = class_mode.map_columns(len(result.heads))
    residual, *heads = figs.patching_figures(result, clean.source_pieces, other.source_pieces, *pieces,
                                             sizes=class_mode.sizes(), head_sizes=class_mode.sizes(width))
    chart(above, residual, key="ex_patch_residual", filename="patching-residual")
    for column, drawn, family in zip(columns, heads, result.heads):
        chart(column, drawn, key=f"ex_patch_{family}", filename=f"patching-{family}")
    st.caption("Rows of the first map: the encoder's residual stream entering each layer (embeddings: the token "
               "embedding plus position; the last row: the encoder's output). A head's cell copies its output before "
               f"W^O at every query position. Red raises {measure} towards the clean run.")


# ----------------------------------------------------------------------------- the report


def report_picks(translation: Translation) -> dict[str, Any]:
    """What the views picked, read now: the report is built later, on another thread, without the session."""
    ss = st.session_state
    return {"attribution": _attribution_picks(translation),
            "clean": ss.get("ex_patch_clean", translation.source),
            "other": ss.get("ex_patch_other", swapped(translation.source)),
            "position": ss.get("ex_patch_pos", 0), "token": ss.get("ex_patch_token"),
            "foil": ss.get("ex_patch_foil")}


def report_sections(translator: Translator, translation: Translation, settings: SearchSettings,
                    picks: dict[str, Any]) -> list[str]:
    """The report's attribution, logit-lens, DecoderLens and patching sections for the views' picks (no
    streamlit: this runs on the download's thread)."""
    position, foil, steps, baseline = picks["attribution"]
    with decode_slot():
        result = _attribute(translator, translation, position, foil, steps, baseline)
        lens = logit_lens(translator.model, translation.source_ids, translation.token_ids, k=5,
                          specials=translator.specials)
    layers = decoder_lens(translator, translation.source, bounded(settings))
    patching = pair = pair_pieces = patched_foil = None
    token = ""
    try:
        sources = [prepare(translator, t) for t in (picks["clean"], picks["other"])]
        check_pair(sources[0].ids, sources[1].ids)
        clean = translate(translator, picks["clean"], settings)
        pos = min(picks["position"], len(clean.token_ids) - 1)
        target = picks["token"] if picks["token"] is not None else clean.token_ids[pos]
        patched_foil = None if picks.get("foil") in (None, target) else picks["foil"]
        with decode_slot():
            patching = activation_patching(translator.model, clean.source_ids, sources[1].ids,
                                           [translator.specials.start, *clean.token_ids[:pos]], target,
                                           foil=patched_foil)
        pair, pair_pieces, token = (picks["clean"], picks["other"]), (sources[0].pieces, sources[1].pieces), \
            _piece(translator, target)
    except (TranslationError, PatchingError):
        pass  # no patching section for a pair that cannot be patched
    return figs.report_sections(
        attribution=result, token=_piece(translator, translation.token_ids[position]),
        foil=_piece(translator, foil) if foil is not None else None, lens=lens,
        output_pieces=translation.target_pieces, piece_of=lambda t: _piece(translator, t),
        layer_translations=[(item.layer, item.translation.text, item.translation.score) for item in layers],
        patching=patching, pair=pair, pair_pieces=pair_pieces, patched_token=token,
        patched_foil=None if patched_foil is None else _piece(translator, patched_foil))

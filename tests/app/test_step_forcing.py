"""The step page forces any candidate or a typed word and decodes on: the forced pieces marked in
the candidate list, the output, the Result and the beam tree; Back takes a forced piece back; the link keeps the
prefix as text, and a prefix the page cannot force is a message that loses nothing else."""

from __future__ import annotations

import re

import pytest

from tests.app_fixtures import PAIRS, at, checkpoints, page  # noqa: F401 (fixtures)
from tests.chart_reading import (
    chart_titled,  # noqa: F401 (fixtures)
    charts,
)
from ui.step.candidate_bars import FORCED, FORCED_MARK, MARK

STEP = "pages/2_Step_by_step.py"
TEXT = PAIRS[3][0]  # "the woman reads a book ."


def session(app):
    return app.session_state["step_session"]


def ticks(app) -> list[str]:
    """The candidate bars' labels (the first chart of the page)."""
    return charts(app)[0].labels("y", "bar")


def started(app, **params):
    if params:
        app.query_params.update(params)
        app.switch_page(STEP).run()
    else:
        page(app, STEP)
        app.text_input(key="step_text").input(TEXT).run()
    assert not app.exception, app.exception
    return app


def forced_ticks(app) -> list[str]:
    """The candidate bars' labels drawn violet (every forced label is)."""
    colour = charts(app)[0].view("bar")["encoding"]["y"]["axis"]["labelColor"]
    slots = [int(n) for n in re.findall(r"datum\.value == (\d+)", colour["condition"]["test"])]
    out = [ticks(app)[i] for i in slots] if colour["condition"]["value"] == FORCED else []
    assert len(out) == sum(FORCED_MARK in t for t in ticks(app))
    return out


def tokenizer(app):
    from transformer.data.tokenizer import load_tokenizer

    return load_tokenizer(f"{app.session_state['step_request'][0]}/tokenizer.json")


def candidate_box(app):
    return next(b for b in app.selectbox if b.label == "A candidate")


def violet(app) -> list[str]:
    """The page's lines with a forced part (on violet, after the mark)."""
    return [m.value for m in app.markdown if ":violet-background[" + FORCED_MARK in m.value]


def test_a_non_top_candidate_is_forced_marked_and_decoded_on_from(at):  # noqa: F811
    started(at)
    at.button(key="step_next").click().run()
    own = session(at).history[0].nodes[0].token
    candidates = session(at).history[0].live[0].candidates
    third = sorted(zip(candidates.probs, candidates.tokens), key=lambda c: (-c[0], c[1]))[2][1]
    box = candidate_box(at)
    box.set_value(2).run()  # the third most probable candidate, not the model's choice
    picked = at.session_state["step_force_pick"]
    assert picked == third != own
    at.button(key="step_force_candidate").click().run()
    assert not at.exception and not at.error
    s = session(at)
    assert s.prefix == [picked] and s.n_steps == 1 and s.history[0].nodes[0].token == picked
    word = tokenizer(at).decode_target([picked])
    assert forced_ticks(at) == [FORCED_MARK + "▁" + word]  # violet, as the output line
    assert not [t for t in ticks(at) if t.startswith(MARK)]
    assert f"**Step 1.** Output so far: :violet-background[{FORCED_MARK}{word}]" in violet(at)
    assert at.query_params["prefix"] == word  # the link keeps it, as text
    at.button(key="step_next").click().run()  # the model's own choice again
    s = session(at)
    assert s.n_steps == 2 and s.prefix == [picked] and s.history[1].nodes[0].status != "pruned"
    assert [t for t in ticks(at) if t.startswith(MARK)] and not forced_ticks(at)
    at.button(key="step_run_to_end").click().run()
    done = next(m.value for m in at.markdown if m.value.startswith(f"**Step {session(at).n_steps}.**"))
    assert done.startswith(f"**Step {session(at).n_steps}.** Done: :violet-background[{FORCED_MARK}{word}]")
    result = next(m.value for m in at.markdown if m.value.startswith("**Result:**"))
    assert result.startswith(f"**Result:** :violet-background[{FORCED_MARK}{word}]")
    assert session(at).result().best.tokens[0] == picked


def test_a_typed_word_forces_all_its_pieces_and_back_takes_them_back_one_by_one(at):  # noqa: F811
    started(at)
    at.button(key="step_next").click().run()
    own = session(at).history[0].nodes[0].token
    at.text_input(key="step_force_word").input("la femme").run()
    at.button(key="step_force_typed").click().run()
    assert not at.exception and not at.error
    s = session(at)
    assert s.n_steps == 2 and len(s.prefix) == 2 and [h.nodes[0].token for h in s.history] == s.prefix
    assert any("is 2 pieces" in i.value and "all 2 are forced" in i.value for i in at.info)
    assert at.query_params["prefix"] == "la femme"
    assert any("steps 1 to 2" in c.value for c in at.caption)
    at.button(key="step_back").click().run()  # a forced step: its piece leaves the prefix
    assert session(at).n_steps == 1 and session(at).prefix == s.prefix[:1]
    assert at.query_params["prefix"] == "la"
    at.button(key="step_back").click().run()
    assert session(at).n_steps == 0 and session(at).prefix == [] and "prefix" not in at.query_params
    at.button(key="step_next").click().run()  # the model is asked again: its own first token
    assert session(at).history[0].nodes[0].token == own and not violet(at)


def test_reset_drops_the_forced_pieces_and_back_after_them_keeps_them(at):  # noqa: F811
    started(at)
    at.button(key="step_next").click().run()
    at.text_input(key="step_force_word").input("femme").run()
    at.button(key="step_force_typed").click().run()
    forced = session(at).prefix
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    at.button(key="step_back").click().run()  # a step of the model's own: the forced piece stays
    assert session(at).n_steps == 2 and session(at).prefix == forced
    at.button(key="step_reset").click().run()
    assert session(at).n_steps == 0 and session(at).prefix == [] and "prefix" not in at.query_params


def test_a_link_restores_the_forced_prefix_in_a_beam_search_with_its_tree(at):  # noqa: F811
    started(at, text=TEXT, search="beam", beam="3", prefix="la femme")
    s = session(at)
    assert not at.warning and s.n_steps == 2 and len(s.prefix) == 2
    assert s.history[1].nodes[0].token == s.prefix[1] and len(s.history[1].nodes) == 1  # forced: one hypothesis
    assert at.text_input(key="step_text").value == TEXT and at.query_params["beam"] == "3"
    assert at.query_params["prefix"] == "la femme" and any(sub.value == "Beam tree" for sub in at.subheader)
    assert forced_ticks(at) == [FORCED_MARK + "▁femme"]
    at.button(key="step_run_to_end").click().run()
    assert not at.exception
    assert all(h.tokens[:2] == s.prefix for h in session(at).result().hypotheses)


def test_continue_from_a_tree_node_forces_that_nodes_output_and_an_ended_node_offers_none(at):  # noqa: F811
    from transformer.explain.views.tree import node_prefix

    started(at, text=TEXT, search="beam", beam="3")
    at.button(key="step_run_to_end").click().run()
    history = session(at).history
    ended = next((t, r) for t, step in enumerate(history) for r, n in enumerate(step.nodes)
                 if n.status in ("finished", "stopped"))
    at.session_state["step_tree_open"] = f"{ended[0]}:{ended[1]}"  # what a click on the node sends
    at.run()
    assert not [b for b in at.button if b.key == "step_tree_continue"]
    assert any("there is nothing after it to decode" in c.value for c in at.caption)
    t, rank = next((t, r) for t, step in enumerate(history) if t >= 2 for r, n in enumerate(step.nodes)
                   if n.status in ("live", "pruned") and r > 0)  # not the beam's best: another output
    at.session_state["step_tree_open"] = f"{t}:{rank}"
    at.run()
    at.button(key="step_tree_continue").click().run()
    assert not at.exception and not at.error
    assert session(at).prefix == node_prefix(history, t, rank) and session(at).n_steps == t + 1
    assert any(sub.value == "Beam tree" for sub in at.subheader)
    at.session_state["step_tree_open"] = f"{t}:0"  # the continued node, opened: its output marked forced
    at.run()
    opened = next(m.value for m in at.markdown if m.value.startswith(f"**Step {t + 1}, rank 0**"))
    assert f"(live, forced): :violet-background[{FORCED_MARK}" in opened
    lines = [str(f.proto) for f in at.get("iframe") if "target queries" in str(f.proto)][-1]  # the node's head view
    assert FORCED_MARK.strip() in lines  # the forced queries' labels


@pytest.mark.parametrize("prefix, message", [
    ("zèbre", "The link's forced prefix 'zèbre' cannot be forced: 'zèbre' has pieces the target vocabulary lacks"),
    (" ".join(["la"] * 40), "40 pieces, but the output limit for this source is"),
    ("la" * 600, "longer than 1000 characters; it was left out"),
])
def test_a_bad_prefix_in_a_link_is_a_message_and_loses_nothing_else(at, prefix, message):  # noqa: F811
    started(at, text=TEXT, search="beam", beam="3", layer="1", prefix=prefix)
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert [w for w in warnings if message in w], warnings
    s = session(at)
    assert s.prefix == [] and s.n_steps == 0 and s.settings.beam_size == 3
    assert at.text_input(key="step_text").value == TEXT and "prefix" not in at.query_params
    assert at.query_params["beam"] == "3" and at.query_params["text"] == TEXT


@pytest.mark.parametrize("word, message", [
    ("zèbre", "Cannot force 'zèbre': 'zèbre' has pieces the target vocabulary lacks (<unk>)"),
    ("   ", "Type a word to force"),
    (" ".join(["la"] * 40), "40 pieces, but the output limit for this source is"),
])
def test_a_word_the_page_cannot_force_is_a_message_and_the_step_stays(at, word, message):  # noqa: F811
    started(at)
    at.button(key="step_next").click().run()
    before = session(at)
    at.text_input(key="step_force_word").input(word).run()
    at.button(key="step_force_typed").click().run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert [e for e in errors if message in e], errors
    assert session(at) is before and before.n_steps == 1 and before.prefix == []
    assert at.text_input(key="step_force_word").value == word  # refused: kept, to be corrected


def test_a_new_search_keeps_the_forced_prefix_and_a_new_sentence_drops_it(at):  # noqa: F811
    started(at)
    at.button(key="step_next").click().run()
    at.text_input(key="step_force_word").input("la femme").run()
    at.button(key="step_force_typed").click().run()
    forced = session(at).prefix
    assert at.text_input(key="step_force_word").value == ""  # forced: not left in the box for another step or model
    at.radio(key="step_method").set_value("beam").run()
    assert session(at).settings.beam_size > 1 and session(at).prefix == forced and session(at).n_steps == 2
    at.text_input(key="step_text").input(PAIRS[0][0]).run()
    assert session(at).prefix == [] and session(at).n_steps == 0
    assert [i.value for i in at.info if "dropped" in i.value] == ["A new sentence: the forced pieces were dropped."]
    assert not at.warning
    at.button(key="step_next").click().run()
    at.text_input(key="step_force_word").input("femme").run()
    at.button(key="step_force_typed").click().run()
    assert session(at).prefix
    at.selectbox(key="_model_select").set_value(next(o for o in at.selectbox(key="_model_select").options
                                                     if "tiny-ar" in o)).run()
    assert not at.exception and session(at).prefix == []
    assert any(i.value.startswith("Another model: the forced pieces were dropped") for i in at.info)


def test_the_beam_tree_marks_the_forced_steps_nodes_and_only_them(at):  # noqa: F811
    import xml.etree.ElementTree as ET

    from transformer.explain.views import tree

    started(at, text=TEXT, search="beam", beam="3", prefix="la femme")
    at.button(key="step_next").click().run()
    s = session(at)
    svg, _, _ = tree.beam_tree_svg(s.history, tokenizer(at).target_pieces, None, forced=len(s.prefix))
    nodes = [g for g in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}g") if "node" in g.get("class", "")]
    forced = {(g.get("data-step"), g.get("data-rank")) for g in nodes if "forced" in g.get("class").split()}
    assert forced == {("0", "0"), ("1", "0")} and len(nodes) > 3  # the root, one node per forced step, then a beam
    assert "forced: given, not chosen" in tree.legend(True) and "forced" not in tree.legend(False)
    plain_svg, _, _ = tree.beam_tree_svg(s.history, tokenizer(at).target_pieces)
    assert "forced" not in plain_svg


def test_sampling_forces_every_sample_and_draw_again_keeps_the_forced_words(at):  # noqa: F811
    started(at)
    at.radio(key="step_method").set_value("sample").run()
    at.button(key="step_next").click().run()
    at.text_input(key="step_force_word").input("la femme").run()
    at.button(key="step_force_typed").click().run()
    s = session(at)
    assert not at.exception and s.settings.do_sample and s.n_steps == 2
    assert all(n.token == token for step, token in zip(s.history, s.prefix) for n in step.nodes)
    assert len(s.history[1].nodes) == s.settings.num_samples  # each sample was given the same pieces
    at.button(key="step_next").click().run()
    at.button(key="step_draw_again").click().run()
    redrawn = session(at)
    assert redrawn.settings.seed == s.settings.seed + 1 and redrawn.prefix == s.prefix and redrawn.n_steps == 3
    assert at.query_params["prefix"] == "la femme"


def test_the_candidate_box_opens_at_the_piece_each_step_emitted(at):  # noqa: F811
    started(at)
    at.button(key="step_next").click().run()
    assert candidate_box(at).index == 0  # greedy search's choice: the most probable
    candidate_box(at).set_value(3).run()
    at.button(key="step_next").click().run()
    assert candidate_box(at).index == 0  # a new step: not the last step's pick
    candidate_box(at).set_value(2).run()
    at.button(key="step_force_candidate").click().run()
    assert candidate_box(at).index == 2 and at.session_state["step_force_pick"] == session(at).prefix[-1]


def test_every_fuzz_input_typed_as_a_word_is_forced_or_refused_in_a_message_shown_as_text(at):  # noqa: F811
    from tests.bad_input.test_fuzz import INPUTS, _typed, assert_safe

    started(at)
    at.button(key="step_next").click().run()
    outcomes = set()
    for _, text in [*INPUTS[::10], ("known", "la femme")]:  # the tiny vocabulary knows few of the fuzz words
        text = text[:200]  # the box takes 200 characters (max_chars), as the browser enforces
        at.button(key="step_reset").click().run()
        at.button(key="step_next").click().run()
        _typed(at, "step_force_word", text)
        at.button(key="step_force_typed").click().run()
        assert_safe(at, text)
        if at.error:
            assert all(e.value.startswith(("Cannot force", "Type a word")) for e in at.error), text[:60]
            assert session(at).prefix == []
            outcomes.add("refused")
        else:
            assert session(at).prefix and session(at).n_steps == len(session(at).prefix), text[:60]
            outcomes.add("forced")
    assert outcomes == {"forced", "refused"}


def test_pieces_whose_text_reads_back_otherwise_say_so_under_the_output(at):  # noqa: F811
    from ui.step.forcing import PENDING, Force

    started(at)
    at.button(key="step_next").click().run()
    tok = tokenizer(at)
    word = next(i for i in range(4, tok.tgt_vocab_size) if tok.target_pieces([i])[0] == "aime")  # from "j'aime"
    at.session_state[PENDING] = Force((word,))  # what "Continue with this" sends for that candidate
    at.run()
    assert session(at).prefix == [word] and at.query_params["prefix"] == "aime"
    assert any("reads back as other pieces" in c.value for c in at.caption)
    at.session_state[PENDING] = Force((tok.encode_target("la")[1],))
    at.run()
    assert not [c for c in at.caption if "reads back as other pieces" in c.value]


def test_the_step_line_the_head_views_and_the_n_best_mark_the_forced_pieces(at):  # noqa: F811
    started(at, text=TEXT, search="beam", beam="3", prefix="la femme")

    def step_line():
        return next(m.value for m in at.markdown if m.value.startswith("At step "))

    def self_keys():
        return chart_titled(at, "self-attention per head").labels("x")

    # step 2 read <s> la: the forced "la" is both the read prefix's forced part and the query
    assert step_line().count(":violet-background[" + FORCED_MARK) == 2 and "▁la" in step_line()
    assert [FORCED_MARK in k for k in self_keys()] == [False, True]
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()  # step 4 read <s> la femme and the model's own piece
    assert step_line().count(":violet-background[" + FORCED_MARK) == 1
    assert [FORCED_MARK in k for k in self_keys()] == [False, True, True, False]
    at.button(key="step_run_to_end").click().run()
    radio = next(r for r in at.radio if r.label == "Open a hypothesis to see its attention")
    assert len(radio.options) == 3
    assert all(o.startswith(f":violet-background[{FORCED_MARK}") and "femme" in o for o in radio.options)

"""Forced prefixes: every engine emits the given pieces first, with the probabilities a teacher-forced pass
gives them, and decodes on from there; a prefix the tokenizer cannot make is refused with its reason."""

import json
import math
import re

import pytest
import torch

from tests.conftest import SPECIALS, tiny_config
from tests.decoding.test_translate import run_cli
from tests.model.test_special_ids import MARIAN, MarianLikeTokenizer, marian_model
from transformer import Transformer
from transformer.data.corpora.base import normalize_text
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding.search import SearchSettings, search
from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import Translator
from transformer.model.checkpoint import Checkpoint, save_checkpoint

PAIRS = [("the house is big", "la maison est grande"), ("a cat", "un chat"), ("the cat is small", "le chat est petit"),
         ("a big house", "une grande maison")]
SETTINGS = [SearchSettings(), SearchSettings(beam_size=3, nbest=2),
            SearchSettings(do_sample=True, num_samples=3, seed=4)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    tokenizer = train_tokenizer(PAIRS, kind="wordlevel", vocab_size=50, min_frequency=1)
    torch.manual_seed(1)
    config = tiny_config(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size, max_len=12)
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", Transformer(config).eval(), tokenizer=tokenizer)


@pytest.fixture(scope="module")
def translator(checkpoint):
    return Translator(checkpoint)


@pytest.fixture(scope="module")
def marian():
    model = marian_model()
    return Translator(Checkpoint(None, model.config, model, MarianLikeTokenizer()))


def teacher_forced(translator, source_ids, tokens):
    """log p of each of tokens after the start token and the tokens before it, in one pass over the whole output."""
    specials = translator.specials
    with torch.no_grad():
        logits = translator.model(torch.tensor([source_ids]), torch.tensor([[specials.start, *tokens[:-1]]])).logits
    logp = logits[0].double().log_softmax(-1)  # (T, V)
    return logp.gather(1, torch.tensor(tokens)[:, None])[:, 0].tolist()


@pytest.mark.parametrize("which, text, prefix", [("translator", "the house is big", "une grande"),
                                                 ("translator", "a cat", "le chat est"),
                                                 ("marian", "w5 w9 w7", "w12 w3")])
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.method)
def test_a_forced_prefix_starts_every_output_with_teacher_forced_probabilities(request, which, text, prefix, settings):
    translator = request.getfixturevalue(which)
    ids = translator.tokenizer.encode_target(normalize_text(prefix))[1:-1]
    t = translator.translate(text, settings, prefix=prefix)
    assert t.forced == len(ids) == len(prefix.split())
    outputs = [t.token_ids] + [a.token_ids for a in t.alternatives]
    assert len(outputs) == (settings.num_samples if settings.do_sample else settings.nbest)
    assert all(out[: t.forced] == ids and len(out) > t.forced for out in outputs)  # decoded on after the prefix
    assert t.text.startswith(prefix)
    scores, expected = [math.log(p) for p in t.token_probs], teacher_forced(translator, t.source_ids, t.token_ids)
    # float32: cached steps against one pass differ by up to 1.1e-6 at log p = -6.8 (Marian-like, 3 samples)
    assert scores[: t.forced] == pytest.approx(expected[: t.forced], rel=1e-6, abs=1e-6)
    assert scores == pytest.approx(expected, abs=1e-5)
    assert translator.translate(text, settings, prefix=ids).token_ids == t.token_ids  # ids or text: the same


@pytest.mark.parametrize("settings", SETTINGS[:2], ids=lambda s: s.method)
def test_forcing_the_models_own_choices_changes_nothing_and_forcing_another_changes_the_rest(translator, settings):
    own = translator.translate("the house is big", settings)
    forced = translator.translate("the house is big", settings, prefix=own.token_ids[:2])
    assert forced.token_ids == own.token_ids and forced.score == pytest.approx(own.score, abs=1e-5)
    other = next(i for i in range(4, translator.tokenizer.tgt_vocab_size) if i != own.token_ids[0])
    moved = translator.translate("the house is big", settings, prefix=[other])
    assert moved.token_ids[0] == other and moved.score < own.score  # greedy's first token was the most probable


def test_the_forced_steps_record_the_forced_token_among_the_candidates(translator):
    for settings in SETTINGS:
        settings = SearchSettings(**{**settings.__dict__, "record_steps": True, "candidates": 1})
        src = torch.tensor([translator.prepare("a cat").ids])
        result = search(translator.model, src, settings, specials=SPECIALS, prefix=[9, 4])[0]
        for step, token in zip(result.steps, [9, 4]):
            rows = settings.num_samples if settings.do_sample else 1  # beam search: one hypothesis while forced
            assert [n.token for n in step.nodes] == [token] * rows and len(step.live) == rows
            assert all(token in h.candidates.tokens for h in step.live)


def test_a_session_decodes_on_from_its_prefix_and_back_keeps_it(translator):
    for settings in SETTINGS:
        session = translator.session("the cat is small", settings, prefix="une maison")
        assert session.prefix == translator.prefix_ids("une maison")
        first = session.step()
        assert {n.token for n in first.nodes} == set(session.prefix[:1])
        session.step()
        session.back()
        assert session.n_steps == 1 and session.history[0].nodes == first.nodes
        result = session.run_to_end()
        one_shot = translator.translate("the cat is small", settings, prefix="une maison")
        assert result.best.tokens == one_shot.token_ids


@pytest.mark.parametrize("prefix, message", [
    ("une zèbre", "'zèbre' has pieces the target vocabulary lacks (<unk>)"),
    ("   ", "no target pieces"),
    ([4, 50], "piece 2 must be an id between 0 and"),
    ([4, True], "piece 2 must be an id"),
    ([SPECIALS.start], "piece 1 is id 1, which decoding never emits"),
    ([SPECIALS.pad, 4], "piece 1 is id 0, which decoding never emits"),
    ([4, SPECIALS.eos], "piece 2 is </s>"),
    ([4] * 12, "12 pieces, but the output limit for this source is 12 tokens, </s> included"),
])
def test_a_prefix_the_tokenizer_cannot_make_is_refused(translator, prefix, message):
    with pytest.raises(ValueError, match="^prefix: ") as error:
        translator.translate("a cat", prefix=prefix)
    assert message in str(error.value)
    with pytest.raises(ValueError, match="^prefix: "):
        DecodingSession(translator.model, [5, 2], specials=SPECIALS, prefix=[SPECIALS.eos])


def test_a_marian_prefix_is_refused_by_its_own_special_ids(marian):
    for prefix, message in [([MARIAN.pad], "id 29, which decoding never emits"), ([MARIAN.eos], "is </s> (id 0)"),
                            ([SPECIALS.eos], None)]:
        if message is None:
            assert marian.translate("w5 w9", prefix=prefix).token_ids[0] == SPECIALS.eos  # id 2 is a word here
        else:
            with pytest.raises(ValueError, match=re.escape(message)):
                marian.translate("w5 w9", prefix=prefix)


def test_the_command_prints_the_forced_translation_and_refuses_a_bad_prefix(checkpoint, translator,
                                                                            translate_cli):
    # the first in a process of its own, the rest through main in this one (no torch import each)
    for cli, flags in ((run_cli, []), (translate_cli, ["--beam", "3"]), (translate_cli, ["--sample", "--seed", "2"])):
        done = cli("--checkpoint", str(checkpoint), "--prefix", "le chat", *flags, "the house is big")
        assert done.returncode == 0, done.stderr
        settings = SearchSettings(beam_size=3) if "--beam" in flags else \
            SearchSettings(do_sample=True, seed=2) if flags else SearchSettings()
        expected = translator.translate("the house is big", settings, prefix="le chat")
        assert done.stdout == expected.text + "\n" and done.stdout.startswith("le chat")
    done = translate_cli("--checkpoint", str(checkpoint), "--prefix", "le chat", "--json", stdin="a cat\nthe house\n")
    assert [json.loads(line)["forced"] for line in done.stdout.splitlines()] == [2, 2]
    done = translate_cli("--checkpoint", str(checkpoint), "--prefix", "zèbre", "a cat")
    assert done.returncode == 2 and done.stdout == "" and "prefix: 'zèbre' has pieces" in done.stderr

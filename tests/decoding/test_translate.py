import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import SPECIALS, tiny_config
from tests.fuzz_inputs import SEARCH_FLAGS, STDIN_LINES
from transformer import Transformer
from transformer.data.corpora.base import normalize_text
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding import translate
from transformer.decoding.bounds import MAX_BEAM
from transformer.decoding.search import SearchSettings, greedy_decode
from transformer.decoding.translate import TranslationError, Translator, find_checkpoint
from transformer.model.checkpoint import CheckpointError, save_checkpoint

PAIRS = [("the house is big", "la maison est grande"), ("a cat", "un chat"), ("the cat is small", "le chat est petit"),
         ("a big house", "une grande maison")]
MAX_LEN = 12
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    tokenizer = train_tokenizer(PAIRS, kind="wordlevel", vocab_size=50, min_frequency=1)
    torch.manual_seed(1)
    config = tiny_config(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size,
                         max_len=MAX_LEN)
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", Transformer(config).eval(), tokenizer=tokenizer)


@pytest.fixture(scope="module")
def translator(checkpoint) -> Translator:
    return Translator(checkpoint, batch_size=2)


def test_translation_fields_agree_with_each_other_and_with_greedy_decoding(translator):
    t = translator.translate("  the house\tis  big ")
    assert t.source == "the house is big" and t.source_pieces[-1] == "</s>" and len(t.source_ids) == 5
    assert t.text == translator.tokenizer.decode_target(t.token_ids)
    assert t.target_pieces == translator.tokenizer.target_pieces(t.token_ids)
    assert len(t.token_probs) == len(t.token_ids) and all(0 < p <= 1 for p in t.token_probs)
    assert t.score == pytest.approx(sum(math.log(p) for p in t.token_probs), abs=1e-5)
    (decoded,) = greedy_decode(translator.model, torch.tensor([t.source_ids]), specials=SPECIALS)
    assert decoded.best.tokens == t.token_ids and t.alternatives == [] and t.attention is None
    assert ("length limit" in " ".join(t.warnings)) == (t.token_ids[-1] != SPECIALS.eos)


def test_a_batch_comes_back_in_input_order_and_equals_one_at_a_time(translator):
    texts = ["a big house", "a cat", "the cat is small and the house is big", "the house"]  # 3 length-sorted batches
    settings = SearchSettings(beam_size=2, nbest=2)
    batched = translator.translate_batch(texts, settings)
    assert [t.source for t in batched] == texts
    for text, t in zip(texts, batched):
        alone = translator.translate(text, settings)
        assert (alone.token_ids, [a.token_ids for a in alone.alternatives]) == (
            t.token_ids, [a.token_ids for a in t.alternatives])
        assert len(t.alternatives) == 1 and t.alternatives[0].normalized_score <= t.normalized_score
        assert t.alternatives[0].token_ids != t.token_ids


def test_attention_maps_cover_the_sentence_and_match_the_decoding_steps(translator):
    t = translator.translate("the cat is big", attention=True)
    maps, H = t.attention, translator.model.config.n_heads
    S, T = len(t.source_ids), len(t.token_ids)
    assert maps.source_pieces == t.source_pieces and maps.target_pieces == t.target_pieces
    assert maps.target_input_pieces == ["<s>"] + t.target_pieces[:-1]
    assert [w.shape for w in maps.enc_self] == [(H, S, S)] * 2 and [w.shape for w in maps.cross] == [(H, T, S)] * 2
    assert [w.shape for w in maps.dec_self] == [(H, T, T)] * 2
    torch.testing.assert_close(maps.cross[0].sum(-1), torch.ones(H, T))
    steps = greedy_decode(translator.model, torch.tensor([t.source_ids]), SearchSettings(record_steps=True),
                          specials=SPECIALS)[0].steps
    for layer in range(2):
        torch.testing.assert_close(maps.cross[layer], torch.stack([s.live[0].cross_attention[layer] for s in steps], 1))


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_input_is_a_clear_error(translator, text):
    with pytest.raises(TranslationError, match="nothing to translate"):
        translator.translate(text)
    with pytest.raises(ValueError, match="input 2: nothing to translate"):
        translator.translate_batch(["a cat", text])


def test_typed_special_tokens_stay_text(translator):
    """A typed "<pad>" must not become a padding key (it would get exactly 0 attention)."""
    source = translator.prepare("the <pad> house <s> is </s> big")
    assert SPECIALS.pad not in source.ids and SPECIALS.start not in source.ids and source.ids.count(SPECIALS.eos) == 1
    t = translator.translate("the <pad> house is big", attention=True)
    assert (t.attention.enc_self[0].sum(-2) > 0).all()  # every source key gets some attention


def test_long_input_is_truncated_with_a_warning(translator):
    t = translator.translate(" ".join(["the big house"] * 6))  # 18 pieces + </s>
    assert len(t.source_ids) == MAX_LEN and t.source_ids[-1] == SPECIALS.eos
    assert any("truncated" in w for w in t.warnings) and len(t.token_ids) <= MAX_LEN


def test_default_checkpoint_is_the_first_one_found_or_a_clear_error(tmp_path, checkpoint, monkeypatch):
    assert find_checkpoint(tmp_path) is None
    for name in ("b-model", "a-not-a-checkpoint", "c-model"):
        (tmp_path / name).mkdir()
    for name in ("b-model", "c-model"):
        (tmp_path / name / "config.json").write_text("{}")
    assert find_checkpoint(tmp_path) == tmp_path / "b-model"
    monkeypatch.setattr(translate, "DEFAULT_CHECKPOINT_DIR", None)
    with pytest.raises(CheckpointError, match="python -m transformer.training"):
        Translator()
    monkeypatch.setattr(translate, "DEFAULT_CHECKPOINT_DIR", checkpoint)
    assert Translator().checkpoint.path == checkpoint


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`python -m transformer.decoding.translate` in a process of its own (each start imports torch: about 2 s of
    CPU, so the tests keep a few for what only a process shows, its exit status, argv and stdin, and use conftest's
    `translate_cli` for the rest)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "transformer.decoding.translate", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def test_cli_plain_text_matches_the_translator(checkpoint, translator):
    done = run_cli("--checkpoint", str(checkpoint), "the house is big")
    assert done.returncode == 0, done.stderr
    assert done.stdout == translator.translate("the house is big").text + "\n"


def test_cli_json_lines_from_stdin_with_beam_and_nbest(checkpoint, translator, translate_cli):
    done = translate_cli("--checkpoint", str(checkpoint), "--beam", "3", "--nbest", "2", "--json",
                         stdin="a cat\nthe house\n")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    expected = translator.translate_batch(["a cat", "the house"], SearchSettings(beam_size=3, nbest=2))
    assert [r["source"] for r in records] == ["a cat", "the house"]
    assert [r["token_ids"] for r in records] == [t.token_ids for t in expected]
    assert all(len(r["alternatives"]) == 1 and "attention" not in r for r in records)


def test_cli_errors_are_one_line_and_exit_2(checkpoint, tmp_path, translate_cli):
    """main's status (a process exits with it: the stdin test and tests/decoding/test_forced_prefix.py run
    processes)."""
    for args, stdin, message in [
        (["--checkpoint", str(checkpoint), "--alpha", "1e308"], "a cat\n", "alpha must be a number from 0 to 10"),
        (["--checkpoint", str(checkpoint), "--beam", "100000"], "a cat\n", "beam_size must be a whole number from 1"),
        (["--checkpoint", str(tmp_path / "missing"), "a cat"], "", "no checkpoint directory"),
    ]:
        done = translate_cli(*args, stdin=stdin)
        assert done.returncode == 2 and done.stdout == ""
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_default_model_comes_first_whatever_ships_beside_it(tmp_path):
    from transformer.decoding.translate import DEFAULT_MODEL, find_checkpoint

    for name in ("en-ar-bible", DEFAULT_MODEL, "zz", "aa-no-config"):
        (tmp_path / name).mkdir()
        if name != "aa-no-config":
            (tmp_path / name / "config.json").write_text("{}")
    assert find_checkpoint(tmp_path) == tmp_path / DEFAULT_MODEL
    (tmp_path / DEFAULT_MODEL / "config.json").unlink()
    assert find_checkpoint(tmp_path) == tmp_path / "en-ar-bible"
    assert find_checkpoint(tmp_path / "missing") is None


def test_stdin_is_translated_line_by_line_on_newlines_only_with_empty_lines_echoed(checkpoint, translator,
                                                                                   translate_cli):
    stdin = "\ufeff" + "\n".join(STDIN_LINES) + "\n"
    done = run_cli("--checkpoint", str(checkpoint), stdin=stdin)
    assert done.returncode == 0, done.stderr
    out = done.stdout.split("\n")
    assert out[-1] == "" and len(out) - 1 == len(STDIN_LINES)  # one output line per input line, in order
    for line, got in zip(STDIN_LINES, out):
        text = line.removesuffix("\r")
        assert got == ("" if not normalize_text(text).strip() else translator.translate(text).text), repr(line)
    assert out[0] == translator.translate("the cat").text  # the byte-order mark is not part of the first line
    done = translate_cli("--checkpoint", str(checkpoint), "--json", stdin=stdin)  # the same bytes, the same reader
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == len(STDIN_LINES) and records[1]["text"] == "" and records[1]["warnings"]
    assert "<unk>" not in records[0]["source_pieces"]


def test_only_empty_lines_give_only_empty_lines(checkpoint, translate_cli):
    done = translate_cli("--checkpoint", str(checkpoint), stdin="\n  \n\t\n")
    assert done.returncode == 0 and done.stdout == "\n\n\n", done


@pytest.mark.parametrize("flags", SEARCH_FLAGS, ids=" ".join)
def test_search_and_device_flags_out_of_bounds_are_one_line_errors(checkpoint, capsys, flags):
    if flags[:2] == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc = translate.main(["--checkpoint", str(checkpoint), *flags, "a cat"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and len(err) < 200


@pytest.mark.parametrize("fields, message", [
    (dict(beam_size=MAX_BEAM + 1), "beam_size must be a whole number from 1 to 64"),
    (dict(beam_size=4.5), "beam_size must be a whole number"), (dict(beam_size=True), "beam_size"),
    (dict(beam_size=100, nbest=100), "beam_size"), (dict(top_k=10**6), "top_k must be a whole number"),
    (dict(alpha=1e308), "alpha must be a number from 0 to 10"), (dict(alpha=math.nan), "alpha"),
    (dict(alpha=math.inf), "alpha"), (dict(max_len_a=math.inf), "max_len_a"), (dict(max_len_a=math.nan), "max_len_a"),
    (dict(max_len_b=-1), "max_len_b"), (dict(max_len_b=2.5), "max_len_b"),
])
def test_search_settings_bound_every_count_and_number(fields, message):
    with pytest.raises(ValueError, match=message):
        SearchSettings(**fields)
    SearchSettings(beam_size=MAX_BEAM, nbest=MAX_BEAM, alpha=10.0)  # the bounds themselves are allowed

"""Special ids come from the tokenizer (`SpecialIds`), never from constants: decoding, explaining and training
follow a tokenizer laid out as Marian's is (pad = the decoder's start = the last id, </s> = 0, only pad never
emitted) exactly as they follow ours; and `load_tokenizer` reads a tokenizer of any kind by its JSON's "kind"."""

import json
import math
import sys
import types

import pytest
import torch

from tests.conftest import SPECIALS, tiny_config
from transformer import Transformer
from transformer.data.tokenizer import (
    SpecialIds,
    Tokenizer,
    TokenizerError,
    load_tokenizer,
    tokenizer_from_json,
    train_tokenizer,
)
from transformer.decoding.search import SearchSettings, beam_search, greedy_decode, sample, search
from transformer.decoding.session import DecodingSession
from transformer.decoding.translate import Translator
from transformer.explain.attribution import attribute, candidates
from transformer.explain.interventions import teacher_forced
from transformer.explain.lenses.trace import trace
from transformer.explain.logit_lens import logit_lens
from transformer.model.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint

V = 30
MARIAN = SpecialIds(pad=V - 1, start=V - 1, eos=0, unk=1, never=(V - 1,))
WORDS = [f"w{i}" for i in range(2, V - 1)]


class MarianLikeTokenizer:
    """Marian's layout: </s> 0, <unk> 1, words, <pad> last; one vocabulary; the source ends with </s> and has no
    start token. Words are the pieces ("▁w5"): enough for Translator and the explain functions."""

    kind, shared = "marian-like", True
    specials = MARIAN
    src_vocab_size = tgt_vocab_size = V
    pieces = ["</s>", "<unk>", *(f"▁{w}" for w in WORDS), "<pad>"]

    def normalize(self, text: str) -> str:
        return " ".join(text.split())

    def encode_source(self, text: str) -> list[int]:
        return [self.pieces.index(f"▁{w}") if f"▁{w}" in self.pieces else MARIAN.unk for w in text.split()] + [0]

    def encode_target(self, text: str) -> list[int]:
        return [MARIAN.start, *self.encode_source(text)]

    def decode_source(self, ids) -> str:
        return self.decode_target(ids)

    def decode_target(self, ids) -> str:
        ids = list(ids)
        ids = ids[: ids.index(MARIAN.eos)] if MARIAN.eos in ids else ids
        return " ".join(self.pieces[i][1:] for i in ids if i not in (MARIAN.pad, MARIAN.unk))

    def source_pieces(self, ids) -> list[str]:
        return [self.pieces[int(i)] for i in ids]

    target_pieces = source_pieces


def marian_model(seed: int = 0, pad_bias: float = 6.0) -> Transformer:
    """A random model with Marian's ids whose logits favour pad (which decoding must never emit) and, less,
    </s> (so that outputs end)."""
    torch.manual_seed(seed)
    model = Transformer(tiny_config(src_vocab_size=V, tgt_vocab_size=V, pad_id=MARIAN.pad, share_embeddings=True,
                                    tie_output=True, final_logits_bias=True, norm_first=False)).eval()
    model.final_logits_bias[MARIAN.pad] = pad_bias
    model.final_logits_bias[MARIAN.eos] = 2.0
    return model


@pytest.fixture(scope="module")
def model():
    return marian_model()


@pytest.fixture(scope="module")
def src():
    return torch.tensor([[5, 9, 3, 7, 0], [4, 6, 0, MARIAN.pad, MARIAN.pad]])  # right-padded with pad = 29


def forced_log_probs(model, src_row, tokens, start=MARIAN.start):
    """log p of each token of tokens, teacher-forced from start, pad ruled out as decoding rules it out."""
    src_row = src_row[src_row != MARIAN.pad][None]
    with torch.no_grad():
        logp = model(src_row, torch.tensor([[start, *tokens[:-1]]])).logits[0].log_softmax(-1)  # (T, V)
    logp[:, MARIAN.pad] = -math.inf
    return logp.gather(1, torch.tensor(tokens)[:, None])[:, 0].tolist()


def test_our_tokenizers_specials_are_the_ones_decoding_always_used():
    tokenizer = train_tokenizer([("a b", "c d")], kind="wordlevel", min_frequency=1)
    assert tokenizer.specials == SPECIALS == SpecialIds(pad=0, start=1, eos=2, unk=3, never=(0, 1))
    assert tokenizer.target_pieces([tokenizer.specials.pad, tokenizer.specials.start, tokenizer.specials.eos,
                                    tokenizer.specials.unk]) == ["<pad>", "<s>", "</s>", "<unk>"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(pad=-1, start=0, eos=1, unk=2, never=()), "pad must be a non-negative integer"),
    (dict(pad=0, start=True, eos=1, unk=2, never=()), "start must be a non-negative integer"),
    (dict(pad=0, start=0, eos=1, unk=2, never=[0]), "never must be a tuple"),
    (dict(pad=0, start=0, eos=1, unk=2, never=(0, 1)), "eos \\(1\\) cannot be among"),
])
def test_bad_special_ids_are_refused(kwargs, message):
    with pytest.raises(TokenizerError, match=message):
        SpecialIds(**kwargs)


@pytest.mark.parametrize("settings", [SearchSettings(record_steps=True), SearchSettings(beam_size=3, nbest=3),
                                      SearchSettings(do_sample=True, num_samples=4, seed=2, record_steps=True)],
                         ids=["greedy", "beam", "sampling"])
def test_marian_ids_decode_from_pad_stop_at_eos_and_never_emit_pad(model, src, settings):
    results = search(model, src, settings, specials=MARIAN)
    finished = []
    for b, result in enumerate(results):
        for h in result.hypotheses:
            assert MARIAN.pad not in h.tokens
            assert MARIAN.eos not in h.tokens[:-1] and h.finished == (h.tokens[-1] == MARIAN.eos)
            finished += [len(h.tokens)] if h.finished else []
            assert h.log_probs == pytest.approx(forced_log_probs(model, src[b], h.tokens), abs=1e-4)
        for step in result.steps or []:
            assert all(hs.prefix[0] == MARIAN.start for hs in step.live)
    # the bias on </s> ends outputs (greedy's at once, the others' after a few tokens): the stop is tested, not
    # only the length limit of 17 tokens
    assert finished and (max(finished) > 1 or settings.beam_size == 1 and not settings.do_sample)
    with torch.no_grad():  # the model itself would pick pad first: ruling it out is what keeps it out
        first = model(src[:1], torch.tensor([[MARIAN.start]])).logits[0, 0]
    assert int(first.argmax()) == MARIAN.pad


def test_greedy_with_marian_ids_is_the_argmax_from_pad_and_differs_from_starting_elsewhere(model, src):
    (result,) = greedy_decode(model, src[:1], specials=MARIAN)
    tokens, prefix = result.best.tokens, [MARIAN.start]
    for token in tokens:
        with torch.no_grad():
            logits = model(src[:1], torch.tensor([prefix])).logits[0, -1]
        logits[MARIAN.pad] = -math.inf
        assert token == int(logits.argmax())
        prefix.append(token)
    other = SpecialIds(pad=MARIAN.pad, start=4, eos=0, unk=1, never=(MARIAN.pad,))
    assert greedy_decode(model, src[:1], specials=other)[0].best.log_probs != result.best.log_probs


def test_a_session_and_beam_one_with_marian_ids_equal_the_one_shot_search(model, src):
    settings = SearchSettings(beam_size=2, nbest=2)
    one_shot = beam_search(model, src[:1], settings, specials=MARIAN)[0]
    session = DecodingSession(model, src[0].tolist(), settings, specials=MARIAN)
    first = session.step()
    assert first.live[0].prefix == [MARIAN.start]
    session.run_to_end()
    assert [h.tokens for h in session.finished[:2]] == [h.tokens for h in one_shot.hypotheses]
    sampled = sample(model, src[:1], SearchSettings(do_sample=True, seed=5), specials=MARIAN)[0].best
    assert MARIAN.pad not in sampled.tokens


def test_a_translator_uses_its_tokenizers_ids_end_to_end(model):
    translator = Translator(Checkpoint(None, model.config, model, MarianLikeTokenizer()))
    assert translator.specials is MARIAN
    source = translator.prepare("w5 w9 zzz w7")
    assert source.ids == [5, 9, 1, 7, 0] and source.warnings  # no start token, </s> = 0 at the end, <unk> = 1
    for settings in (SearchSettings(), SearchSettings(beam_size=3, nbest=2), SearchSettings(do_sample=True)):
        t = translator.translate("w5 w9 w7", settings, attention=True)
        assert MARIAN.pad not in t.token_ids
        assert t.attention.target_input_pieces[0] == "<pad>"  # the decoder starts from pad
        assert [math.log(p) for p in t.token_probs] == pytest.approx(
            forced_log_probs(model, torch.tensor(t.source_ids), t.token_ids), abs=1e-4)
    batch = translator.translate_batch(["w5 w9 w7", "w4"])  # padded with 29 into one batch
    assert [t.token_ids for t in batch] == [translator.translate(s).token_ids for s in ("w5 w9 w7", "w4")]
    session = translator.session("w5 w9 w7")
    assert session.step().live[0].prefix == [MARIAN.pad]


def test_explain_functions_read_from_the_given_start_id(model):
    tokenizer = MarianLikeTokenizer()
    src_ids, out = [5, 9, 3, 0], [6, 8, 0]
    expected = forced_log_probs(model, torch.tensor(src_ids), out)
    assert teacher_forced(model, src_ids, out, specials=MARIAN).log_probs.tolist() == pytest.approx(expected,
                                                                                                     abs=1e-5)
    assert forced_log_probs(model, torch.tensor(src_ids), out, start=4) != pytest.approx(expected, abs=1e-3)
    result = attribute(model, tokenizer, src_ids, out, 1, methods=["saliency"])
    assert result.log_prob == pytest.approx(expected[1], abs=1e-5)
    assert result.prefix_words == ("w6",)  # the pad that starts the prefix is a control token, no word
    found = candidates(model, src_ids, out, 1, k=V, specials=MARIAN)
    assert MARIAN.pad not in [c.token for c in found] and len(found) == V - 1
    assert dict((c.token, c.log_prob) for c in found)[out[1]] == pytest.approx(expected[1], abs=1e-5)
    lens = logit_lens(model, src_ids, out, k=3, specials=MARIAN)
    for t, cell in enumerate(lens.cells[-1]):
        assert MARIAN.pad not in cell.tokens
        assert cell.output_prob == pytest.approx(math.exp(expected[t]), abs=1e-5)
    traced = trace(model, src_ids, out, specials=MARIAN)
    assert traced.decoder_input[0] == MARIAN.pad
    with torch.no_grad():
        logp = model(torch.tensor([src_ids]), torch.tensor([[MARIAN.pad, *out[:-1]]])).logits[0].log_softmax(-1)
    torch.testing.assert_close(traced.log_probs, logp.gather(1, torch.tensor(out)[:, None])[:, 0])


# ----------------------------------------------------------------------------- loading a tokenizer of any kind


@pytest.fixture(scope="module")
def ours():
    return train_tokenizer([("the house", "la maison"), ("a cat", "un chat")], kind="wordlevel", min_frequency=1)


def test_load_tokenizer_reads_our_kinds(tmp_path, ours):
    ours.save(tmp_path / "tokenizer.json")
    loaded = load_tokenizer(tmp_path / "tokenizer.json")
    assert isinstance(loaded, Tokenizer) and loaded.specials == ours.specials
    assert loaded.encode_target("la maison") == ours.encode_target("la maison")


def test_a_sentencepiece_tokenizer_goes_to_its_module(monkeypatch):
    seen = []

    class SentencePieceTokenizer:
        @classmethod
        def from_json(cls, text, origin):
            seen.append((json.loads(text)["kind"], origin))
            return cls()

    module = types.ModuleType("transformer.data.sentencepiece")
    module.SentencePieceTokenizer = SentencePieceTokenizer
    monkeypatch.setitem(sys.modules, "transformer.data.sentencepiece", module)
    loaded = tokenizer_from_json(json.dumps({"kind": "sentencepiece", "pieces": []}), "m/tokenizer.json")
    assert isinstance(loaded, SentencePieceTokenizer) and seen == [("sentencepiece", "m/tokenizer.json")]


def test_a_kind_this_installation_cannot_load_is_one_tokenizer_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformer.data.sentencepiece", None)  # importing it raises ImportError
    with pytest.raises(TokenizerError, match="m/tokenizer.json: a SentencePiece tokenizer, which this installation"):
        tokenizer_from_json(json.dumps({"kind": "sentencepiece"}), "m/tokenizer.json")
    for text, message in [('{"format": 1, "kind": "unigram"}', "unknown kind 'unigram'"),
                          ("[1, 2]", "not a valid tokenizer file"), ("{", "not a valid tokenizer file")]:
        with pytest.raises(TokenizerError, match=message):
            tokenizer_from_json(text, "x.json")


def test_a_checkpoint_whose_tokenizer_pads_with_another_id_than_its_model_is_refused(tmp_path, ours):
    model = Transformer(tiny_config(src_vocab_size=ours.src_vocab_size, tgt_vocab_size=ours.tgt_vocab_size,
                                    pad_id=5))
    path = save_checkpoint(tmp_path / "m", model, tokenizer=ours)
    with pytest.raises(CheckpointError, match="its pad id 0 is not the pad_id 5 of config.json"):
        load_checkpoint(path)

import pytest

from tests.conftest import SPECIALS
from transformer.data.tokenizer import Tokenizer, TokenizerError, train_tokenizer

EXAMPLES = {
    "en": ["The man's dog isn't here, is it?", "In the beginning God created the heaven and the earth."],
    "fr": ["« Bonjour ! » dit-il à l’homme.", "Le chien de l'homme n'est pas là, n'est-ce pas ?",
           "Qu'as-tu fait ? Aujourd'hui, c'est « vraiment » fini…"],
    "ar": ["في البدء خلق الله السموات والارض.", "هل رأيت الرجل؟"],
    "it": ["Perché nell'Eterno c'è giustizia?", "L'uomo disse: «Andiamo!»"],
}
PAIRS = list(zip(EXAMPLES["en"] + EXAMPLES["ar"] + EXAMPLES["it"][:1],
                 EXAMPLES["fr"] + EXAMPLES["it"][1:] + EXAMPLES["ar"][:1])) * 3


@pytest.fixture(scope="module", params=["bpe", "wordlevel"])
def tokenizer(request):
    return train_tokenizer(PAIRS, kind=request.param, vocab_size=400, min_frequency=1)


@pytest.mark.parametrize("lang", sorted(EXAMPLES))
def test_round_trip(tokenizer, lang):
    for text in EXAMPLES[lang]:
        assert tokenizer.decode_target(tokenizer.encode_target(text)) == tokenizer.normalize(text)
        assert tokenizer.decode_source(tokenizer.encode_source(text)) == tokenizer.normalize(text)


def test_normalize_unifies_apostrophes_and_spaces(tokenizer):
    assert tokenizer.normalize("  l’homme\u202f?  ") == "l'homme ?"


def test_french_apostrophe_and_punctuation_pieces():
    tok = train_tokenizer(PAIRS, kind="wordlevel", vocab_size=400, min_frequency=1)
    pieces = tok.target_pieces(tok.encode_target("« Bonjour ! » dit-il à l'homme."))
    assert pieces == ["<s>", "▁«", "▁Bonjour", "▁!", "▁»", "▁dit", "-", "il", "▁à", "▁l'", "homme",
                      ".", "</s>"]


def test_special_ids_fixed(tokenizer):
    assert (SPECIALS.pad, SPECIALS.start, SPECIALS.eos, SPECIALS.unk) == (0, 1, 2, 3)
    assert tokenizer.target_pieces([0, 1, 2, 3]) == ["<pad>", "<s>", "</s>", "<unk>"]
    src, tgt = tokenizer.encode_source("Bonjour !"), tokenizer.encode_target("Bonjour !")
    assert src[-1] == SPECIALS.eos and SPECIALS.start not in src
    assert tgt[0] == SPECIALS.start and tgt[-1] == SPECIALS.eos


def test_decode_stops_at_eos_and_skips_specials(tokenizer):
    ids = tokenizer.encode_target("Bonjour !")
    assert tokenizer.decode_target(ids + tokenizer.encode_target("dit-il")[1:] + [SPECIALS.pad]) == "Bonjour !"


def test_unknown_characters_map_to_unk(tokenizer):
    assert SPECIALS.unk in tokenizer.encode_source("漢字")


def test_shared_and_separate_vocabularies():
    shared = train_tokenizer(PAIRS, kind="wordlevel", min_frequency=1)
    separate = train_tokenizer(PAIRS, kind="wordlevel", shared=False, min_frequency=1)
    assert shared.shared and not separate.shared
    assert shared.src_vocab_size == shared.tgt_vocab_size
    assert separate.src_vocab_size < shared.src_vocab_size
    assert separate.tgt_vocab_size < shared.tgt_vocab_size
    fr_word = separate.encode_target("Bonjour")[1]
    assert separate.target_pieces([fr_word]) == ["▁Bonjour"]
    assert separate.encode_source("Bonjour")[0] == SPECIALS.unk  # "Bonjour" occurs only on the target side


@pytest.mark.parametrize("shared", [True, False])
def test_save_load_identical_encodings(tmp_path, shared):
    tok = train_tokenizer(PAIRS, kind="bpe", vocab_size=300, shared=shared, min_frequency=1)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    tok.save(path)  # overwriting goes through os.replace and leaves no temporary files
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer.json"]
    loaded = Tokenizer.load(path)
    assert (loaded.kind, loaded.shared) == ("bpe", shared)
    assert (loaded.src_vocab_size, loaded.tgt_vocab_size) == (tok.src_vocab_size, tok.tgt_vocab_size)
    for text in sum(EXAMPLES.values(), []):
        assert loaded.encode_source(text) == tok.encode_source(text)
        assert loaded.encode_target(text) == tok.encode_target(text)
    assert Tokenizer.from_json(tok.to_json()).encode_target("Bonjour") == tok.encode_target("Bonjour")


def test_load_missing_and_corrupt_files(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(TokenizerError, match="nope.json.*not found"):
        Tokenizer.load(missing)
    corrupt = tmp_path / "tokenizer.json"
    corrupt.write_text('{"format": 1, "kind": "bpe", "shared": true, "src": {"model": 3}}')
    with pytest.raises(TokenizerError, match="tokenizer.json.*not a valid tokenizer"):
        Tokenizer.load(corrupt)
    corrupt.write_text("not json")
    with pytest.raises(TokenizerError, match="tokenizer.json"):
        Tokenizer.load(corrupt)


def test_unknown_kind_rejected():
    with pytest.raises(TokenizerError, match="unknown tokenizer kind"):
        train_tokenizer(PAIRS, kind="unigram")


def test_typed_special_tokens_are_text(tokenizer):
    ids = tokenizer.encode_source("the man <pad> said <s> and </s> home")
    pad, start, eos = SPECIALS.pad, SPECIALS.start, SPECIALS.eos
    assert pad not in ids and start not in ids and ids.count(eos) == 1 and ids[-1] == eos
    tgt = tokenizer.encode_target("dit <s> et </s>")
    assert tgt.count(start) == 1 and tgt.count(eos) == 1 and (tgt[0], tgt[-1]) == (start, eos)


def test_unseen_diacritics_are_dropped_not_unknown(tokenizer):
    """The Arabic examples have no harakat: typing them (fatha, sukun, kasra) must not make <unk> pieces."""
    plain, marked = "في البدء خلق الله", "في البَدْءِ خَلَقَ الله"
    assert tokenizer.encode_source(marked) == tokenizer.encode_source(plain)
    assert SPECIALS.unk not in tokenizer.encode_source(marked)
    assert tokenizer.normalize(marked) == plain


def test_diacritics_the_vocabulary_knows_are_kept():
    marked = "خَلَقَ الله"
    tok = train_tokenizer([(marked, marked)] * 3, kind="wordlevel", vocab_size=100, min_frequency=1)
    assert tok.decode_source(tok.encode_source(marked)) == marked and SPECIALS.unk not in tok.encode_source(marked)


def test_saved_files_get_the_umask_mode(tmp_path):
    """Like checkpoints (0644 under umask 022), not mkstemp's owner-only 0600."""
    import os

    umask = os.umask(0o022)
    try:
        path = tmp_path / "tokenizer.json"
        train_tokenizer(PAIRS, kind="wordlevel", min_frequency=1).save(path)
        assert path.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)

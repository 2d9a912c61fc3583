"""Word alignments read from attention, and the alignment error rate (transformer/explain.py)."""

from types import SimpleNamespace

import pytest
import torch

from tests.conftest import tiny_config
from transformer import Transformer
from transformer.data.tokenizer import train_tokenizer
from transformer.decoding.translate import Translator
from transformer.explain import (
    AlignedExample,
    AlignmentCounts,
    alignment_error_rate,
    argmax_links,
    count_links,
    cross_attention_aer,
    format_links,
    link_cells,
    parse_links,
    piece_words,
    sentence_aer,
    word_attention,
    words,
)
from transformer.model.checkpoint import Checkpoint

PAIRS = [("The cat eats bread.", "Le chat mange du pain."),
         ("The old man went to the market.", "Le vieil homme est allé au marché."),
         ("I love the red car.", "J'aime la voiture rouge."),
         ("Does the dog eat?", "Est-ce que le chien mange ?")] * 3


def test_words_follow_the_tokenizer_cuts():
    assert words("J'aime le chat.") == ["J'", "aime", "le", "chat", "."]
    assert words("Est-ce que le chien mange ?") == ["Est", "-", "ce", "que", "le", "chien", "mange", "?"]
    assert words("  deux   chats! ") == ["deux", "chats", "!"]


def test_piece_words_on_constructed_pieces():
    pieces = ["<s>", "▁Toute", "fois", ",", "▁c'", "est", "▁", ",", "car", "▁l'", "hom", "me", ".", "</s>"]
    assert piece_words(pieces) == [None, 0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, None]


@pytest.mark.parametrize("kind,vocab", [("bpe", 60), ("bpe", 400), ("wordlevel", 200)])
def test_piece_words_count_the_words_of_real_tokenizations(kind, vocab):
    tokenizer = train_tokenizer(PAIRS, kind=kind, vocab_size=vocab, min_frequency=1)
    for src, tgt in PAIRS:
        for text, pieces in ((src, tokenizer.source_pieces(tokenizer.encode_source(src))),
                             (tgt, tokenizer.target_pieces(tokenizer.encode_target(tgt)))):
            index = piece_words(pieces)
            assert index[-1] is None and [w for w in index if w is not None][-1] == len(words(text)) - 1
            assert sorted(set(w for w in index if w is not None)) == list(range(len(words(text))))


def test_word_attention_averages_target_pieces_and_sums_source_pieces():
    weights = torch.tensor([[0.5, 0.25, 0.25, 0.0],   # target word 0, piece 1
                            [0.1, 0.1, 0.2, 0.6],     # target word 0, piece 2
                            [0.0, 0.0, 1.0, 0.0],     # target word 1
                            [0.3, 0.3, 0.3, 0.1]])    # </s>: left out
    merged = word_attention(weights, [0, 0, 1, None], [0, 0, 1, None])
    assert torch.allclose(merged, torch.tensor([[0.475, 0.225], [0.0, 1.0]]))
    assert argmax_links(merged) == {(0, 0), (1, 1)}


def test_aer_on_constructed_cases():
    sure = frozenset({(0, 0), (1, 1), (2, 2)})
    assert alignment_error_rate(sure, sure) == 0.0
    assert alignment_error_rate(frozenset({(0, 1), (1, 0)}), sure) == 1.0
    predicted = frozenset({(0, 0), (1, 1), (2, 1)})
    assert alignment_error_rate(predicted, sure) == pytest.approx(1 - 4 / 6)  # |A∩S| = 2, |A| = |S| = 3
    assert alignment_error_rate(predicted, sure, frozenset({(2, 1)})) == pytest.approx(1 - 5 / 6)
    # corpus level: counts add up before the ratio (not a mean of sentence AERs)
    total = count_links(sure, sure) + count_links(frozenset({(0, 1)}), frozenset({(0, 0)}))
    assert total == AlignmentCounts(predicted=4, sure=4, hit_sure=3, hit_possible=3)
    assert total.aer == pytest.approx(1 - 6 / 8)


def test_links_text_form_round_trips_and_rejects_garbage():
    links = frozenset({(2, 1), (0, 0), (10, 3)})
    assert format_links(links) == "0-0 2-1 10-3"
    assert parse_links(format_links(links)) == links
    with pytest.raises(ValueError, match="malformed link '3:4'"):
        parse_links("0-0 3:4")


def test_link_cells_cover_every_piece_pair_of_linked_words():
    assert link_cells(frozenset({(0, 1)}), [0, 0, None], [0, 1, 1, None]) == [(1, 0), (1, 1), (2, 0), (2, 1)]


class _ScriptedModel(torch.nn.Module):
    """Two heads of cross-attention, each putting all weight on the first piece of a chosen source word:
    head 0 on the gold source word of each target word, head 1 always on source word 0."""

    def __init__(self, tokenizer, gold_word):
        super().__init__()
        self.config = SimpleNamespace(n_heads=2, n_decoder_layers=1, max_len=64, pad_id=0)
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # gives the model a device
        self.tokenizer, self.gold_word = tokenizer, gold_word

    def forward(self, src, tgt, return_attention):
        B, S, T = src.size(0), src.size(1), tgt.size(1)
        cross = torch.zeros(B, 2, T, S)
        for b in range(B):
            src_words = piece_words(self.tokenizer.source_pieces(src[b].tolist()))
            tgt_words = piece_words(self.tokenizer.target_pieces(tgt[b].tolist()[1:] + [2]))  # rows = emitted
            for t, tw in enumerate(tgt_words):
                for head, word in enumerate((self.gold_word.get(tw, 0), 0)):
                    cross[b, head, t, src_words.index(word)] = 1.0
        return SimpleNamespace(attention=SimpleNamespace(cross=[cross]))


def test_cross_attention_aer_scores_each_head_against_gold():
    examples = [AlignedExample("the cat eats", "le chat mange", frozenset({(0, 0), (1, 1), (2, 2)})),
                AlignedExample("the dog eats bread", "le chien mange du pain",
                               frozenset({(0, 0), (1, 1), (2, 2), (3, 3), (3, 4)}))]
    tokenizer = train_tokenizer([(e.src, e.tgt) for e in examples], vocab_size=40, min_frequency=1)
    results = []
    for example in examples:
        gold_word = {t: s for s, t in example.links}
        results.append(cross_attention_aer(_ScriptedModel(tokenizer, gold_word), tokenizer, [example]))
    assert [r.heads[0][0] for r in results] == [0.0, 0.0]
    # head 1 links every target word to source word 0: right for 1 of 3, and 1 of 5, gold links
    assert results[0].heads[0][1] == pytest.approx(1 - 2 / 6)
    assert results[1].heads[0][1] == pytest.approx(1 - 2 / 10)
    assert results[0].best == (0, 0, 0.0) and (results[0].sentences, results[0].skipped) == (1, 0)
    # the mean of the two heads splits each row 0.5 / 0.5; argmax ties go to the lower index, word 0
    assert results[0].layer_mean[0] == pytest.approx(results[0].heads[0][1])


def test_batched_aer_equals_the_sum_of_single_sentences_on_a_real_model():
    """Padding in a batch must not change any head's alignment: corpus counts equal per-sentence counts."""
    pairs = PAIRS[:4]
    examples = [AlignedExample(s, t, frozenset((i, i) for i in range(min(len(words(s)), len(words(t))))))
                for s, t in pairs]
    tokenizer = train_tokenizer(pairs, vocab_size=80, min_frequency=1)
    torch.manual_seed(0)
    config = tiny_config(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size)
    model = Transformer(config).eval()
    batched = cross_attention_aer(model, tokenizer, examples, batch_size=4)
    translator = Translator(Checkpoint(None, config, model, tokenizer))
    for ex in examples:
        maps = translator.attention_maps(tokenizer.encode_source(ex.src), tokenizer.encode_target(ex.tgt)[1:])
        single = sentence_aer(maps.cross, maps.source_pieces, maps.target_pieces, ex.links)
        assert single.heads == cross_attention_aer(model, tokenizer, [ex]).heads
    one_by_one = cross_attention_aer(model, tokenizer, examples, batch_size=1)
    assert batched.heads == one_by_one.heads and batched.layer_mean == one_by_one.layer_mean
    assert (batched.sentences, batched.skipped) == (4, 0)
    assert len(batched.heads) == config.n_decoder_layers and len(batched.heads[0]) == config.n_heads

"""Folders of the fairseq-family encoder-decoders as transformers' `save_pretrained` writes them, random and tiny,
built offline: M2M100, NLLB-200 (M2M100's model with NLLB's tokenizer), mBART (cc25's layout), mBART-50 and BART.

Each tokenizer is trained here on the sentences of `tests.marian_fixtures` (SentencePiece BPE for M2M100, BPE with
`tokenizers` for NLLB, a SentencePiece unigram model's pieces for the mBARTs, byte-level BPE for BART) and built with
transformers' own class, so that its language codes, special tokens and files are the family's. The model (d_model
32, 2 + 2 layers, 4 heads) gets random weights, random layer norms and, where the family has one, a random final
logits bias, then a few dozen steps on English -> French so that its outputs vary and end with </s>.
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import torch

from tests.marian_fixtures import EN, FR

FAMILIES = ("m2m100", "nllb", "mbart", "mbart50", "bart")
LANGUAGES = {"m2m100": ("en", "fr"), "nllb": ("eng_Latn", "fra_Latn"), "mbart": ("en_XX", "fr_XX"),
             "mbart50": ("en_XX", "fr_XX"), "bart": (None, None)}
TINY = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
            activation_dropout=0.0, encoder_layerdrop=0.0, decoder_layerdrop=0.0)
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # fairseq's 0 1 2 3


def _spm_bpe(lines: list[str], vocab_size: int) -> bytes:
    """A SentencePiece BPE model (M2M100's kind) as the bytes of its file."""
    import sentencepiece

    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(lines * 3), model_writer=out, model_type="bpe",
                                             vocab_size=vocab_size, character_coverage=1.0, minloglevel=2,
                                             num_threads=1, hard_vocab_limit=False)
    return out.getvalue()


def _spm_unigram(lines: list[str], vocab_size: int) -> list[tuple[str, float]]:
    """A SentencePiece unigram model's pieces and scores, in its order (mBART's kind; the `tokenizers` trainer for
    Unigram gives other pieces on every run, which made the tests' models differ from run to run)."""
    import sentencepiece

    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(lines * 3), model_writer=out,
                                             model_type="unigram", vocab_size=vocab_size, character_coverage=1.0,
                                             minloglevel=2, num_threads=1, hard_vocab_limit=False)
    processor = sentencepiece.SentencePieceProcessor(model_proto=out.getvalue())
    return [(processor.IdToPiece(i), processor.GetScore(i)) for i in range(processor.GetPieceSize())]


def _trained(size: int, specials: list[str], byte_level: bool = False, lines: tuple[str, ...] = ()) -> dict:
    """The model section of a `tokenizers` BPE tokenizer trained on EN + FR (and lines, many times over)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None if byte_level else "<unk>"))
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if byte_level else [])
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False) if byte_level else \
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.train_from_iterator((EN + FR) * 3 + list(lines) * 50, trainer)
    return json.loads(tok.to_str())["model"]


def _merges(model: dict) -> list[tuple[str, str]]:
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]


def tokenizer(family: str, path: Path, vocab_size: int | None = None, lines: tuple[str, ...] = ()):
    """transformers' tokenizer of the family, built on pieces trained here and saved into path; for NLLB, vocab_size
    pads the vocabulary with pieces no text makes (a full-size embedding), lines are trained on too (whole-word
    pieces for a benchmark's sentence)."""
    import transformers as tf

    src, tgt = LANGUAGES[family]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if family == "m2m100":
            spm = _spm_bpe(EN + FR, 80)
            (path / "sentencepiece.bpe.model").write_bytes(spm)
            import sentencepiece

            processor = sentencepiece.SentencePieceProcessor(model_proto=spm)
            vocab = {token: i for i, token in enumerate(SPECIALS)}
            for i in range(processor.GetPieceSize()):
                if not (processor.IsControl(i) or processor.IsUnknown(i)):
                    vocab.setdefault(processor.IdToPiece(i), len(vocab))
            (path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
            tok = tf.M2M100Tokenizer(str(path / "vocab.json"), str(path / "sentencepiece.bpe.model"), src_lang=src,
                                     tgt_lang=tgt)
        elif family == "nllb":
            model = _trained(120 + 10 * len(lines), SPECIALS, lines=lines)
            vocab = model["vocab"]
            while vocab_size is not None and len(vocab) < vocab_size - 203:  # 202 language codes and <mask> follow
                vocab[f"▁filler{len(vocab)}"] = len(vocab)
            tok = tf.NllbTokenizer(vocab=vocab, merges=_merges(model), src_lang=src, tgt_lang=tgt)
        elif family in ("mbart", "mbart50"):
            vocab = _spm_unigram(EN + FR, 120)  # <unk> <s> </s>, then the pieces with their scores
            if family == "mbart":
                tok = tf.MBartTokenizer(vocab=[(t, 0.0) for t in SPECIALS] + vocab[3:], src_lang=src, tgt_lang=tgt)
            else:  # the class drops the first three entries (SentencePiece's <unk> <s> </s>) and puts fairseq's
                tok = tf.MBart50Tokenizer(vocab=vocab, src_lang=src, tgt_lang=tgt)
        else:
            model = _trained(300, SPECIALS + ["<mask>"], byte_level=True)
            tok = tf.BartTokenizer(vocab=model["vocab"], merges=_merges(model))
    tok.save_pretrained(path)
    return tok


def config(family: str, vocab_size: int, tok, **overrides):
    import transformers as tf

    fields = dict(vocab_size=vocab_size, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                  **TINY)
    if family in ("m2m100", "nllb"):
        return tf.M2M100Config(**(fields | overrides))
    if family == "bart":
        return tf.BartConfig(**(fields | {"forced_bos_token_id": 0} | overrides))
    if family == "mbart":  # cc25's layout: the decoder starts from the target language's code
        fields |= {"decoder_start_token_id": tok.convert_tokens_to_ids("fr_XX"), "scale_embedding": True}
    return tf.MBartConfig(**(fields | {"scale_embedding": True} | overrides))


def random_model(family: str, config, seed: int = 0, scaled: bool = False):
    """A model with weights of std 0.3, random layer norms and final logits bias; scaled: each matrix's std
    fan_in^-0.5 instead and embeddings of std 0.02 (a deep, wide model stays well conditioned, where 0.3 makes it
    chaotic: a 1e-7 difference in the first layer grew to 1e-3 of the logits at NLLB-600M's size)."""
    import transformers as tf

    cls = {"m2m100": tf.M2M100ForConditionalGeneration, "nllb": tf.M2M100ForConditionalGeneration,
           "mbart": tf.MBartForConditionalGeneration, "mbart50": tf.MBartForConditionalGeneration,
           "bart": tf.BartForConditionalGeneration}[family]
    torch.manual_seed(seed)
    model = cls(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name or "layernorm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn_like(p))
            elif scaled and p.dim() == 2 and "embed" not in name and "shared" not in name:
                p.normal_(0.0, p.size(1) ** -0.5)
            elif scaled:  # biases, and embeddings small enough that the layers outweigh them (else it copies its input)
                p.normal_(0.0, 0.02)
            else:
                p.normal_(0.0, 0.3)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.normal_(0.0, 0.5)
            model.final_logits_bias[0, config.pad_token_id] = -30.0  # a trained model gives <pad> no probability
        model.model.shared.weight[config.pad_token_id] = 0.0  # the padding row, zero as fairseq keeps it
    return model


def train_briefly(model, tok, steps: int = 40, lr: float = 1e-2) -> None:
    batch = tok(EN[:8], text_target=FR[:8], return_tensors="pt", padding=True)
    batch["labels"][batch["labels"] == tok.pad_token_id] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def write_folder(family: str, path: Path, seed: int = 0, train_steps: int = 40, vocab_size: int | None = None,
                 lines: tuple[str, ...] = (), scaled: bool = False, **overrides) -> Path:
    """save_pretrained's folder of a tiny random model of the family, briefly trained, with its tokenizer (overrides:
    config fields, e.g. a full size for a benchmark)."""
    path.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(family, path, vocab_size, lines)
    # M2M100's language codes follow its vocab.json, and fairseq's eight made-up words have rows but no tokens
    size = tok.encoder_size + len(tok.lang_code_to_id) + 8 if family == "m2m100" else len(tok)
    model = random_model(family, config(family, size, tok, **overrides), seed, scaled)
    if train_steps:
        train_briefly(model, tok, train_steps)
    if family == "bart":  # bart-large-cnn's rule: every output starts with <s>
        model.generation_config.forced_bos_token_id = 0
    model.save_pretrained(path)
    return path


def load(family: str, path: Path):
    """transformers' model (eager attention: sdpa returns no maps) and tokenizer of a folder write_folder wrote."""
    import transformers as tf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tf.AutoModelForSeq2SeqLM.from_pretrained(path, attn_implementation="eager").eval()
        src, tgt = LANGUAGES[family]
        kwargs = {"src_lang": src, "tgt_lang": tgt} if src else {}
        return model, tf.AutoTokenizer.from_pretrained(path, **kwargs)

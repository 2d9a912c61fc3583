"""A Marian (opus-mt) model folder as transformers' `save_pretrained` writes it, random and small, built offline.

SentencePiece models are trained here on a few dozen sentences (the source on English, the target on French, as
opus-mt-en-fr has them), numbered in Marian's layout (`</s>` 0, `<unk>` 1, the pieces of both models, `<pad>`
last), and saved with their `MarianTokenizer` beside a random `MarianMTModel` of opus-mt's architecture: swish,
post-LN, static sinusoids in halves, scaled embeddings shared by encoder, decoder and output, a final logits bias.
The tests of the import and `bench/hf_marian.py` (at full size) use it.
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import torch

EN = ["The cat sat on the mat.", "A dog runs in the park!", "Where is the station?", "I like green apples.",
      "She reads a book every evening.", "We will travel to Paris tomorrow.", "It is raining, isn't it?",
      "The children play football in the garden.", "My brother works at the hospital.", "Open the window, please.",
      "The weather is very cold today.", "They bought a new house near the river.", "Do you speak French?",
      "He drinks coffee without sugar.", "The museum opens at nine o'clock.", "Our teacher was happy."]
FR = ["Le chat est assis sur le tapis.", "Un chien court dans le parc !", "Où est la gare ?",
      "J'aime les pommes vertes.", "Elle lit un livre chaque soir.", "Nous voyagerons à Paris demain.",
      "Il pleut, n'est-ce pas ?",
      "Les enfants jouent au football dans le jardin.", "Mon frère travaille à l'hôpital.",
      "Ouvrez la fenêtre, s'il vous plaît.", "Il fait très froid aujourd'hui.",
      "Ils ont acheté une nouvelle maison près de la rivière.", "Parlez-vous français ?",
      "Il boit du café sans sucre.", "Le musée ouvre à neuf heures.", "Notre professeur était content."]


def train_spm(lines: list[str], vocab_size: int, words: tuple[str, ...] = ()) -> bytes:
    """A unigram SentencePiece model (what opus-mt ships) trained on lines, as the bytes of a .spm file; each of
    words is a piece of its own (a few dozen sentences teach pieces of a few letters: opus-mt's are words)."""
    import sentencepiece

    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(lines * 3), model_writer=out,
                                             vocab_size=vocab_size + len(set(words)), model_type="unigram",
                                             character_coverage=1.0, hard_vocab_limit=False, minloglevel=2,
                                             num_threads=1, user_defined_symbols=[f"▁{w}" for w in sorted(set(words))])
    return out.getvalue()


def marian_vocab(*models: bytes, size: int | None = None) -> dict[str, int]:
    """Marian's numbering: </s> 0, <unk> 1, each model's pieces once, filler pieces up to size, <pad> last."""
    import sentencepiece

    vocab = {"</s>": 0, "<unk>": 1}
    for model in models:
        processor = sentencepiece.SentencePieceProcessor(model_proto=model)
        for i in range(processor.GetPieceSize()):
            if not (processor.IsControl(i) or processor.IsUnknown(i)):
                vocab.setdefault(processor.IdToPiece(i), len(vocab))
    while size is not None and len(vocab) < size - 1:  # pieces no model makes: rows of a full-size embedding
        vocab[f"▁filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def marian_config(vocab_size: int, **overrides):
    """A MarianConfig in opus-mt's layout; the defaults are tiny (d_model 32, 2 + 2 layers, 4 heads)."""
    from transformers import MarianConfig

    fields = dict(vocab_size=vocab_size, decoder_vocab_size=vocab_size, d_model=32, encoder_layers=2,
                  decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                  decoder_ffn_dim=64, activation_function="swish", max_position_embeddings=64, scale_embedding=True,
                  pad_token_id=vocab_size - 1, decoder_start_token_id=vocab_size - 1, eos_token_id=0,
                  bos_token_id=0, forced_eos_token_id=0, share_encoder_decoder_embeddings=True,
                  dropout=0.1, attention_dropout=0.0, activation_dropout=0.0)
    return MarianConfig(**(fields | overrides))


def random_model(config, seed: int = 0, std: float | None = 0.3):
    """A MarianMTModel with weights of std `std` (None: transformers' init, whose std 0.02 makes every next token a
    near tie, for training), random layer norms and a random final logits bias, so that a wrong scale or a missed
    bias changes the output."""
    from transformers import MarianMTModel

    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if std is not None and "layer_norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn_like(p))
            elif std is not None:
                p.normal_(0.0, std)
        model.final_logits_bias.normal_(0.0, 0.5)
    return model


def train_briefly(model, tokenizer, steps: int, lr: float = 1e-2) -> None:
    """A random model repeats one token forever; forty steps on eight pairs make its outputs vary and end with
    </s>, and leave the beams something to choose between. The final logits bias stays random (a buffer)."""
    batch = tokenizer(EN[:8], text_target=FR[:8], return_tensors="pt", padding=True)
    batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100  # no loss on padding, as transformers' examples
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.eval()  # without dropout: fewer steps
    for _ in range(steps):
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def write_marian_folder(path: Path, seed: int = 0, vocab_size: int | None = None, separate: bool = False,
                        train_steps: int = 0, source_words: tuple[str, ...] = (), **config_overrides) -> Path:
    """save_pretrained's folder for a random model (trained for train_steps on EN -> FR) and its tokenizer;
    vocab_size pads the vocabulary with pieces no text makes (opus-mt's full size); source_words are whole pieces
    of the source model."""
    from transformers import GenerationConfig, MarianTokenizer

    path.mkdir(parents=True, exist_ok=True)
    spm = path / "spm"
    spm.mkdir(exist_ok=True)
    source, target = train_spm(EN, 60, source_words), train_spm(FR, 60)
    (spm / "source.spm").write_bytes(source)
    (spm / "target.spm").write_bytes(target)
    vocab = marian_vocab(source, target, size=vocab_size)
    (spm / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    extra = {}
    if separate:
        target_vocab = marian_vocab(target, size=len(vocab))  # <pad> at the same id: Marian's decoder start
        (spm / "target_vocab.json").write_text(json.dumps(target_vocab, ensure_ascii=False), encoding="utf-8")
        extra = dict(target_vocab_file=str(spm / "target_vocab.json"), separate_vocabs=True)
        config_overrides = dict(share_encoder_decoder_embeddings=False, decoder_vocab_size=len(target_vocab),
                                **config_overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses" (not used by tokenize)
        tokenizer = MarianTokenizer(str(spm / "source.spm"), str(spm / "target.spm"), str(spm / "vocab.json"),
                                    source_lang="en", target_lang="fr", **extra)
    model = random_model(marian_config(len(vocab), **config_overrides), seed, None if train_steps else 0.3)
    if train_steps:
        train_briefly(model, tokenizer, train_steps)
    with torch.no_grad():  # a trained Marian gives <pad> (never a target) no probability; nor does this one
        model.final_logits_bias[0, len(vocab) - 1] = -30.0
    pad = len(vocab) - 1
    model.generation_config = GenerationConfig(decoder_start_token_id=pad, pad_token_id=pad, eos_token_id=0,
                                               bos_token_id=0, forced_eos_token_id=0, bad_words_ids=[[pad]],
                                               max_length=64, num_beams=4)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def load_marian(path: Path):
    """transformers' own model (eval mode) and tokenizer of a folder write_marian_folder wrote."""
    from transformers import MarianMTModel, MarianTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MarianMTModel.from_pretrained(path, attn_implementation="eager")  # sdpa returns no attention
        return model.eval(), MarianTokenizer.from_pretrained(path)

"""The training presets, by name: what `--preset` and the Train page offer, without torch."""

from __future__ import annotations

from typing import Any

# Each preset: model config overrides, tokenizer settings, training config overrides.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "tiny": {  # learns visible alignments within minutes on 2 CPU cores
        "model": dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=512, dropout=0.1),
        "tokenizer": dict(vocab_size=2000),
        "train": dict(lr=2e-3, warmup_steps=300, max_tokens=3000, max_steps=1500, eval_every=250, save_every=250,
                      log_every=25, eval_sentences=100),
    },
    "small": {  # the shipped model's size; on the Bible test BLEU 23 (greedy) at step 1,500 (BENCHMARKS.md)
        "model": dict(d_model=256, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024, dropout=0.1),
        "tokenizer": dict(vocab_size=8000),
        "train": dict(schedule="cosine", lr=2e-3, warmup_steps=300, max_tokens=6000, max_steps=2400, eval_every=300,
                      save_every=300, log_every=50),
    },
    "base": {  # Vaswani et al. (2017), base model
        "model": dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.1),
        "tokenizer": dict(vocab_size=16_000),
        "train": dict(lr=7e-4, warmup_steps=4000, max_tokens=12_000, max_steps=50_000),
    },
}

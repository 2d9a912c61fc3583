"""Hugging Face translation models -> checkpoints of our own Transformer: Marian (opus-mt), M2M100 and NLLB-200,
mBART and mBART-50, BART. One module per concern, as TransformerLens keeps one per architecture:

    common             the source folder or Hub download, the files read, the config fields every family shares
    marian, fairseq    each family's config mapping onto ModelConfig options (no second model class)
    weights            one table of renames for all of them, a shape check per tensor
    fairseq_tokenizer  M2M100's, NLLB's, the mBARTs' and BART's tokenizers, language codes included
    card               metadata.json's provenance and the generated MODEL_CARD.md
    command            the import and its command line

    python -m transformer.model.hf Helsinki-NLP/opus-mt-en-fr --out checkpoints/opus-mt-en-fr   # online
    python -m transformer.model.hf facebook/nllb-200-distilled-600M --src-lang eng_Latn --tgt-lang fra_Latn \\
        --out checkpoints/nllb-600m
    transformer-import ./opus-mt-en-fr --out checkpoints/opus-mt-en-fr   # a folder save_pretrained or a download wrote

Only `model.safetensors` and the JSON, SentencePiece and tokenizer files are read; `pytorch_model.bin` is never
unpickled. A config whose architecture or options we do not implement is refused by name, and a folder with missing
or inconsistent files (vocabulary sizes, shapes, special ids) gets one `ImportFailed` naming the file, before
anything is written. Every import is checked against transformers itself (tests/hf_import/test_marian.py,
tests/hf_import/test_families.py).
"""

from transformer.model.hf.command import import_model, main
from transformer.model.hf.common import ImportFailed

import_marian = import_model  # its name when Marian was the only family (bench/hf_marian.py, the tests)

__all__ = ["ImportFailed", "import_marian", "import_model", "main"]

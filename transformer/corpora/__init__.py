"""The old path of transformer.data.corpora, kept for `python -m transformer.data.corpora.debian`."""

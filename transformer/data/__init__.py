"""Data: words and word links (words), the tokenizer (tokenizer), what to load (spec), the loaders one per
source (corpora) and the dispatch over them (load)."""

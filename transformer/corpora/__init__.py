"""Generated corpora with known structure: the English -> French teaching corpus and its gold word alignments."""

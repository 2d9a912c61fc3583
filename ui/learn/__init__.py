"""The Learn page's own pieces: positional encodings, masks and Eq. 1 by hand."""

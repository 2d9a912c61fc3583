"""The Decode step by step page's own pieces: which hypothesis the page follows, the n-best list's words."""

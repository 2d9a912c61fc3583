"""The Decode step by step page's own pieces: which hypothesis the page follows, the n-best list's words, and the
next-token panel (the candidate bars of a step, "Draw again" at the same step)."""

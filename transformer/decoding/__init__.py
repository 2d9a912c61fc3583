"""Decoding: greedy, beam search and its settings (search), step by step (session), the `Translator` and
`transformer-translate` (translate), and scoring a checkpoint on a corpus split (evaluate)."""

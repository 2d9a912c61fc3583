"""Models: finding checkpoints and runs, loading and caching the chosen one, the translation gate, example sentences."""

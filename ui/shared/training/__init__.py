"""Training runs as background processes, read through the run folder's one owner (transformer.runs)."""

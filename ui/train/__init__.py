"""The Train page's own pieces: the form that builds a training command and the live view of a run."""

"""The old path of `transformer.charts.training_curves`, kept while Explain heads still imports it from here."""

from transformer.charts.training_curves import CURSOR_COLOR, training_curves  # noqa: F401

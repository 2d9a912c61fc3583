"""`python -m transformer.training ...`: the training command (transformer.training.cli)."""

from transformer.training.cli import main

raise SystemExit(main())

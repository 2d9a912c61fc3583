"""The old path of transformer.training.cli: `python -m transformer.train` keeps working."""

from transformer.training.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())

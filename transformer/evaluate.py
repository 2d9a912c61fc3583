"""The old path of transformer.decoding.evaluate: `python -m transformer.evaluate` keeps working."""

from transformer.decoding.evaluate import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())

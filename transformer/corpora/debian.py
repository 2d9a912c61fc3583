"""The old path of transformer.data.corpora.debian: `python -m transformer.data.corpora.debian` keeps working."""

from transformer.data.corpora.debian import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())

"""The old path of transformer.decoding.translate: `from transformer.translate import Translator` and
`python -m transformer.translate` keep working."""

from transformer.decoding.translate import Translation, TranslationError, Translator, main

__all__ = ["Translation", "TranslationError", "Translator", "main"]

if __name__ == "__main__":
    raise SystemExit(main())

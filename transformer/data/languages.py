"""Language codes of many-to-many models (M2M100, NLLB-200, mBART): finding one as a user types it, and which way a
language reads.

A many-to-many model names its languages with tokens of its own: M2M100 `__fr__`, NLLB-200 `fra_Latn`, mBART
`fr_XX`. `find_code` takes what a user types (`fr`, `fra_Latn`, `__fr__`, in any case) and returns the model's
code, or says which codes come close. `is_rtl` says whether text in a language reads right to left: Arabic, Hebrew,
Persian, Urdu and the other languages written in the Arabic, Hebrew, Syriac, Thaana or N'Ko scripts.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from transformer.data.vocabulary import TokenizerError

# ISO 639-1 and 639-3 codes of languages written right to left, as the models above spell them
RTL_LANGUAGES = frozenset({
    "ar", "he", "iw", "fa", "ur", "yi", "ps", "sd", "ug", "dv", "ckb", "ku_Arab",
    "ara", "arb", "ars", "ary", "arz", "acm", "acq", "aeb", "ajp", "apc", "heb", "fas", "pes", "prs", "urd", "yid",
    "ydd", "pus", "pbt", "snd", "uig", "div", "kas_Arab", "azb",
})
RTL_SCRIPTS = frozenset({"Arab", "Hebr", "Syrc", "Thaa", "Nkoo", "Adlm"})  # ISO 15924, NLLB's code suffixes


class LanguageError(TokenizerError):
    """A language code the model does not have, or a model that has none; the message names the codes it has."""


def bare(code: str) -> str:
    """The language part of a model's code: `__fr__` -> fr, `fra_Latn` -> fra, `fr_XX` -> fr."""
    return code.strip("_").split("_")[0]


def is_rtl(code: str | None) -> bool:
    """Whether text in the language `code` (any of the spellings above) reads right to left."""
    if not code:
        return False
    parts = code.strip("_").split("_")
    return (code.strip("_") in RTL_LANGUAGES or parts[0].lower() in RTL_LANGUAGES
            or (len(parts) > 1 and parts[-1] in RTL_SCRIPTS))


def find_code(codes: Sequence[str], asked: str, side: str = "target") -> str:
    """The code of `codes` that `asked` names: itself, its case-folded form, or its bare language when exactly one
    code has it (fr -> __fr__ or fr_XX; zho is zho_Hans or zho_Hant, so it names none); else LanguageError naming
    the codes that come close (fr -> fra_Latn)."""
    if asked in codes:
        return asked
    folded = [c for c in codes if c.casefold() == asked.casefold() or bare(c).casefold() == asked.casefold()]
    if len(folded) == 1:
        return folded[0]
    if not codes:
        raise LanguageError(f"this model has no language codes: it cannot take a {side} language ({asked!r})")
    close = folded or [c for c in codes if bare(c).casefold().startswith(bare(asked).casefold()[:2])] or \
        difflib.get_close_matches(asked, codes, n=5)
    hint = f"; did you mean {', '.join(close[:8])}?" if close else \
        f" (it has {len(codes)}, e.g. {', '.join(codes[:5])})"
    raise LanguageError(f"no {side} language {asked!r} in this model{hint}")


def language_codes(tokenizer: object) -> list[str]:
    """A tokenizer's language codes (many-to-many models'); [] for one that has none."""
    return list(getattr(tokenizer, "language_codes", []))


def with_languages(tokenizer: object, src_lang: str | None, tgt_lang: str | None):
    """tokenizer translating src_lang -> tgt_lang (None keeps a side); LanguageError for a code the model lacks, or a
    model that translates one pair only (our own, Marian's: they have no language codes)."""
    choose = getattr(tokenizer, "with_languages", None)
    if choose is None:
        raise LanguageError(f"this model has no language codes (it translates one language pair): a source or target "
                            f"language ({src_lang or tgt_lang!r}) applies to many-to-many models only (M2M100, "
                            "NLLB-200, mBART-50)")
    return choose(src_lang, tgt_lang)

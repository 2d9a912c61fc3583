"""Bounds on what one search may ask for (`SearchSettings` checks them): a beam of 100,000 filled 20.7 GB in 70 s
before the kernel killed it. Each hypothesis is a row of the batch (its cache, its (V,) scores), so memory grows
with the beam; 64 is far past where BLEU stops improving. Samples drawn side by side are rows too,
bounded by MAX_SAMPLES; sampling's top-k by MAX_TOP_K.
"""

from __future__ import annotations

from typing import Any

MAX_BEAM, MAX_TOP_K, MAX_ALPHA, MAX_LEN_A, MAX_LEN_B = 64, 1000, 10.0, 100.0, 100_000
MAX_SAMPLES = 512  # samples side by side: ~0.2 MB of cache a row (as a beam's), and enough for a frequency check
COUNTS = (("beam_size", 1, MAX_BEAM), ("nbest", 1, MAX_BEAM), ("candidates", 1, MAX_TOP_K), ("max_len_b", 0, MAX_LEN_B),
          ("top_k", 0, MAX_TOP_K), ("num_samples", 1, MAX_SAMPLES))  # top_k: sampling's cut, 0 keeping every token
NUMBERS = (("alpha", MAX_ALPHA), ("max_len_a", MAX_LEN_A))


def check_bounds(settings: Any) -> None:
    """ValueError, in one line, for a count or a number of settings out of what one search may ask (types
    included: a float beam or a NaN alpha would get past a comparison). Fields settings lacks are skipped."""
    for name, low, high in COUNTS:
        value = getattr(settings, name, low)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high:,}, got {str(value)[:20]}")
    for name, high in NUMBERS:
        value = getattr(settings, name, 0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= high:
            raise ValueError(f"{name} must be a number from 0 to {high:g}, got {str(value)[:20]}")

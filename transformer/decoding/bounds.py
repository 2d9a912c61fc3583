"""Bounds on what one search may ask for (`SearchSettings` checks them, with every other field's type and range, in
`transformer.decoding.settings.FIELDS`): a beam of 100,000 filled 20.7 GB in 70 s before the kernel killed it. Each
hypothesis is a row of the batch (its cache, its (V,) scores), so memory grows with the beam; 64 is far past where
BLEU stops improving. Samples drawn side by side are rows too, bounded by MAX_SAMPLES; sampling's top-k by MAX_TOP_K.
"""

from __future__ import annotations

MAX_BEAM, MAX_TOP_K, MAX_ALPHA, MAX_LEN_A, MAX_LEN_B = 64, 1000, 10.0, 100.0, 100_000
MAX_SAMPLES = 512  # samples side by side: ~0.2 MB of cache a row (as a beam's), and enough for a frequency check
# p ** (1 / T) at T = 100 leaves every token within 9 nats of the best within 10% of its probability: flat already
MAX_TEMPERATURE = 100.0
MAX_SEED = 2**32  # seeds are 0 <= seed < MAX_SEED; each sample's generator is seeded from (seed, sample index)

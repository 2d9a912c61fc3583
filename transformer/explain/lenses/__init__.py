"""Attention lenses: ways to read "what each position draws on" beyond the raw weights, and how well each one
aligns words and agrees with the model's own behaviour (`python -m transformer.explain.lenses`).

- `trace`: one pass that keeps what every lens reads
- `attention`: raw, norm-weighted (Kobayashi et al. 2020), Shift-Att (Chen et al. 2020), rollout (Abnar and
  Zuidema 2020)
- `alti`: ALTI / ALTI+ (Ferrando et al. 2022)
- `value_zeroing`: value zeroing (Mohebbi et al. 2023)
- `maps`: the lenses by name
- `scores`: AER on gold links and faithfulness to occlusion, per lens and layer
"""

from transformer.explain.lenses.attention import LayerMaps, LensMaps, renormalise, rollout
from transformer.explain.lenses.maps import HEADLESS, LABELS, LENSES, as_attention, check_lens, lens_maps

__all__ = ["HEADLESS", "LABELS", "LENSES", "LayerMaps", "LensMaps", "as_attention", "check_lens", "lens_maps",
           "renormalise", "rollout"]

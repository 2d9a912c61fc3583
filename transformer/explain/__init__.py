"""Explanations of a trained model, one module per question a student or researcher asks of a head.

- `alignment`: word alignments read from cross-attention and their error rate (AER)
- `interventions`: what-if copies of the model (heads switched off, no positions, a logit temperature) and
  teacher-forced passes with or without the causal mask
- `arithmetic`: Eq. 1 for any cell of any map, with the model's own numbers
- `statistics`: per-head statistics over a sample and the plain-language roles they suggest
- `importance`: what each head is worth, as the drop in log-likelihood and BLEU without it
- `history`: a probe sentence's attention across the snapshots of a training run
- `attribution`: one output token attributed to the source words and the target prefix (saliency, input x
  gradient, integrated gradients, occlusion; contrastive against a foil)
- `foil`: a typed target word as the foil of a contrastive question (its first piece; whether it has several)
- `contrast`: that question ("why this token rather than that word?") attributed in one call
- `forced_comparison`: the model's own translation beside one forced to start with a given prefix: totals,
  per-piece log-probabilities, cross-attention of both and their difference
- `logit_lens`: the decoder's layers read through the output projection (logit lens), and the translation each
  encoder layer would give (DecoderLens)
- `patching`: activation patching on a counterfactual source pair
- `stream`: the residual stream run layer by layer from the token embeddings (what the three above run on)
- `flow`: one output token through the whole model, every stage from the embedding to the softmax at a
  temperature, what each sublayer adds to the residual stream, the neurons that fire most
- `lenses`: other readings of attention (norm-weighted, Shift-Att, rollout, ALTI+, value zeroing), each scored on
  gold links and for faithfulness (`python -m transformer.explain.lenses`)
- `dataset`: a whole split as a table (translation, chrF, BLEU, length ratio, mean probability, exact match, AER,
  constructions), with `dataset_slices` (metrics, head statistics and lenses' AER per slice; the PCA projector)
  and `dataset_cache` (its cache on disk)
- `views`: the pictures of all these that display themselves (Jupyter, a browser, the app): the head view and
  model view of token lines, SVG heatmaps, Eq. 1 for one cell, the beam tree, one token's flow

Nothing here stores state on the model: an intervention edits the weights of a copy.
"""

from transformer.data.words import Link, format_links, parse_links, words
from transformer.explain.alignment import (
    AlignedExample,
    AlignmentCounts,
    HeadAlignment,
    alignment_error_rate,
    argmax_links,
    count_links,
    cross_attention_aer,
    link_cells,
    piece_words,
    sentence_aer,
    word_attention,
)
from transformer.explain.arithmetic import CellArithmetic, cell_arithmetic
from transformer.explain.history import ProbeFrame, probe_history
from transformer.explain.importance import HeadImportance, dev_log_likelihood, head_importance, sample_bleu
from transformer.explain.interventions import (
    FAMILIES,
    Head,
    Intervention,
    TeacherForced,
    changed_tokens,
    intervened,
    intervened_translator,
    teacher_forced,
)
from transformer.explain.statistics import (
    STATISTICS,
    HeadLabel,
    HeadStatistics,
    StatisticsAccumulator,
    head_labels,
    head_statistics,
    map_statistics,
)

__all__ = [
    "FAMILIES", "STATISTICS", "AlignedExample", "AlignmentCounts", "CellArithmetic", "Head", "HeadAlignment",
    "HeadImportance", "HeadLabel", "HeadStatistics", "Intervention", "Link", "ProbeFrame", "StatisticsAccumulator",
    "TeacherForced", "alignment_error_rate", "argmax_links", "cell_arithmetic", "changed_tokens", "count_links",
    "cross_attention_aer", "dev_log_likelihood", "format_links", "head_importance", "head_labels",
    "head_statistics", "intervened", "intervened_translator", "link_cells", "map_statistics", "parse_links",
    "piece_words", "probe_history", "sample_bleu", "sentence_aer", "teacher_forced", "word_attention", "words",
]

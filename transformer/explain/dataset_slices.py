"""Slices of a tabulated split (`dataset.dataset_table`): the sentences of a construction, of a length bucket or
with a word; the metrics per slice, head statistics per slice and each lens's best AER per slice; and the
projector, every token's final encoder (or decoder) state in 2-D.

    groups = slices(result, "construction")          # slice name -> boolean mask over the table's rows
    slice_metrics(result, groups)                    # one row per slice: sentences, BLEU, chrF, exact, AER, ...
    slice_statistics(result, groups["negation"])     # statistics.HeadStatistics of those sentences only
    projector_points(result, "encoder")              # x, y, sentence, position, token, context

A slice's BLEU and chrF are corpus-level over its sentences (sacreBLEU, as `transformer-evaluate`), not a mean of
sentence scores. PCA (numpy's SVD) places the tokens; UMAP is not a dependency.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from transformer.data.corpora.teaching.constructions import CONSTRUCTIONS
from transformer.data.words import words
from transformer.decoding.evaluate import corpus_scores
from transformer.explain.dataset import (
    LENGTH_EDGES,
    DatasetError,
    DatasetResult,
    aer,
    best_head,
    length_bucket,
    scored,
)
from transformer.explain.dataset_rows import FAMILIES, SIDES
from transformer.explain.lenses.maps import HEADLESS, LABELS
from transformer.explain.statistics import STATISTICS, HeadStatistics

SLICINGS = ("construction", "length", "word")


def slices(result: DatasetResult, by: str, word: str = "") -> dict[str, np.ndarray]:
    """Slice name -> boolean mask (N,) over the table's rows. by "construction" (the teaching corpus: a sentence
    is in the slice of each construction it uses), "length" (source words, in buckets) or "word" (sentences whose
    source or reference has the word, case aside, and those that do not)."""
    table = result.table
    if by == "construction":
        if "constructions" not in table:
            raise DatasetError("only the teaching corpus has constructions; slice by length or by a word")
        have = [set(c.split(", ")) if c else set() for c in table["constructions"]]
        masks = {name: np.array([name in h for h in have], dtype=bool) for name in CONSTRUCTIONS}
        return {name: mask for name, mask in masks.items() if mask.any()}
    if by == "length":
        buckets = table["length_bucket"].to_numpy()
        order = [length_bucket(n) for n in (*LENGTH_EDGES, LENGTH_EDGES[-1] + 1)]
        return {name: buckets == name for name in order if (buckets == name).any()}
    if by == "word":
        wanted = word.strip().lower()
        if not wanted or len(words(wanted)) != 1:
            raise DatasetError(f"give one word to slice by, got {word[:40]!r}")
        has = np.array([wanted in {w.lower() for w in words(s) + words(r)}
                        for s, r in zip(table["source"], table["reference"])], dtype=bool)
        return {f"with “{wanted}”": has, f"without “{wanted}”": ~has}
    raise DatasetError(f"slice by one of {', '.join(SLICINGS)}, got {by!r}")


def slice_metrics(result: DatasetResult, groups: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per slice: its sentences, corpus BLEU and chrF, mean sentence chrF, mean token probability, mean
    length ratio and, with gold links, exact match (%) and each lens's best head's AER (%) over the slice."""
    table, out = result.table, []
    for name, mask in groups.items():
        rows = table[mask]
        if rows.empty:
            continue
        scores = corpus_scores(list(rows["translation"]), list(rows["reference"]))
        record = {"slice": name, "sentences": len(rows), "bleu": scores["bleu"], "chrf": scores["chrf"],
                  "mean_sentence_chrf": rows["chrf"].mean(), "mean_prob": rows["mean_prob"].mean(),
                  "length_ratio": rows["length_ratio"].mean()}
        if "exact" in rows:
            record["exact"] = 100.0 * rows["exact"].mean()
        for lens, (layer, head, value) in slice_lens_aer(result, mask).items():
            record[f"aer_{lens}"] = 100.0 * value
            record[f"aer_{lens}_head"] = f"layer {layer}" + ("" if lens in HEADLESS else f" head {head}")
        out.append(record)
    return pd.DataFrame(out)


def slice_lens_aer(result: DatasetResult, mask: np.ndarray) -> dict[str, tuple[int, int, float]]:
    """Per lens: (layer, head, AER) of its best head over the slice's sentences with usable gold links."""
    best = {}
    for lens in result.lenses:
        counts = result.arrays.get(f"sentence.aer.{lens}")
        if counts is None:
            continue
        counts = counts[torch.from_numpy(np.asarray(mask, dtype=bool))]
        if scored(counts).any():
            best[lens] = best_head(counts)
    return best


def best_lens(result: DatasetResult, mask: np.ndarray) -> tuple[str, str, float] | None:
    """(lens, its label, AER) of the lens whose best head aligns the slice best; None without gold links."""
    found = slice_lens_aer(result, mask)
    if not found:
        return None
    lens = min(found, key=lambda name: found[name][2])
    return lens, LABELS[lens], found[lens][2]


def slice_statistics(result: DatasetResult, mask: np.ndarray) -> HeadStatistics:
    """Every head's statistics (`statistics.STATISTICS`) averaged over the query rows of the slice's sentences,
    teacher-forced on their references: what `statistics.head_statistics` gives for those sentences."""
    chosen = torch.from_numpy(np.asarray(mask, dtype=bool))
    values = {}
    for family in FAMILIES:
        both = result.arrays[f"sentence.stats.{family}"][chosen].double().sum(0)  # (2, stats, L, H)
        values[family] = {name: both[0, i] / both[1, i] for i, name in enumerate(STATISTICS)}  # 0 / 0: NaN
    return HeadStatistics(values, int(chosen.sum()))


def sentence_aer_of_head(result: DatasetResult, lens: str, layer: int, head: int) -> np.ndarray:
    """Each sentence's AER (%) for one lens's head; NaN where the sentence has no usable gold links."""
    counts = result.arrays[f"sentence.aer.{lens}"]
    return torch.where(scored(counts), aer(counts[:, layer, head]) * 100.0, torch.nan).numpy()


def pca_2d(states: np.ndarray) -> np.ndarray:
    """(N, D) -> (N, 2): the first two principal components, each signed so its largest loading is positive."""
    if states.shape[0] == 0:
        return np.zeros((0, 2))
    centred = states - states.mean(axis=0, keepdims=True)
    _, _, components = np.linalg.svd(centred, full_matrices=False)  # (min(N, D), D)
    components = components[:2]
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    coords = centred @ (components * signs[:, None]).T  # (N, <=2)
    return np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))


def projector_points(result: DatasetResult, side: str = "encoder") -> pd.DataFrame:
    """Every token of the rows done: x, y (PCA of the final encoder states, or of the decoder's teacher-forced on
    the translation: row t is the state that chose output piece t), its sentence, position, piece and the
    sentence with that piece in brackets (the hover)."""
    if side not in SIDES:
        raise DatasetError(f"side must be one of {', '.join(SIDES)}, got {side!r}")
    states = result.arrays[f"tokens.{side}.states"].double().numpy()
    sentence = result.arrays[f"tokens.{side}.sentence"].long().numpy()
    position = result.arrays[f"tokens.{side}.position"].long().numpy()
    pieces = result.pieces[side]
    xy = pca_2d(states)
    tokens = [pieces[s][p] if p < len(pieces[s]) else "?" for s, p in zip(sentence, position)]
    context = [" ".join(f"[{t}]" if i == p else t for i, t in enumerate(pieces[s])) for s, p in zip(sentence, position)]
    return pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "sentence": sentence, "position": position, "token": tokens,
                         "context": context})


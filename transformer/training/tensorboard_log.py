"""TensorBoard event files of a run, beside metrics.jsonl (which stays the app's source of truth).

`RunBoard(files.tensorboard)` writes each metric record's numbers as scalars (`train/loss`, `train/lr`,
`train/tokens_per_s`, `train/grad_norm`, `dev/bleu`, `dev/chrf`, ...) and, at each evaluation, every probe
sentence's attention maps as grayscale images (layers as rows, heads as columns, brighter = more weight) and
its translation as text. The trainer calls it on log and eval steps only, from rank 0 only.

It never stops a run: when TensorBoard cannot be imported or a write fails (disk full), it logs one warning
and writes nothing more. A resumed run purges the events logged after the checkpoint it resumes from, as
metrics.jsonl drops them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)

# metric record key -> TensorBoard tag; dev_* keys become dev/* (BLEU, chrF, loss, exact match, AER)
TAGS = {"train_loss": "train/loss", "lr": "train/lr", "tokens_per_s": "train/tokens_per_s",
        "grad_norm": "train/grad_norm"}
CELL_PIXELS = 64  # each attention map is upscaled to about this many pixels on its longer side
GAP = 2  # pixels between the maps of an image's grid


def scalar_tags(record: dict[str, Any]) -> dict[str, float]:
    """The TensorBoard scalars of one metric record: tag -> value (its numbers only; step and time are not)."""
    out = {}
    for key, value in record.items():
        tag = TAGS.get(key) or (f"dev/{key[4:]}" if key.startswith("dev_") else None)
        if tag and isinstance(value, int | float) and not isinstance(value, bool):
            out[tag] = float(value)
    return out


def attention_image(maps: torch.Tensor) -> np.ndarray:
    """A (L, H, L_q, L_k) stack of attention maps as one (1, height, width) uint8 grid image.

    Rows of the grid are layers, columns heads; within a map rows are queries and columns keys, as in the app.
    """
    n_layers, n_heads, n_q, n_k = maps.shape
    scale = max(1, CELL_PIXELS // max(n_q, n_k, 1))
    cells = (maps.float().clamp(0, 1).cpu().numpy() * 255).round().astype(np.uint8)
    cells = cells.repeat(scale, axis=2).repeat(scale, axis=3)  # (L, H, L_q * scale, L_k * scale)
    h, w = n_q * scale, n_k * scale
    grid = np.full((n_layers * (h + GAP) - GAP, n_heads * (w + GAP) - GAP), 64, dtype=np.uint8)
    for layer in range(n_layers):
        for head in range(n_heads):
            y, x = layer * (h + GAP), head * (w + GAP)
            grid[y : y + h, x : x + w] = cells[layer, head]
    return grid[None]  # (1, height, width): TensorBoard's CHW


class RunBoard:
    """A run's TensorBoard writer that logs a warning and goes quiet instead of failing."""

    def __init__(self, folder: str | Path | None, *, purge_step: int | None = None):
        """folder None: a board that writes nothing (the other ranks of a distributed run)."""
        self.writer = None
        if folder is None:
            return
        try:
            from torch.utils.tensorboard import SummaryWriter  # imported here: only a training run needs it

            self.writer = SummaryWriter(str(folder), purge_step=purge_step or None, flush_secs=120)
        except Exception as e:  # an absent package as much as a folder that cannot be made
            self._give_up("start", e)

    def _give_up(self, what: str, error: Exception) -> None:
        log.warning("TensorBoard: could not %s (%s); the run goes on without event files", what, error)
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the writer is broken already; nothing more to say
                pass

    def scalars(self, record: dict[str, Any]) -> None:
        if self.writer is None:
            return
        try:
            for tag, value in scalar_tags(record).items():
                self.writer.add_scalar(tag, value, record["step"])
        except Exception as e:
            self._give_up("write scalars", e)

    def probes(self, step: int, sources: Sequence[str], translations: Sequence[str],
               maps: Sequence[dict[str, torch.Tensor]]) -> None:
        """Each probe's translation as text and its attention families (family -> (L, H, L_q, L_k)) as images."""
        if self.writer is None:
            return
        try:
            for i, (source, translation, families) in enumerate(zip(sources, translations, maps)):
                self.writer.add_text(f"probe{i}/translation", f"**{source}**\n\n→ {translation or '∅'}", step)
                for family, stack in families.items():
                    self.writer.add_image(f"probe{i}/{family}", attention_image(stack), step, dataformats="CHW")
        except Exception as e:
            self._give_up("write the probes", e)

    def flush(self) -> None:
        if self.writer is None:
            return
        try:
            self.writer.flush()
        except Exception as e:
            self._give_up("flush", e)

    def close(self) -> None:
        if self.writer is None:
            return
        try:
            self.writer.close()
        except Exception as e:
            log.warning("TensorBoard: could not close the event file (%s)", e)
        self.writer = None

"""A probe sentence's attention across training: the snapshots a run saves at each evaluation
(`transformer.runs` writes and reads them), as frames of one head's map with the metrics of that step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor

from transformer.runs import ProbeRecord, RunFiles, probe_steps, read_metrics, read_probe_maps, read_probe_snapshot


@dataclass
class ProbeFrame:
    step: int
    record: ProbeRecord  # the probe's translation at that step: its pieces label the map
    weights: Tensor  # (L_q, L_k) one head's map, or the mean of the layer's heads
    metrics: dict[str, Any]  # the evaluation logged at that step ({} when none was)


def probe_labels(record: ProbeRecord, family: str) -> tuple[list[str], list[str]]:
    """(query labels, key labels) of a family's map of a probe."""
    return {"enc_self": (record.src_pieces, record.src_pieces),
            "dec_self": (record.tgt_pieces, record.tgt_input_pieces),
            "cross": (record.tgt_pieces, record.src_pieces)}[family]


def probe_history(run: str | Path | RunFiles, probe: int = 0, family: str = "cross", layer: int = -1,
                  head: int | None = None) -> list[ProbeFrame]:
    """Every readable snapshot of one probe, oldest first: the map of (family, layer, head), head None for the
    mean of the heads; layer -1 is the last layer. Snapshots being written are left out."""
    evaluations = {r["step"]: r for r in read_metrics(run if not isinstance(run, RunFiles) else run.root)
                   if "step" in r and any(k.startswith("dev_") for k in r)}
    frames = []
    for step in probe_steps(run):
        snapshot = read_probe_snapshot(run, step)
        if snapshot is None or probe >= len(snapshot.probes):
            continue
        try:
            maps = read_probe_maps(run, step, probe)[family][layer]  # (H, L_q, L_k)
        except (OSError, KeyError, IndexError, ValueError):
            continue
        weights = maps.float().mean(0) if head is None else maps[head].float()
        frames.append(ProbeFrame(step, snapshot.probes[probe], weights, evaluations.get(step, {})))
    return frames

"""Training configuration, presets, schedules, and the optimizer state saved in a checkpoint.

The files of a run directory belong to `transformer.runs`; the names re-exported here keep old imports working.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from transformer.model.checkpoint import CheckpointError, inside_checkpoint, read_checksums, verify_checksum
from transformer.runs import RunFiles, append_metrics, read_metrics, read_status, write_status  # noqa: F401
from transformer.training.flags import RANGES, check_fields
from transformer.training.presets import PRESETS  # noqa: F401 (imported from here by the CLI, the notebook)

OPTIMIZER_FILE = "optimizer.safetensors"
TRAINER_STATE_FILE = "trainer_state.json"


@dataclass(frozen=True)
class TokenizerSettings:
    kind: str = "bpe"  # "bpe" or "wordlevel"
    vocab_size: int = 8000
    shared: bool = True  # one vocabulary for both languages (allows shared embeddings)
    min_frequency: int = 2

    def __post_init__(self) -> None:
        if self.kind not in ("bpe", "wordlevel"):
            raise ValueError(f"kind must be one of ('bpe', 'wordlevel'), got {self.kind!r}")
        if not isinstance(self.shared, bool):
            raise ValueError(f"shared must be True or False, got {self.shared!r}")
        check_fields(self, ("vocab_size", "min_frequency"))


@dataclass(frozen=True)
class TrainConfig:
    optimizer: str = "adam"  # "adam" with the paper's betas (0.9, 0.98), or "adamw"
    weight_decay: float = 0.0  # only used by adamw
    schedule: str = "noam"  # "noam": linear warmup then inverse sqrt; "cosine": linear warmup then cosine to 0
    lr: float = 7e-4  # peak learning rate, reached at the end of warmup
    warmup_steps: int = 4000
    label_smoothing: float = 0.1  # Section 5.4
    clip_grad_norm: float = 1.0  # 0 disables clipping
    max_tokens: int = 4096  # padded tokens per batch (the larger of source and target side)
    accumulation: int = 1  # batches per optimizer step
    max_steps: int = 20_000  # optimizer steps
    max_epochs: int | None = None  # stop early after this many passes over the data
    log_every: int = 50
    eval_every: int = 1000  # dev loss, BLEU, chrF and probe attention maps
    save_every: int = 1000
    keep_last: int = 2  # step-NNN checkpoints kept besides latest and best
    eval_sentences: int = 300  # dev sentences translated for BLEU at each eval
    seed: int = 0
    device: str = "auto"  # "auto" (cuda, then mps, then cpu), "cpu", "cuda", "mps"
    precision: str = "auto"  # "auto" (bf16 where the hardware has it, else fp32), "fp32", "bf16" or "fp16" (autocast)
    threads: int | None = None  # CPU threads for torch; None keeps torch's default
    compile: bool = False  # torch.compile the training step: minutes of compiling on a CPU for little gain

    def __post_init__(self) -> None:
        checks = {
            "optimizer": ("adam", "adamw"),
            "schedule": ("noam", "cosine"),
            "device": ("auto", "cpu", "cuda", "mps"),
            "precision": ("auto", "fp32", "bf16", "fp16"),
        }
        for name, allowed in checks.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        check_fields(self, [f.name for f in fields(self) if f.name in RANGES])


def learning_rate(step: int, config: TrainConfig) -> float:
    """Learning rate for optimizer step `step` (counted from 1)."""
    step = max(step, 1)
    warmup = max(config.warmup_steps, 1)
    if step < warmup:
        return config.lr * step / warmup
    if config.schedule == "noam":  # Eq. 3, rescaled so that the peak is config.lr
        return config.lr * math.sqrt(warmup / step)
    progress = min(1.0, (step - warmup) / max(1, config.max_steps - warmup))
    return config.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


FUSED_OPTIMIZER_DEVICES = ("cpu", "cuda")  # where torch has a fused Adam/AdamW kernel that make_optimizer uses


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam or AdamW with the paper's betas. On CPU and CUDA one fused kernel updates every parameter: on 2 CPU
    cores about 7x faster than torch's default loop over the parameter tensors (BENCHMARKS.md)."""
    params = [p for p in model.parameters() if p.requires_grad]
    fused = all(p.device.type in FUSED_OPTIMIZER_DEVICES for p in params)
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, betas=(0.9, 0.98), eps=1e-9, fused=fused)
    return torch.optim.AdamW(params, lr=config.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=config.weight_decay,
                             fused=fused)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA GPU is available")
    return torch.device(name)


# ----------------------------------------------------------------------------- optimizer state, no pickle


@dataclass
class TrainState:
    """Where a run stands: saved beside the optimizer in every checkpoint, restored on resume."""

    step: int = 0
    epoch: int = 0
    batch: int = 0  # the next batch of the epoch's shuffled order
    elapsed: float = 0.0  # seconds of training, over every resume
    best_bleu: float | None = None


def save_training_state(directory: Path, optimizer: torch.optim.Optimizer, state: TrainState) -> None:
    """Optimizer tensors to safetensors, everything else (step, epoch, position, RNG) to JSON."""
    opt = optimizer.state_dict()
    tensors, scalars = {}, {}
    for index, param_state in opt["state"].items():
        for key, value in param_state.items():
            if torch.is_tensor(value):
                tensors[f"{index}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{index}.{key}"] = value
    tensors["rng.torch"] = torch.get_rng_state()
    save_file(tensors, str(directory / OPTIMIZER_FILE))
    saved = {**asdict(state), "param_groups": opt["param_groups"], "scalars": scalars}
    (directory / TRAINER_STATE_FILE).write_text(json.dumps(saved, indent=2), encoding="utf-8")


def load_training_state(directory: Path, optimizer: torch.optim.Optimizer) -> TrainState:
    """Restore the optimizer and torch's RNG; returns the trainer state saved beside them.

    Both files are checked against the checkpoint's checksums (when it has them) and the JSON's fields by type:
    anything wrong is a CheckpointError that names the file, never a KeyError or TypeError from deep inside.
    """
    state_file = inside_checkpoint(directory, directory / TRAINER_STATE_FILE)
    tensor_file = inside_checkpoint(directory, directory / OPTIMIZER_FILE)
    if not state_file.is_file() or not tensor_file.is_file():
        raise CheckpointError(f"{directory}: no training state to resume from ({TRAINER_STATE_FILE} missing)")
    sums = read_checksums(directory)
    verify_checksum(state_file, sums)
    verify_checksum(tensor_file, sums)
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        tensors = load_file(str(tensor_file))
    except Exception as e:
        raise CheckpointError(f"{directory}: training state cannot be read ({e})") from e
    problem = _state_problem(state, tensors)
    if problem:
        raise CheckpointError(f"{state_file}: {problem}; cannot resume from it")
    torch.set_rng_state(tensors.pop("rng.torch"))
    per_param: dict[int, dict[str, Any]] = {}
    for key, value in [*tensors.items(), *state.pop("scalars").items()]:
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    try:
        optimizer.load_state_dict({"state": per_param, "param_groups": state.pop("param_groups")})
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{directory}: the optimizer state does not fit this model ({e})") from e
    return TrainState(**{f.name: state[f.name] for f in fields(TrainState) if f.name in state})


def _state_problem(state: Any, tensors: dict[str, torch.Tensor]) -> str | None:
    """What is wrong with trainer_state.json's fields (and the RNG state beside them), or None."""
    if not isinstance(state, dict):
        return f"expected a JSON object, got {type(state).__name__}"
    for name in ("step", "epoch", "batch"):
        value = state.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"{name} should be a whole number >= 0, not {str(value)[:30]!r}"
    for name in ("elapsed", "best_bleu"):
        value = state.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            return f"{name} should be a finite number, not {str(value)[:30]!r}"
    scalars, groups = state.get("scalars"), state.get("param_groups")
    if not isinstance(scalars, dict):
        return "scalars (the optimizer's per-parameter numbers) are missing"
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        return "param_groups (the optimizer's settings) are missing"
    for key in [*scalars, *(k for k in tensors if k != "rng.torch")]:
        index, _, name = str(key).partition(".")
        if not index.isdigit() or not name:
            return f"optimizer entry {str(key)[:30]!r} is not INDEX.NAME"
    if "rng.torch" not in tensors or tensors["rng.torch"].dtype != torch.uint8:
        return f"{OPTIMIZER_FILE} has no random-number state (rng.torch)"
    return None

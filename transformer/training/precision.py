"""Which arithmetic a training run uses, decided from the hardware and recorded with the reason.

`--precision auto` (the default) autocasts to bfloat16 where the hardware multiplies bf16 natively: a CUDA GPU
that supports it, or a CPU with AVX-512 BF16 or AMX (read from /proc/cpuinfo, never assumed); everywhere else
it stays fp32 and says why. Parameters, the loss and the optimizer state stay fp32 under autocast.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

CPUINFO = Path("/proc/cpuinfo")
# flag in /proc/cpuinfo -> how the reason names it
BF16_CPU_FLAGS = {"amx_bf16": "AMX BF16", "avx512_bf16": "AVX-512 BF16"}


@dataclass(frozen=True)
class Decision:
    """One choice about how a run trains: what was chosen and why, in words a Train page can show."""

    value: Any
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cpu_flags(cpuinfo: Path = CPUINFO) -> set[str] | None:
    """The first processor's feature flags, or None where cpuinfo cannot be read (not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def cpu_bf16_support(cpuinfo: Path = CPUINFO) -> Decision:
    """Decision(True, why) when this CPU multiplies bf16 natively, else Decision(False, why not)."""
    flags = cpu_flags(cpuinfo)
    if flags is None:
        return Decision(False, f"cannot read {cpuinfo} to check for AVX-512 BF16 or AMX")
    found = [name for flag, name in BF16_CPU_FLAGS.items() if flag in flags]
    if not found:
        return Decision(False, "this CPU has neither AVX-512 BF16 nor AMX, so bf16 would be emulated and slower")
    if not torch.backends.mkldnn.is_available():
        return Decision(False, f"this CPU has {found[0]} but this torch build has no oneDNN to use it")
    return Decision(True, f"this CPU has {' and '.join(found)}")


def resolve_precision(requested: str, device: torch.device, cpuinfo: Path = CPUINFO) -> Decision:
    """The precision a run uses ("fp32", "bf16" or "fp16") for `requested` ("auto" or one of those)."""
    if requested != "auto":
        return Decision(requested, f"asked for (--precision {requested})")
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return Decision("bf16", f"this GPU ({torch.cuda.get_device_name(device)}) supports bf16")
        return Decision("fp32", "this GPU does not support bf16")
    if device.type == "cpu":
        support = cpu_bf16_support(cpuinfo)
        return Decision("bf16" if support.value else "fp32", support.reason)
    return Decision("fp32", f"auto keeps fp32 on {device.type}")


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward pass's context: autocast to bf16 or fp16, or nothing for fp32."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)

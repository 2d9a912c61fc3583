"""Which torch device a command asks for, checked before anything is put on it: one line of error, not a traceback.

`inference_device("cuda")` on a machine without a GPU, `"meta"` (a device that holds no data) or `"xyz"` raise
ValueError saying what is available; the CLI prints it as one line.
"""

from __future__ import annotations

import torch

KINDS = ("cpu", "cuda", "mps")


def available() -> list[str]:
    """The device kinds this machine can compute on."""
    kinds = ["cpu"]
    if torch.cuda.is_available():
        kinds.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        kinds.append("mps")
    return kinds


def inference_device(name: str | torch.device) -> torch.device:
    """name as a torch.device that can hold a model here, or ValueError: cpu, cuda, cuda:N (N below the GPU count)
    or mps, each only when this machine has it."""
    text = str(name)
    try:
        device = torch.device(text)
    except (RuntimeError, TypeError):
        raise ValueError(f"unknown device {text[:40]!r}: expected one of {', '.join(KINDS)} (or cuda:N)") from None
    if device.type not in KINDS:
        raise ValueError(f"device {text[:40]!r} cannot run a model here: expected one of {', '.join(KINDS)}")
    if device.type not in available():
        raise ValueError(f"device {device.type!r} was asked for, but this machine has none (available: "
                         f"{', '.join(available())})")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"device {text!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s)")
    return device

"""The distributed side of a training run under torchrun: forming the process group without ever hanging, the
barrier, and the check that the replicas stayed in sync. No-ops for a single process.

Every rank checks in at the launcher's store before the process group forms: a rank that does not come within
start_timeout is an error that names it, not a hang.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)
START_TIMEOUT = 300.0  # seconds the ranks of a distributed run wait for each other at start
COLLECTIVE_TIMEOUT = 1800.0  # seconds a rank waits in a barrier, e.g. while rank 0 evaluates


class DistributedStartError(RuntimeError):
    """The ranks could not form their process group; the message names the rank and the store."""


def start(rank: int, world_size: int, start_timeout: float, collective_timeout: float) -> None:
    """Form the process group once every rank has checked in, or name the ranks that did not come; nothing for
    one process or a group already formed."""
    if world_size == 1 or dist.is_initialized():
        return
    addr, port = os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500"))
    where = f"the rendezvous store at {addr}:{port}"
    # torchrun's agent hosts the store; a bare launch (WORLD_SIZE, RANK, MASTER_*) has rank 0 host it
    hosted_by_agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    try:
        store = dist.TCPStore(addr, port, world_size, is_master=rank == 0 and not hosted_by_agent,
                              timeout=timedelta(seconds=start_timeout), wait_for_workers=False)
    except (RuntimeError, dist.DistError) as e:
        raise DistributedStartError(f"distributed start: rank {rank} could not reach {where} within "
                                    f"{start_timeout:g} s ({e})") from e
    store = dist.PrefixStore(f"attention-explorer/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)
    store.set(f"arrived/{rank}", str(os.getpid()))
    deadline = time.monotonic() + start_timeout
    while missing := [r for r in range(world_size) if not store.check([f"arrived/{r}"])]:
        if time.monotonic() > deadline:
            raise DistributedStartError(
                f"distributed start timed out after {start_timeout:g} s: rank {', '.join(map(str, missing))} "
                f"of {world_size} did not join at {where} (reported by rank {rank}); "
                "see that rank's log for why it is late or gone")
        time.sleep(0.05)
    log.info("rank %d: all %d ranks joined", rank, world_size)
    # gloo for CPU tensors, NCCL for GPU ones where this build of torch has it
    dist.init_process_group("cpu:gloo,cuda:nccl" if dist.is_nccl_available() else "gloo", store=store,
                            rank=rank, world_size=world_size, timeout=timedelta(seconds=collective_timeout))
    dist.barrier()


def barrier(world_size: int) -> None:
    if world_size > 1:
        dist.barrier()


def stop(world_size: int) -> None:
    if world_size > 1 and dist.is_initialized():
        dist.destroy_process_group()


def param_checksums(model: torch.nn.Module, world_size: int) -> list[float] | None:
    """Under DDP, every rank's sum of parameters: equal when the replicas stayed in sync."""
    if world_size == 1:
        return None
    local = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
    gathered = [torch.zeros_like(local) for _ in range(world_size)]
    dist.all_gather(gathered, local)
    return [t.item() for t in gathered]

"""How many threads a training run uses and how its waiting threads wait, for the cores it really has.

torch's CPU threads are an OpenMP team. Between two parallel operations a thread that has finished its share
waits for the others; by default (libgomp) it spins for a while before it sleeps. Alone on the machine that
is the fastest wait. Beside other work it is the slowest: when the other program preempts one thread of the
team, its partner spins on the core the other program needs (BENCHMARKS.md, training beside other work).
`OMP_WAIT_POLICY=PASSIVE` makes waiting threads sleep at once. OpenMP reads the variable once, when torch
loads, so the command line sets it before torch starts: `wants_restart` says when the process must start
again with it (`cli.main` does this before anything else).

Nothing here imports torch: the plan is made before the training threads exist.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from transformer.arguments import usable_cores  # noqa: F401 (the training command's and the benches' name for it)

WAIT_POLICY = "OMP_WAIT_POLICY"
PLAN_REASON = "TRANSFORMER_CORE_PLAN"  # the plan's reason, carried across the restart that applies its wait policy
BUSY_SAMPLE_S = 0.25  # how long the other work on our cores is watched before the run starts
BUSY_THRESHOLD = 0.25  # cores of other work from which waiting threads should sleep instead of spinning


@dataclass(frozen=True)
class CorePlan:
    """The run's threads and wait policy, and why; `policy` None keeps OpenMP's default (spin, then sleep)."""

    threads: int
    policy: str | None
    reason: str

    def describe(self) -> str:
        wait = f"{WAIT_POLICY}={self.policy}" if self.policy else "OpenMP's default wait (spin, then sleep)"
        return f"cores: {self.threads} thread{'s' * (self.threads != 1)}, {wait} ({self.reason})"


def _cpu_times(cpus: set[int]) -> tuple[float, float] | None:
    """(busy, total) jiffies summed over `cpus`, from /proc/stat; None where there is no /proc/stat."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    busy = total = 0.0
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
            continue
        values = [float(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
        total += sum(values)
        busy += sum(values) - values[3] - values[4]
    return busy, total


def busy_cores(seconds: float = BUSY_SAMPLE_S) -> float | None:
    """How many of our cores other programs keep busy, averaged over `seconds` (this process sleeps meanwhile,
    so the count is theirs); None where the system does not say (no /proc/stat)."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    before = _cpu_times(cpus)
    time.sleep(seconds)
    after = _cpu_times(cpus)
    if before is None or after is None or after[1] <= before[1]:
        return None
    return len(cpus) * (after[0] - before[0]) / (after[1] - before[1])


def plan_cores(threads: int | None, cores: int, busy: float | None, shared: bool,
               policy_set: str | None = None) -> CorePlan:
    """The plan for a run asked for `threads` (None: choose) on `cores` usable cores, `busy` of them taken by
    other work, `shared` when the run was started to yield to programs beside it (--nice, the Train page).

    Threads: one per core that other work leaves free; when other work takes every core, one per core again,
    since each program gets its share of the cores anyway (BENCHMARKS.md, training beside other work). The
    wait policy is PASSIVE when the run shares its cores, or when other work takes at least BUSY_THRESHOLD of a
    core at the start; a policy already in the environment (`policy_set`) is kept, as the user's choice."""
    taken = 0 if busy is None else round(busy)
    free = cores - taken
    if threads:
        n, why_threads = threads, f"asked for (--threads {threads})"
    elif 0 < free < cores:
        n, why_threads = free, f"one per core that other work leaves free ({free} of {cores})"
    else:
        n, why_threads = cores, f"one per usable core ({cores})"
    if policy_set:
        return CorePlan(n, policy_set.upper(), f"{why_threads}; {WAIT_POLICY} set in the environment")
    if n == 1:
        return CorePlan(n, None, f"{why_threads}; one thread never waits for another")
    if shared:
        return CorePlan(n, "PASSIVE", f"{why_threads}; the run yields to programs beside it (--nice), "
                        "so waiting threads sleep instead of spinning on the cores those programs need")
    if busy is not None and busy >= BUSY_THRESHOLD:
        return CorePlan(n, "PASSIVE", f"{why_threads}; other programs keep {busy:.1f} of {cores} cores busy, "
                        "so waiting threads sleep instead of spinning on the cores those programs need")
    seen = "the system does not say how busy its cores are" if busy is None else \
        f"other programs keep {busy:.1f} of {cores} cores busy"
    return CorePlan(n, None, f"{why_threads}; {seen}: waiting threads spin, the fastest wait alone")


def wants_restart(plan: CorePlan, environ: dict[str, str] | os._Environ = os.environ) -> bool:
    """Whether the process must start again for the plan's wait policy to apply (OpenMP has read the
    environment already); never under torchrun, whose ranks inherit the launcher's environment."""
    return plan.policy is not None and environ.get(WAIT_POLICY) is None and "LOCAL_RANK" not in environ


def applied(threads: int, environ: dict[str, str] | os._Environ = os.environ) -> tuple[str, str]:
    """What this process runs with, read back from its own environment (value, reason), for status.json."""
    policy = environ.get(WAIT_POLICY)
    value = f"{threads}, {WAIT_POLICY}={policy}" if policy else f"{threads}, OpenMP's default wait"
    reason = environ.get(PLAN_REASON) or ("set in the environment" if policy else "torch's setting in this process")
    return value, reason

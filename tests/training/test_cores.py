"""The training run's core plan: threads and OpenMP wait policy from affinity, other load and --nice."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.training.test_training import ROOT, corpus_file, read_status, tiny_cli_args  # noqa: F401, F811  (a fixture)
from transformer.training.cores import (
    PLAN_REASON,
    WAIT_POLICY,
    CorePlan,
    applied,
    busy_cores,
    plan_cores,
    usable_cores,
    wants_restart,
)


def test_alone_the_threads_spin_and_beside_other_work_or_when_sharing_they_sleep():
    alone = plan_cores(None, cores=2, busy=0.05, shared=False)
    assert (alone.threads, alone.policy) == (2, None) and "0.1 of 2 cores busy" in alone.reason
    full = plan_cores(None, cores=2, busy=1.8, shared=False)  # every core taken: a full team that sleeps
    assert (full.threads, full.policy) == (2, "PASSIVE") and "1.8 of 2 cores busy" in full.reason
    shared = plan_cores(None, cores=4, busy=0.0, shared=True)
    assert (shared.threads, shared.policy) == (4, "PASSIVE") and "--nice" in shared.reason
    assert plan_cores(3, cores=8, busy=0.0, shared=False).threads == 3
    assert "asked for (--threads 3)" in plan_cores(3, cores=8, busy=5.0, shared=False).reason


def test_other_work_on_some_cores_leaves_them_to_it():
    half = plan_cores(None, cores=2, busy=1.0, shared=False)
    assert (half.threads, half.policy) == (1, None) and "leaves free (1 of 2)" in half.reason
    some = plan_cores(None, cores=8, busy=2.6, shared=False)
    assert (some.threads, some.policy) == (5, "PASSIVE")
    assert plan_cores(None, cores=2, busy=0.4, shared=False).threads == 2  # under half a core: every core


def test_one_thread_needs_no_policy_and_the_users_policy_is_kept():
    one = plan_cores(1, cores=2, busy=2.0, shared=True)
    assert one.policy is None and "never waits" in one.reason and not wants_restart(one, {})
    kept = plan_cores(None, cores=2, busy=2.0, shared=True, policy_set="active")
    assert kept.policy == "ACTIVE" and "set in the environment" in kept.reason
    unknown = plan_cores(None, cores=2, busy=None, shared=False)
    assert unknown.policy is None and "does not say" in unknown.reason


def test_a_restart_is_wanted_only_when_the_policy_is_not_in_force_yet():
    plan = CorePlan(2, "PASSIVE", "why")
    assert wants_restart(plan, {})
    assert not wants_restart(plan, {WAIT_POLICY: "PASSIVE"})
    assert not wants_restart(plan, {"LOCAL_RANK": "0"})  # torchrun's ranks keep the launcher's environment
    assert not wants_restart(CorePlan(2, None, "alone"), {})
    assert "OMP_WAIT_POLICY=PASSIVE" in plan.describe() and "2 threads" in plan.describe()
    assert applied(2, {WAIT_POLICY: "PASSIVE", PLAN_REASON: "why"}) == ("2, OMP_WAIT_POLICY=PASSIVE", "why")
    assert applied(1, {})[0] == "1, OpenMP's default wait"


@pytest.mark.skipif(not os.path.exists("/proc/stat") or not hasattr(os, "sched_getaffinity"),
                    reason="reads /proc/stat and the CPU affinity (Linux)")
def test_busy_cores_sees_a_program_spinning_on_our_cores():
    assert 1 <= usable_cores() <= (os.cpu_count() or 1)
    spin = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"
    spinner = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.3)  # the interpreter starts, then spins
        busy = busy_cores(0.5)
    finally:
        spinner.kill()
        spinner.wait(timeout=10)
    assert busy is not None and 0.7 <= busy <= usable_cores() + 0.05, busy


@pytest.mark.timeout(180)
def test_a_run_that_yields_restarts_with_passive_waits_and_says_why(tmp_path, corpus_file):  # noqa: F811
    """--nice with two threads: the CLI starts itself again with OMP_WAIT_POLICY=PASSIVE (OpenMP reads it when
    torch loads); the restarted process reads the policy back from its own environment into status.json."""
    env = {k: v for k, v in os.environ.items() if k not in (WAIT_POLICY, PLAN_REASON)}
    args = tiny_cli_args(corpus_file)
    args[args.index("--threads") + 1] = "2"
    done = subprocess.run([sys.executable, "-m", "transformer.training", "--out", str(tmp_path / "run"), *args,
                           "--max-steps", "2", "--eval-every", "2", "--nice", "1"],
                          cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cores: 2 threads, OMP_WAIT_POLICY=PASSIVE (asked for (--threads 2); the run yields" in done.stderr
    setup = read_status(tmp_path / "run" / "status.json")["setup"]["threads"]
    assert setup["value"] == "2, OMP_WAIT_POLICY=PASSIVE" and "--nice" in setup["reason"], setup

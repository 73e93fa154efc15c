"""Watching a run costs Slurm nothing of its own: 20 watchers, the Slurm calls of the refresh cycle.

Pending (held) runs are watched the way `gw wait`, `gw show` and `gw logs -f`
do it (show the run, with why it waits; read its log), by 20 threads at once,
far more often than those commands poll. Every Slurm command is counted by
the real runner.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter

import pytest

from gateway.adapters.slurm import SlurmCLI
from gateway.core.spec.run_spec import build_spec
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.conftest import PROJECT, CountingRunner, unique_tag

pytestmark = pytest.mark.slurm
TTL_S = 2.0
WATCH_S = 6.0
WATCHERS = 20


def held_spec(tag: str):
    return build_spec(
        {
            "name": "watched",
            "project": PROJECT,
            "queue": "cpu",
            "command": "true",
            "workdir": "/tmp",
            "hold": True,
            "tags": [tag],
            "resources": {"mem_gb": 0.1, "walltime_min": 2},
        }
    )


def commands(calls: list[tuple[str, ...]]) -> Counter:
    """Slurm calls by kind: the refresh's own (squeue of its jobs, sacct) apart from cluster reads."""
    kinds = Counter()
    for argv in calls:
        if argv[0] == "squeue" and any(a.startswith("--jobs=") for a in argv):
            kinds["refresh squeue"] += 1
        elif argv[0] == "sacct" and "--accounts" not in " ".join(argv):
            kinds["refresh sacct"] += 1
        else:
            kinds[argv[0]] += 1
    return kinds


def watch(services, principal, run_ids: list[str], watchers: int) -> Counter:
    """Refresh once a second for WATCH_S while ``watchers`` threads read the runs; Slurm calls made."""
    runner = services.slurm.backend.runner
    runner.calls.clear()
    stop = time.monotonic() + WATCH_S
    reads = Counter()

    def watcher(i: int) -> None:
        while time.monotonic() < stop:
            run_id = run_ids[i % len(run_ids)]
            view = services.runs.show(run_id, principal=principal)
            assert view.waiting is not None and view.waiting.code == "JobHeldUser", view.waiting
            services.logs.read(run_id, principal=principal)
            reads[i] += 1
            time.sleep(0.05)

    threads = [threading.Thread(target=watcher, args=(i,)) for i in range(watchers)]
    for thread in threads:
        thread.start()
    while time.monotonic() < stop:
        services.refresher.refresh()
        time.sleep(1.0)
    for thread in threads:
        thread.join(timeout=30)
    # they really watched, each several times (a loaded machine slows a read to a second or more)
    assert all(reads[i] >= 3 for i in range(watchers)), reads
    return commands(runner.calls)


def test_twenty_watchers_add_no_slurm_load_of_their_own(settings, services, principal):
    watched = build_services(
        Settings(**{**settings.model_dump(), "cluster_facts_ttl_s": TTL_S}),
        slurm=SlurmCLI(CountingRunner()),
        upgrade=False,
    )
    tag = unique_tag()
    runs = [watched.runs.submit(held_spec(tag), principal=principal) for _ in range(3)]
    try:
        watched.refresher.refresh()  # the refresh stores each run's state and Slurm's reason
        alone = watch(watched, principal, [r.id for r in runs], watchers=0)
        crowd = watch(watched, principal, [r.id for r in runs], watchers=WATCHERS)
    finally:
        for run in runs:
            services.runs.cancel(run.id, principal=principal)
        watched.close()
    refresh_calls = {"refresh squeue", "refresh sacct"}
    # The refresh cycle costs the same with or without watchers ...
    assert sum(crowd[k] for k in refresh_calls) <= sum(alone[k] for k in refresh_calls) + 2, (alone, crowd)
    # ... and the watchers' own reads are cluster facts, each fetched at most once per cache window
    # (the live job list, partitions, nodes, the project's usage), whatever their number.
    windows = math.ceil(WATCH_S / TTL_S) + 1
    extra = {k: v for k, v in crowd.items() if k not in refresh_calls}
    assert sum(extra.values()) <= 4 * windows, crowd
    assert set(extra) <= {"squeue", "sacct", "scontrol"}, crowd


def test_runs_submitted_one_by_one_read_the_node_sizes_once_per_cache_window(settings, services, principal):
    """Admission checks each run against its partition's node sizes; a sent submission drops the
    cached nodes (their allocation changed), but not the sizes: one sbatch per run and nothing more."""
    counted = build_services(
        Settings(**{**settings.model_dump(), "cluster_facts_ttl_s": 600.0}),
        slurm=SlurmCLI(CountingRunner()),
        upgrade=False,
    )
    runner = counted.slurm.backend.runner
    tag = unique_tag()
    runs = [counted.runs.submit(held_spec(tag), principal=principal)]  # reads partitions and node sizes
    try:
        runner.calls.clear()
        runs += [counted.runs.submit(held_spec(tag), principal=principal) for _ in range(4)]
        assert all(r.latest.job_id for r in runs)
        assert Counter(argv[0] for argv in runner.calls) == {"sbatch": 4}, runner.calls
        assert counted.slurm.nodes() is not None  # the nodes themselves are read again after a send
        assert any(argv[:3] == ("scontrol", "show", "node") for argv in runner.calls), runner.calls
    finally:
        for run in runs:
            services.runs.cancel(run.id, principal=principal)
        counted.close()

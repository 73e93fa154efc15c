"""The refresh cycle and the pending-reason explainer per cluster (docs/clusters.md), on the two real local
clusters and the dead gwdead of ``tests/service/clusters_setup.py`` (a database of this module's own).

Every Slurm query is counted where the metered runner records it, by the cluster it aimed at: a refresh
cycle asks each cluster a fixed number of times whatever the number of runs, and explaining why a run
on gwlocal2 waits asks gwlocal2 alone.
"""

from __future__ import annotations

from collections import Counter

import pytest

from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from tests.service.clusters_setup import C2_CONF, refresh_until, spec

pytestmark = pytest.mark.slurm
PER_CYCLE = 3  # squeue of its jobs, sacct of those that left it, squeue of the held jobs' comments


def calls_of(services, action, monkeypatch) -> Counter:
    """The Slurm queries (squeue, sacct, sinfo, scontrol; not the sbatch and scancel that earlier
    submissions and cancels may still be ending) that ``action()`` made, by the cluster each aimed at
    (``-M gwlocal``; gwlocal2's slurm.conf; anything else, gwdead's copy included: ``other``), as the
    metered runner every Slurm command passes records them."""
    made: Counter = Counter()
    metrics = services.metrics.metrics
    record = metrics.slurm_command

    def counted(argv, duration_s, error=None, env=None):
        if argv[0] in ("squeue", "sacct", "sinfo", "scontrol"):
            conf = (env or {}).get("SLURM_CONF")
            aimed = (
                "gwlocal" if "--clusters=gwlocal" in argv else "gwlocal2" if conf == str(C2_CONF) else "other"
            )
            made[aimed] += 1
        record(argv, duration_s, error, env)

    monkeypatch.setattr(metrics, "slurm_command", counted)
    try:
        action()
    finally:
        monkeypatch.setattr(metrics, "slurm_command", record)
    return made


def held(services, principal, queue: str, count: int) -> list[str]:
    """``count`` held runs on ``queue``: their jobs wait in their cluster's queue (JobHeldUser)."""
    runs = [
        services.runs.submit(build_spec({**spec(queue, "true"), "hold": True}), principal=principal)
        for _ in range(count)
    ]
    return [run.id for run in runs]


def test_a_refresh_cycle_asks_each_cluster_a_fixed_number_of_times(multi, principal_mc, monkeypatch):
    """Cycles with 2, then 8 held runs on each of gwlocal and gwlocal2: one squeue a cluster a cycle
    either way, gwdead (no runs) never asked; cycles after a run on each was cancelled (sacct for the
    jobs that left the queue, the comments' squeue once they ended): at most PER_CYCLE a cluster."""
    first = held(multi, principal_mc, "one", 2) + held(multi, principal_mc, "two", 2)
    small = [calls_of(multi, multi.refresher.refresh, monkeypatch) for _ in range(2)]
    more = held(multi, principal_mc, "one", 6) + held(multi, principal_mc, "two", 6)
    large = [calls_of(multi, multi.refresher.refresh, monkeypatch) for _ in range(2)]
    try:
        waiting = Counter({"gwlocal": 1, "gwlocal2": 1})
        assert small == [waiting, waiting] and large == small, (small, large)  # 8 runs cost what 2 did
        for run_id in first[:1] + first[2:3]:
            multi.runs.cancel(run_id, principal=principal_mc)
        ended = [calls_of(multi, multi.refresher.refresh, monkeypatch) for _ in range(3)]
        for made in ended:
            assert set(made) == {"gwlocal", "gwlocal2"}, ended
            assert all(count <= PER_CYCLE for count in made.values()), ended
    finally:
        for run_id in first + more:
            multi.runs.cancel(run_id, principal=principal_mc)


def test_why_a_run_on_gwlocal2_waits_is_asked_of_gwlocal2_alone(multi, principal_mc, monkeypatch):
    """A held run on gwlocal2, its cluster facts dropped from the cache: explaining its wait reads
    gwlocal2's job list, partitions, nodes and the project's usage there, and asks gwlocal nothing."""
    (run_id,) = held(multi, principal_mc, "two", 1)
    try:
        multi.refresher.refresh()
        for name in ("gwlocal", "gwlocal2"):
            multi.clusters.get(name).forget()
        shown = {}
        made = calls_of(
            multi, lambda: shown.update(view=multi.runs.show(run_id, principal=principal_mc)), monkeypatch
        )
        view = shown["view"]
        assert view.run.latest.state in (RunState.HELD, RunState.QUEUED), view.run.latest
        assert view.waiting is not None and view.waiting.code == "JobHeldUser", view.waiting
        assert set(made) == {"gwlocal2"} and made["gwlocal2"] >= 2, made
    finally:
        multi.runs.cancel(run_id, principal=principal_mc)


def test_gpu_telemetry_of_a_run_on_gwlocal2_is_recorded_as_gwlocal2s(multi, principal_mc):
    """A GPU run on gwlocal2's gpu partition, ended and harvested: its attempt's telemetry record (the
    sampler's, whatever NVML this host has) carries cluster gwlocal2 and that cluster's job id."""
    resources = {"gpus_per_node": 1, "gpu_type": "fake", "mem_gb": 0.1, "walltime_min": 2}
    run = multi.runs.submit(
        build_spec({**spec("gpu2", "sleep 1"), "resources": resources}), principal=principal_mc
    )
    ended = refresh_until(multi, [run.id])[run.id]
    assert ended.state is RunState.SUCCEEDED and ended.latest.cluster == "gwlocal2", ended.latest
    report = multi.harvester.harvest_due(limit=500)
    assert not [p for p in report.problems if run.id in p], report.problems
    (attempt,) = multi.telemetry.for_run(run.id, principal=principal_mc)["attempts"]
    assert attempt["cluster"] == "gwlocal2" and attempt["job_id"] == ended.latest.job_id, attempt

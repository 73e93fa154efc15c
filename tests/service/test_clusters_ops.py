"""Health and usage gauges per cluster (docs/clusters.md), on the two real local clusters and the dead
gwdead: ``/healthz`` and ``gw health`` say whether and when each cluster's controller answered, and a
``/metrics`` scrape has each project's use per cluster. The gateway and its site are
``tests/service/clusters_setup.py``'s (a database of this module's own)."""

from __future__ import annotations

from datetime import UTC

import pytest

from gateway.services import Services
from tests.service.clusters_setup import (
    C2_ENV,
    controller_silent,
    dead_copy,
    refresh_until_running,
    spec,
)

pytestmark = pytest.mark.slurm


def _scrape(services: Services) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = services.metrics.metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _use(project: str, cluster: str) -> tuple[tuple[str, str], ...]:
    return (("cluster", cluster), ("project", project))


def test_usage_gauges_per_cluster_in_a_scrape(multi, principal_mc):
    """A scrape has project mc's GPU use per cluster it has queues on: a GPU run on gwlocal2 counts there
    and not on gwlocal; gwdead, known down, has no usage series (no scrape waits on it); the set of
    series is the same before and after runs."""
    from gateway.core.spec.run_spec import build_spec

    multi.health.check()  # marks gwdead down
    before = _scrape(multi)
    assert ("gateway_project_gpus_used", _use("mc", "gwlocal")) in before
    assert ("gateway_project_gpu_hours_used", _use("mc", "gwlocal2")) in before
    assert not [k for k in before if k[0].startswith("gateway_project_") and ("cluster", "gwdead") in k[1]]
    gpu = {"gpus_per_node": 1, "gpu_type": "fake", "mem_gb": 0.1, "walltime_min": 2}
    run = multi.runs.submit(
        build_spec({**spec("gpu2", "sleep 60"), "resources": gpu}), principal=principal_mc
    )
    try:
        refresh_until_running(multi, run.id, timeout_s=90)
        multi.clusters.get("gwlocal2").forget()  # the cached squeue may predate the start
        during = _scrape(multi)
        assert during[("gateway_project_gpus_used", _use("mc", "gwlocal2"))] == 1
        assert during[("gateway_project_gpus_used", _use("mc", "gwlocal"))] == 0
        usage = multi.usage.usage(multi.access.project("mc"), slurm=multi.clusters.get("gwlocal2"))
        assert usage.gpus.used == 1
    finally:
        multi.runs.cancel(run.id, principal=principal_mc)
    multi.runs.submit(build_spec(spec("one", "true")), principal=principal_mc)
    after = _scrape(multi)
    project_series = {k for k in before if k[0].startswith(("gateway_project_", "gateway_cluster_"))}
    assert project_series == {k for k in after if k[0].startswith(("gateway_project_", "gateway_cluster_"))}


def test_health_says_per_cluster_whether_and_when_its_controller_answered(multi, api):
    """/healthz: each cluster's check with when it last answered this process; gwdead's since when it has
    not; gw health's lines say the same, the headline says degraded (the gateway serves)."""
    from datetime import datetime

    from gateway.cli.output import health_headline, health_lines

    started = datetime.now(UTC)
    body = api.get("/healthz").json()
    up, dead = body["clusters"]["gwlocal"], body["clusters"]["gwdead"]
    assert up["ok"] and datetime.fromisoformat(up["last_answered_at"]) >= started
    assert up["down_since"] is None
    assert not dead["ok"] and dead["down_since"] is not None
    assert dead["last_answered_at"] is None  # its controller never answered this process
    assert body["slurm"] == {**up, "latency_ms": body["slurm"]["latency_ms"]}  # the first cluster's
    since = datetime.fromisoformat(dead["down_since"])
    again = api.get("/healthz").json()["clusters"]["gwdead"]
    assert datetime.fromisoformat(again["down_since"]) == since  # down since the first time it failed
    headline = health_headline("http://gw", body)
    assert "degraded: cluster gwdead not answering" in headline and "each cluster" in headline
    lines = health_lines(body)
    (dead_line,) = [line for line in lines if line.startswith("  cluster gwdead: FAILED")]
    assert f"not answering since {since:%Y-%m-%d %H:%M:%S} UTC" in dead_line
    assert "has not answered this gateway process yet" in dead_line
    assert any(line.startswith("  cluster gwlocal: ok in ") for line in lines)


def test_the_controller_check_waits_a_bounded_time_and_says_what_it_saw(multi, tmp_path):
    """The check ``require_c2`` fails the tests by: gwlocal2 answers at once; a copy of its configuration
    whose controller port nothing listens on is given up on within the bound, with sinfo's own words."""
    import time

    assert controller_silent(C2_ENV, 15.0) is None
    dead = {**C2_ENV, "SLURM_CONF": str(dead_copy(tmp_path))}
    started = time.monotonic()
    said = controller_silent(dead, 3.0)
    assert said is not None and said.startswith("sinfo "), said
    assert time.monotonic() - started < 3.0 + 5.0 + 1.0  # the bound, plus at most one poll's timeout

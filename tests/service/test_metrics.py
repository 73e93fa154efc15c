"""GET /metrics through the real services: counts, Slurm latency, runs by state, GPU use vs caps, access."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from gateway.adapters.prometheus import GatewayMetrics, command_cluster
from gateway.adapters.runner import LocalRunner
from gateway.adapters.runner_metered import MeteredRunner
from gateway.adapters.slurm.clusters import configured_cluster_name
from gateway.api import create_app
from gateway.core.access.values import Principal
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.errors import CommandError, Forbidden, SpecError, Unauthorized
from gateway.services.ops.prometheus import MetricsService
from gateway.settings import Settings
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag

TOKEN = "scrape-me-0123456789abcdef"
LOCAL = configured_cluster_name(None) or "default"  # the cluster a command naming none aims at


def spec(**overrides):
    body = {
        "name": "metrics",
        "project": PROJECT,
        "queue": "cpu",
        "command": "true",
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1},
    }
    return build_spec({**body, **overrides})


def value(services, name: str, labels: dict | None = None) -> float:
    return services.metrics.metrics.registry.get_sample_value(name, labels or {}) or 0.0


def scrape(services) -> dict[tuple[str, tuple], float]:
    """Every sample of the exposition, parsed by prometheus_client's own parser: (name, labels) -> value."""
    text = services.metrics.metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_submissions_and_refusals_are_counted_by_the_run_service(services, principal):
    submitted = value(services, "gateway_submissions_total", {"project": PROJECT, "queue": "cpu"})
    refused_spec = value(services, "gateway_submission_refusals_total", {"reason": "SpecError"})
    refused_quota = value(services, "gateway_submission_refusals_total", {"reason": "QuotaExceeded"})
    sbatch = value(
        services, "gateway_slurm_command_duration_seconds_count", {"command": "sbatch", "cluster": LOCAL}
    )

    run = services.runs.submit(spec(), principal=principal)
    with pytest.raises(SpecError):
        services.runs.submit(spec(queue="no-such-queue"), principal=principal)
    with pytest.raises(Exception, match="GPUs at once"):
        services.runs.submit(
            spec(project="capped", queue="gpu", resources={"gpus_per_node": 4, "gpu_type": "fake"}),
            principal=principal,
        )

    assert value(services, "gateway_submissions_total", {"project": PROJECT, "queue": "cpu"}) == submitted + 1
    assert value(services, "gateway_submission_refusals_total", {"reason": "SpecError"}) == refused_spec + 1
    quota = value(services, "gateway_submission_refusals_total", {"reason": "QuotaExceeded"})
    assert quota == refused_quota + 1
    # One real sbatch, timed: the refused ones never reached Slurm.
    sbatched = value(
        services, "gateway_slurm_command_duration_seconds_count", {"command": "sbatch", "cluster": LOCAL}
    )
    assert sbatched == sbatch + 1
    assert (
        value(services, "gateway_slurm_command_duration_seconds_sum", {"command": "sbatch", "cluster": LOCAL})
        > 0
    )
    refresh_until(services, run.id)


def test_slurm_latency_histogram_observes_the_refresh_commands(services, principal):
    squeue = value(
        services, "gateway_slurm_command_duration_seconds_count", {"command": "squeue", "cluster": LOCAL}
    )
    cycles = value(services, "gateway_refresh_cycles_total", {"outcome": "ok"})
    services.runs.submit(spec(command="sleep 2"), principal=principal)
    services.background.cycle()
    assert (
        value(
            services, "gateway_slurm_command_duration_seconds_count", {"command": "squeue", "cluster": LOCAL}
        )
        > squeue
    )
    assert value(services, "gateway_refresh_cycles_total", {"outcome": "ok"}) == cycles + 1
    assert value(services, "gateway_refresh_cycle_duration_seconds_count") >= 1
    samples = scrape(services)
    inf = samples[
        (
            "gateway_slurm_command_duration_seconds_bucket",
            (("cluster", LOCAL), ("command", "squeue"), ("le", "+Inf")),
        )
    ]
    assert (
        inf
        == samples[
            ("gateway_slurm_command_duration_seconds_count", (("cluster", LOCAL), ("command", "squeue")))
        ]
    )


def test_slurm_command_failures_are_counted_by_kind():
    metrics = GatewayMetrics()
    runner = MeteredRunner(LocalRunner(), metrics)
    result = runner.run(["sacct", "--no-such-option"], timeout_s=10)
    assert result.returncode != 0
    with pytest.raises(CommandError):
        runner.run(["/nonexistent/bin/sbatch"], timeout_s=10)
    runner.run(["true"], timeout_s=10)
    runner.run(["squeue", "--clusters=gwlocal2", "-h"], timeout_s=10)  # answered or not: gwlocal2's
    get = metrics.registry.get_sample_value
    assert (
        get("gateway_slurm_command_duration_seconds_count", {"command": "squeue", "cluster": "gwlocal2"}) == 1
    )
    assert (
        get("gateway_slurm_command_errors_total", {"command": "sacct", "kind": "exit", "cluster": LOCAL}) == 1
    )
    assert (
        get(
            "gateway_slurm_command_errors_total",
            {"command": "sbatch", "kind": "unstartable", "cluster": LOCAL},
        )
        == 1
    )
    assert get("gateway_slurm_command_duration_seconds_count", {"command": "other", "cluster": ""}) == 1
    assert (
        get("gateway_slurm_command_errors_total", {"command": "other", "kind": "exit", "cluster": ""}) is None
    )


def test_runs_by_state_equal_the_store(services, principal):
    services.runs.submit(spec(), principal=principal)
    expected: Counter = Counter()
    where = RunFilter(limit=200)
    while True:
        page = services.runs.store.list_runs(where)
        expected.update((r.project, r.state.value) for r in page.items)
        if page.next_cursor is None:
            break
        where = RunFilter(limit=200, cursor=page.next_cursor)
    samples = scrape(services)
    got = {
        (dict(labels)["project"], dict(labels)["state"]): v
        for (name, labels), v in samples.items()
        if name == "gateway_runs"
    }
    assert {k: v for k, v in got.items() if v} == dict(expected)
    projects = {p.name for p in services.access.projects()}
    assert {(p, s.value) for p in projects for s in RunState} <= set(got)  # zeros too


def test_gpu_use_against_caps_per_project(services, principal):
    run = services.runs.submit(
        spec(
            project="capped",
            queue="gpu",
            command="sleep 60",
            resources={"gpus_per_node": 1, "gpu_type": "fake", "mem_gb": 0.1, "walltime_min": 2},
        ),
        principal=principal,
    )
    try:
        refresh_until(services, run.id, states={RunState.RUNNING})
        services.slurm.forget()  # the cached squeue may predate the start
        samples = scrape(services)
        # the one cluster of the shared test site (no clusters listed): its name labels the use
        here = (("cluster", services.clusters.first()),)
        usage = services.usage.usage(services.access.project("capped"))
        assert samples[("gateway_project_gpus_used", (*here, ("project", "capped")))] == usage.gpus.used == 1
        assert samples[("gateway_project_gpus_cap", (*here, ("project", "capped")))] == 2
        # GPU-hours grow while the job runs: the scrape and the usage read a few seconds apart may
        # differ by the hours accrued between them (one GPU, rounded to 0.001), never by more
        accrued = samples[("gateway_project_gpu_hours_used", (*here, ("project", "capped")))]
        assert accrued == pytest.approx(usage.gpu_hours.used, abs=0.002)
        # Project test has no caps: its usage is there, no cap series.
        assert ("gateway_project_gpus_used", (*here, ("project", PROJECT))) in samples
        assert ("gateway_project_gpus_cap", (*here, ("project", PROJECT))) not in samples
    finally:
        services.runs.cancel(run.id, principal=principal)


def test_series_do_not_grow_with_runs(services, principal):
    services.runs.submit(spec(), principal=principal)
    with pytest.raises(SpecError):
        services.runs.submit(spec(queue="no-such-queue"), principal=principal)
    before = set(scrape(services))
    runs = [services.runs.submit(spec(), principal=principal) for _ in range(8)]
    for _ in range(8):
        with pytest.raises(SpecError):
            services.runs.submit(spec(queue="no-such-queue"), principal=principal)
    after = set(scrape(services))
    assert after == before, f"new series: {after - before}"
    names = {name for name, _ in after}
    assert not any(run.id in str(key) for key in after for run in runs)
    assert "gateway_submissions_total" in names and "gateway_runs" in names


def test_only_allowed_scrapers_read_metrics(services, tokens):
    own = MetricsService(
        GatewayMetrics(),
        services.runs.store,
        services.access,
        services.usage,
        Settings(
            database_url=services.settings.database_url, metrics_token=TOKEN, metrics_allow="10.1.0.0/16"
        ),
    )
    # an address alone never opens it (issue 26 item 5): the token, from an allowed address
    assert own.allowed(source="10.1.2.3", token=TOKEN)
    assert own.allowed(source="::ffff:10.1.2.3", token=TOKEN)
    assert not own.allowed(source="10.1.2.3", token=None)
    assert not own.allowed(source="10.2.0.1", token=TOKEN)
    assert not own.allowed(source="10.1.2.3", token=tokens["admin"])
    anywhere = MetricsService(
        GatewayMetrics(),
        services.runs.store,
        services.access,
        services.usage,
        Settings(database_url=services.settings.database_url, metrics_token=TOKEN),
    )
    assert anywhere.allowed(source="testclient", token=TOKEN)
    assert not anywhere.allowed(source="127.0.0.1", token=None)
    with TestClient(create_app(services=dataclasses.replace(services, metrics=anywhere))) as app:
        refused = app.get("/metrics", headers={"Authorization": f"Bearer {tokens['admin']}"})
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
        assert "GATEWAY_METRICS_TOKEN" in refused.json()["detail"]
        response = app.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        names = {f.name for f in text_string_to_metric_families(response.text)}
        assert {"gateway_submissions", "gateway_runs", "gateway_slurm_command_duration_seconds"} <= names


def test_a_short_metrics_token_is_refused():
    with pytest.raises(ValueError, match="at least 16"):
        Settings(metrics_token="short")


def test_a_metrics_scope_token_reads_metrics_and_nothing_else(services, tokens):
    """issue 26 item 5: a scraper's own token (revocable, audited), refused everywhere but GET /metrics."""
    closed = MetricsService(
        GatewayMetrics(),
        services.runs.store,
        services.access,
        services.usage,
        Settings(database_url=services.settings.database_url),  # no GATEWAY_METRICS_TOKEN
    )
    user = services.access.users()[0].name
    scraper, token = services.auth.issue_token(OPERATOR, user, name="prometheus", scope="metrics")
    assert token.scope == "metrics"
    issued = services.audit.events(OPERATOR, action="token.issue", target=user, limit=1000).items
    audited = [e.after for e in issued if (e.after or {}).get("prefix") == token.prefix]
    assert audited and audited[0]["scope"] == "metrics"
    assert closed.allowed(source="testclient", token=scraper)
    assert not closed.allowed(source="testclient", token=tokens[user])  # a user token never opens it
    with TestClient(create_app(services=dataclasses.replace(services, metrics=closed))) as app:
        response = app.get("/metrics", headers={"Authorization": f"Bearer {scraper}"})
        assert response.status_code == 200, response.text
        assert "gateway_runs" in {f.name for f in text_string_to_metric_families(response.text)}
        elsewhere = app.get("/runs", headers={"Authorization": f"Bearer {scraper}"})
        assert elsewhere.status_code == 401 and "GET /metrics and nothing else" in elsewhere.json()["detail"]
        own = {"Authorization": f"Bearer {tokens[user]}"}
        listed = app.get("/tokens", params={"user": user}, headers=own)
        assert {t["id"]: t["scope"] for t in listed.json()}[token.id] == "metrics", listed.text
        refused = app.get("/metrics", headers={"Authorization": f"Bearer {tokens[user]}"})
        assert refused.status_code == 403 and "--scope metrics" in refused.json()["detail"]
    with pytest.raises(Unauthorized, match="metrics token"):
        services.auth.authenticate(scraper)
    services.auth.revoke(OPERATOR, token.id)
    assert not closed.allowed(source="testclient", token=scraper)


def test_only_an_admin_issues_a_metrics_token(services):
    member = next(u.name for u in services.access.users() if not u.is_admin and not u.disabled)
    caller = Principal(user=member, is_admin=False, roles={})
    with pytest.raises(Forbidden):  # it reads every project's series: not one member's to give
        services.auth.issue_token(caller, member, name="mine", scope="metrics")
    with pytest.raises(SpecError, match="valid: api, metrics"):
        services.auth.issue_token(OPERATOR, member, name="x", scope="root")


def test_a_slurm_commands_cluster_is_the_one_it_aims_at():
    def local() -> str:
        return "here"

    assert command_cluster(["squeue", "--clusters=gwlocal2", "-h"], None, local) == "gwlocal2"
    assert command_cluster(["sacct", "-M", "b,c"], None, local) == "b"
    assert (
        command_cluster(["sacctmgr", "-i", "add", "account", "x", "cluster=gwlocal2"], None, local)
        == "gwlocal2"
    )
    assert command_cluster(["sbatch", "--mem=1G"], {"SLURM_CONF": "/etc/slurm/slurm.conf"}, local) == LOCAL
    assert (
        command_cluster(["sbatch", "--mem=1G"], {"SLURM_CONF": "/nonexistent/slurm.conf"}, local) == "unknown"
    )
    assert command_cluster(["scancel", "12"], None, local) == "here"

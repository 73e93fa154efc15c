"""Reports over records ingested from real jobs (``tests/service/report_world.py``): gateway runs (one
failed, one with a GPU, two with fake-NVML telemetry), a rerun, eval runs, and a plain sbatch job in
another project's account; SQLite and PostgreSQL.

The totals are checked three ways: against a hand computation from ``sacct`` output, against the sum
of the priced records the accounting store lists, and across dimensions (the sum over users equals
the project total).
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.reports.rows import unreconciled
from gateway.core.runs.values import RunFilter
from gateway.errors import NotFound, SpecError
from gateway.store.accounting.accounting import RecordFilter
from tests.service.conftest import OPERATOR, PROJECT, unique_tag
from tests.service.report_world import get_world

pytestmark = pytest.mark.slurm


@pytest.fixture
def world(kept, backend, services, settings, principal, eval_world) -> dict:
    return get_world(kept, backend, services, settings, principal, eval_world)


def _sacct_hours(account: str, period: str) -> tuple[int, float, float]:
    """Records, CPU-hours and GPU-hours of ``account``'s allocations that started in ``period``,
    computed by hand from sacct's own output."""
    first, last = period.split("..")
    start = datetime.fromisoformat(first).replace(tzinfo=UTC)
    end = datetime.fromisoformat(last).replace(tzinfo=UTC) + timedelta(days=1)
    out = subprocess.run(
        [
            "sacct",
            "-X",
            "-n",
            "-P",
            "--duplicates",
            "--allusers",
            f"--accounts={account}",
            "-S",
            first,
            "-E",
            "now",
            "-o",
            "Start,ElapsedRaw,AllocTRES",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"SLURM_TIME_FORMAT": "%Y-%m-%dT%H:%M:%S", "TZ": "UTC"},
    ).stdout
    records, cpu_h, gpu_h = 0, 0.0, 0.0
    for line in out.splitlines():
        started, elapsed, tres = line.split("|")
        if started in ("", "None", "Unknown"):
            continue
        at = datetime.fromisoformat(started).replace(tzinfo=UTC)
        if not start <= at < end:
            continue
        parts = dict(p.split("=", 1) for p in tres.split(",") if "=" in p)
        records += 1
        cpu_h += int(parts.get("cpu", 0)) * int(elapsed) / 3600
        gpu_h += int(parts.get("gres/gpu", 0)) * int(elapsed) / 3600
    return records, cpu_h, gpu_h


def test_project_totals_equal_a_hand_computation_from_sacct(services, principal, world):
    report = services.reports.report(principal, "usage", by="user", period=world["period"], project=PROJECT)
    records, cpu_h, gpu_h = _sacct_hours(world["accounts"][0], world["period"])
    total = report.total.values
    assert total["records"] == records
    assert total["cpu_hours"] == pytest.approx(cpu_h, abs=1e-9)
    assert total["gpu_hours"] == pytest.approx(gpu_h, abs=1e-9) and gpu_h > 0
    assert total["wait_median_s"] is not None and total["wait_p90_s"] >= total["wait_median_s"]


def test_sum_over_users_equals_the_project_total_equals_the_priced_records(services, principal, world):
    period = world["period"]
    by_user = services.reports.report(principal, "cost", by="user", period=period, project=PROJECT)
    by_project = services.reports.report(principal, "cost", by="project", period=period, project=PROJECT)
    assert unreconciled(by_user) == [] and unreconciled(by_project) == []
    assert [r.key for r in by_project.rows] == [PROJECT]
    for key in ("records", "gpu_hours", "cpu_hours", "cost", "cost_failed"):
        assert sum(r.values[key] for r in by_user.rows) == pytest.approx(by_project.rows[0].values[key])
    first, last = period.split("..")
    ledger = services.accounting.store.records(
        RecordFilter(
            project=PROJECT,
            started_from=datetime.fromisoformat(first).replace(tzinfo=UTC),
            started_before=datetime.fromisoformat(last).replace(tzinfo=UTC) + timedelta(days=1),
        )
    )
    priced = [r for r in ledger if r.price is not None]
    assert priced and len(priced) == len(ledger), "a rate table was applied: every record is priced"
    assert by_project.total.values["cost"] == pytest.approx(sum(r.price.cost for r in priced))
    assert by_project.total.values["cost"] > 0
    failed = sum(r.price.cost for r in priced if r.record.failed)
    assert by_project.total.values["cost_failed"] == pytest.approx(failed) and failed > 0
    assert by_project.rate_versions == sorted({str(r.price.rate_version) for r in priced}, key=int)
    cancelled = sum(r.price.cost for r in priced if r.record.cancelled)
    assert by_project.total.values["cost_cancelled"] == pytest.approx(cancelled) and cancelled > 0
    table = services.reports.render(by_project, "table").text
    assert "spent on attempts that failed" in table and "spent on attempts that were cancelled" in table


def test_by_run_and_queue_name_the_gateway_runs(services, principal, world):
    period = world["period"]
    by_run = services.reports.report(principal, "cost", by="run", period=period, project=PROJECT)
    rows = {r.key: r for r in by_run.rows}
    assert {world["runs"]["ok"], world["runs"]["failed"], world["runs"]["gpu"]} <= set(rows)
    assert rows[world["runs"]["failed"]].values["failed_share"] == 1.0
    # a cancellation is its own outcome: counted apart from failures
    cancelled = rows[world["runs"]["cancelled"]].values
    assert cancelled["cost"] > 0 and cancelled["cancelled_share"] == 1.0 and cancelled["failed_share"] == 0.0
    assert rows[world["runs"]["gpu"]].values["gpu_hours"] > 0
    by_queue = services.reports.report(principal, "cost", by="queue", period=period, project=PROJECT)
    assert {f"{PROJECT}/cpu", f"{PROJECT}/gpu"} <= {r.key for r in by_queue.rows}
    assert unreconciled(by_run) == [] and unreconciled(by_queue) == []


def test_a_plain_sbatch_job_counts_for_the_project_of_its_account(services, world):
    report = services.reports.report(OPERATOR, "usage", by="run", period=world["period"], project="other")
    keys = {r.key for r in report.rows}
    assert "(not a gateway run)" in keys and report.total.values["records"] >= 1


def test_by_release_sums_the_training_run_its_reruns_and_its_eval_runs(
    services, principal, world, eval_world
):
    model = f"rep-{unique_tag()}"
    services.releases.register_model(PROJECT, model, principal=principal)
    release = services.releases.create_release(
        PROJECT,
        model,
        eval_world.artifacts["strong"],
        principal=principal,
        run_id=eval_world.training["strong"],
    )
    behind = {eval_world.training["strong"], world["runs"]["rerun"]}
    behind |= {
        e.run_id for e in eval_world.evals.values() if e.artifact_sha256 == eval_world.artifacts["strong"]
    }
    assert len(behind) >= 4  # the training run, its rerun, two eval runs (v1, v2)
    # and what other tests of this session added behind it (the eval world is shared): every eval run of
    # the artifact, and every rerun of a run behind it, recursively (what the report counts)
    behind |= {
        e.run_id for e in services.evals.store.eval_runs(None, artifact_sha256=eval_world.artifacts["strong"])
    }
    every, cursor = [], None
    for _ in range(100):
        page = services.runs.store.list_runs(RunFilter(cursor=cursor, limit=500))
        every += page.items
        if (cursor := page.next_cursor) is None:
            break
    made = {eval_world.training["strong"]}
    while more := {r.id for r in every if r.parent_run_id in made} - made:
        made |= more
    behind |= made
    behind.discard(None)  # an imported eval result (made elsewhere) has no gateway run, so no ledger
    report = services.reports.report(principal, "cost", by="release", period=world["period"], project=PROJECT)
    row = next(r for r in report.rows if r.key == f"{PROJECT}/{model}@{release.version}")
    ledger = [r for run_id in behind for r in services.accounting.store.records(RecordFilter(run_id=run_id))]
    assert row.values["records"] == len(ledger) >= 4
    assert row.values["cpu_hours"] == pytest.approx(sum(r.record.cpu_hours for r in ledger))
    assert row.values["cost"] == pytest.approx(sum(r.price.cost for r in ledger if r.price))


def test_members_see_their_projects_only(services, world, tokens):
    outsider = services.access.principal("outsider", source="pytest")
    mine = services.reports.report(outsider, "usage", by="project", period=world["period"])
    assert {r.key for r in mine.rows} <= {"other"}
    with pytest.raises(NotFound):
        services.reports.report(outsider, "usage", period=world["period"], project=PROJECT)
    everything = services.reports.report(OPERATOR, "usage", by="project", period=world["period"])
    assert {PROJECT, "other"} <= {r.key for r in everything.rows}


def test_efficiency_from_gpu_telemetry(services, principal, world):
    report = services.reports.report(
        principal, "efficiency", by="run", period=world["period"], project=PROJECT
    )
    rows = {r.key: r for r in report.rows}
    busy, idle = rows[world["telemetry"]["busy"]], rows[world["telemetry"]["idle"]]
    assert busy.values["gpu_util_pct"] == pytest.approx(40.0) and busy.values["idle_gpu_hours"] == 0.0
    assert idle.values["gpu_util_pct"] == pytest.approx(0.0)
    assert (
        idle.values["idle_gpu_hours"] == pytest.approx(idle.values["gpu_hours"])
        and idle.values["gpu_hours"] > 0
    )
    assert busy.values["telemetry_share"] == 1.0 and busy.note == ""
    assert report.telemetry
    total = report.total.values
    with_telemetry = busy.values["gpu_hours"] + idle.values["gpu_hours"]
    assert total["idle_gpu_hours"] >= idle.values["gpu_hours"] - 1e-9
    assert total["telemetry_share"] >= with_telemetry / total["gpu_hours"] - 1e-9
    charts = services.reports.report(
        principal, "cost", period=world["period"], project=PROJECT, charts=True
    ).charts
    weights = dict(zip(charts.utilisation_pct, charts.utilisation_gpu_hours, strict=True))
    assert (
        weights[45.0] >= busy.values["gpu_hours"] - 1e-9 and weights[5.0] >= idle.values["gpu_hours"] - 1e-9
    )


def test_efficiency_without_telemetry_says_so(services, principal, world):
    report = services.reports.report(
        principal, "efficiency", by="run", period=world["period"], project=PROJECT
    )
    gpu_row = next(r for r in report.rows if r.key == world["runs"]["gpu"])
    assert gpu_row.values["gpu_util_pct"] is None and gpu_row.note == "no telemetry"
    assert "no telemetry" in services.reports.render(report, "table").text


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"period": "2026-13"}, "period"), ({"by": "team"}, "by"), ({"period": "2026-W60"}, "period")],
)
def test_bad_requests_say_what_is_valid(services, principal, kwargs, field):
    with pytest.raises(SpecError) as caught:
        services.reports.report(principal, "usage", **kwargs)
    assert caught.value.issues[0].path == field

"""Accounting on the real cluster: sacct ingested twice changes nothing, each requeued attempt is its own
record, gateway jobs link to their attempts and plain sbatch jobs to their account's project, and
costs equal a hand computation from sacct's own output, split where a rate changes."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.api import create_app
from gateway.core.site.rates import AccountingSpec, RateSpec
from gateway.core.slurm.states import RunState
from gateway.errors import SlurmUnavailable
from gateway.services.accounting.ledger import AccountingService, LedgerSource
from gateway.store.accounting.accounting import RecordFilter
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm
SACCT_WAIT_S = 90  # slurmdbd writes a job's end a little after the job ended


@pytest.fixture(scope="module")
def app(services, tester_token):
    with TestClient(create_app(services=services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        yield client


def spec(command: str) -> dict:
    return {
        "name": "acct",
        "project": PROJECT,
        "queue": "cpu",
        "command": command,
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
    }


def sacct_allocations(job_ids: list[str]) -> list[dict[str, str]]:
    """sacct's own allocation lines of ``job_ids`` (every requeued record), read here by hand."""
    fields = ["JobIDRaw", "Submit", "State", "ElapsedRaw", "AllocTRES", "End"]
    out = subprocess.run(
        ["sacct", "-X", "--duplicates", "--allusers", "--noheader", "--parsable2",
         f"--format={','.join(fields)}", f"--jobs={','.join(job_ids)}"],
        capture_output=True, text=True, check=True, env={"TZ": "UTC", "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    return [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines() if line.strip()]


def wait_for_sacct(job_ids: list[str], records: int, since: datetime) -> list[dict[str, str]]:
    """Poll (bounded) until sacct has ``records`` ended allocation records of ``job_ids`` submitted
    since ``since`` (a cluster whose state was wiped reuses job ids, and sacct keeps the old jobs)."""
    deadline = time.monotonic() + SACCT_WAIT_S
    while True:
        lines = [ln for ln in sacct_allocations(job_ids) if ln["Submit"] >= f"{since:%Y-%m-%dT%H:%M:%S}"]
        if len(lines) >= records and all(line["End"] not in ("Unknown", "") for line in lines):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct did not show {records} ended records of {job_ids}: {lines}")
        time.sleep(1)


@pytest.fixture(scope="module")
def world(app, services):
    """A good run, a failed one, one Slurm requeued, and a plain sbatch job under project other's account."""
    since = datetime.now(UTC) - timedelta(minutes=1)
    ok = app.post("/runs", json=spec("sleep 2")).json()
    failed = app.post("/runs", json=spec("sleep 1; exit 3")).json()
    requeued = app.post("/runs", json=spec("sleep 6")).json()
    other = services.access.project("other").slurm_account
    plain = subprocess.run(
        ["sbatch", "--parsable", f"--account={other}", "--partition=cpu", "--mem=100M", "--time=5",
         "--comment=plain-sbatch", "--output=/dev/null", "--wrap=sleep 3"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    refresh_until(services, requeued["id"], states={RunState.RUNNING}, timeout_s=180)
    subprocess.run(["scontrol", "requeue", requeued["job_id"]], check=True)
    refresh_until(services, requeued["id"], states={RunState.SUCCEEDED}, timeout_s=180)
    refresh_until(services, ok["id"], states={RunState.SUCCEEDED}, timeout_s=180)
    refresh_until(services, failed["id"], states={RunState.FAILED}, timeout_s=180)
    jobs = {"ok": ok["job_id"], "failed": failed["job_id"], "requeued": requeued["job_id"], "plain": plain}
    lines = wait_for_sacct(list(jobs.values()), records=5, since=since)
    runs = {"ok": ok["id"], "failed": failed["id"], "requeued": requeued["id"]}
    return {"since": since, "jobs": jobs, "runs": runs, "sacct": lines}


def mine(services, world):
    found = services.accounting.store.records(RecordFilter(job_ids=list(world["jobs"].values())))
    return [r for r in found if r.record.submit_time >= world["since"]]


def test_ingest_twice_gives_the_same_rows_each_requeue_its_own_record(services, world):
    first = services.accounting.ingest(since=world["since"])
    assert first.read >= 5
    rows = mine(services, world)
    again = services.accounting.ingest(since=world["since"])
    assert mine(services, world) == rows  # nothing changed, updated_at included
    assert again.read >= len(rows)
    assert len(rows) == len(world["sacct"]) == 5
    jobs, runs = world["jobs"], world["runs"]
    requeued = [r for r in rows if r.record.job_id_raw == jobs["requeued"]]
    assert [r.record.state for r in requeued] == ["REQUEUED", "COMPLETED"]
    assert len({r.record.key for r in requeued}) == 2
    attempts = services.runs.store.get_run(runs["requeued"]).attempts
    assert [r.link.attempt_id for r in requeued] == [attempts[0].id, attempts[1].id]
    assert all(r.link.run_id == runs["requeued"] and r.link.project == PROJECT for r in requeued)
    failed = next(r for r in rows if r.record.job_id_raw == jobs["failed"])
    assert failed.record.state == "FAILED" and failed.record.exit_code == 3 and failed.record.failed
    assert failed.link.run_id == runs["failed"] and failed.link.attempt_number == 1
    plain = next(r for r in rows if r.record.job_id_raw == jobs["plain"])
    assert plain.link.run_id is None and plain.link.project == "other"
    assert plain.record.comment == "plain-sbatch" and plain.record.steps  # the batch step is kept
    assert all(r.record.cluster and r.record.submit_time.tzinfo is UTC for r in rows)


def hand_cost(line: dict[str, str], cpu_rate: float, mem_rate: float) -> float:
    """cores x h x cpu_rate + GiB x h x mem_rate, from one sacct line's AllocTRES and ElapsedRaw."""
    tres = dict(item.split("=", 1) for item in line["AllocTRES"].split(","))
    mem = tres["mem"]
    mem_gb = float(mem[:-1]) / {"K": 1024**2, "M": 1024, "G": 1}[mem[-1]]
    hours = int(line["ElapsedRaw"]) / 3600
    return int(tres["cpu"]) * hours * cpu_rate + mem_gb * hours * mem_rate


def apply_rates(services, *rates: RateSpec) -> int:
    site = services.site.export(OPERATOR)
    table = AccountingSpec(currency="EUR", rates=list(rates))
    services.site.apply(OPERATOR, site.model_copy(update={"accounting": table}), sync_slurm=False)
    return services.accounting.current_rates().version


def test_costs_equal_a_hand_computation_from_sacct(app, services, world):
    services.accounting.ingest(since=world["since"])
    version = apply_rates(
        services, RateSpec(partition="cpu", valid_from="2026-01-01", cpu_core_hour=0.5, mem_gb_hour=0.25)
    )
    lines = {(ln["JobIDRaw"], ln["Submit"]): ln for ln in world["sacct"]}
    requeued = sorted(
        (ln for key, ln in lines.items() if key[0] == world["jobs"]["requeued"]), key=lambda x: x["Submit"]
    )
    body = app.get(f"/runs/{world['runs']['requeued']}/cost").json()
    assert body["priced"] and body["currency"] == "EUR"
    assert [a["attempt"] for a in body["attempts"]] == [1, 2]
    assert [a["rate_version"] for a in body["attempts"]] == [version, version]
    expected = [hand_cost(ln, 0.5, 0.25) for ln in requeued]
    assert [a["cost"] for a in body["attempts"]] == pytest.approx(expected)
    assert body["total"] == pytest.approx(sum(expected))
    assert body["failed_total"] == pytest.approx(expected[0])  # the requeued attempt cost money too
    failed = app.get(f"/runs/{world['runs']['failed']}/cost").json()
    assert failed["total"] == pytest.approx(failed["failed_total"]) and failed["total"] > 0
    bundle = services.evidence.bundle(world["runs"]["requeued"], principal=OPERATOR)
    (run_record,) = json.loads(bundle.files["evidence.json"])["runs"]
    assert run_record["cost"]["total"] == pytest.approx(sum(expected))
    assert [a["rate_version"] for a in run_record["cost"]["attempts"]] == [version, version]
    assert app.get("/runs/r-doesnotexist/cost").status_code == 404
    assert app.post("/admin/accounting/ingest", json={}).status_code == 403  # a project lead is no admin


def test_a_rate_change_inside_a_run_splits_its_cost(services, world):
    services.accounting.ingest(since=world["since"])
    rows = mine(services, world)
    record = next(r for r in rows if r.record.job_id_raw == world["jobs"]["requeued"] and not r.record.failed)
    start, elapsed_s = record.record.start_time, record.record.elapsed_s
    assert elapsed_s >= 4
    change = start + timedelta(seconds=2)
    version = apply_rates(
        services,
        RateSpec(partition="cpu", valid_from="2026-01-01", cpu_core_hour=1.0),
        RateSpec(partition="cpu", valid_from=change, cpu_core_hour=3.0),
    )
    repriced = next(r for r in mine(services, world) if r.id == record.id)
    cpus = record.record.alloc.cpus
    assert repriced.price.rate_version == version
    assert [p.start for p in repriced.price.parts] == [start, change]
    assert [p.hours for p in repriced.price.parts] == pytest.approx([2 / 3600, (elapsed_s - 2) / 3600])
    assert repriced.price.cost == pytest.approx(cpus * (2 * 1.0 + (elapsed_s - 2) * 3.0) / 3600)
    # applying the same table again adds no version
    assert (
        apply_rates(
            services,
            RateSpec(partition="cpu", valid_from="2026-01-01", cpu_core_hour=1.0),
            RateSpec(partition="cpu", valid_from=change, cpu_core_hour=3.0),
        )
        == version
    )


def test_a_cluster_whose_sacct_fails_is_named_while_the_other_is_read(services, settings, world):
    """Per cluster: one sacct that fails (here a slurm.conf that is not there, given up after 3 s) is
    named in the counts; the other cluster is read all the same; with no cluster read, it raises."""
    good = LedgerSource("gwlocal", SlurmCLI(LocalRunner()), default=True)
    broken = SlurmCLI(LocalRunner(), slurm_conf="/nonexistent/slurm.conf", query_timeout_s=3)
    bad = LedgerSource("broken", broken)

    def service(*sources: LedgerSource) -> AccountingService:
        return AccountingService(
            services.accounting.store,
            services.runs.store,
            good.ledger,
            window_s=settings.accounting_window_s,
            overlap_s=settings.accounting_overlap_s,
            lookback_days=settings.accounting_lookback_days,
            sources=lambda: sources,
        )

    counts = service(good, bad).ingest(since=world["since"])
    read, failed = counts.clusters
    assert read.error is None and read.read >= 5 and read.cluster == "gwlocal"
    assert failed.cluster == "broken" and "did not answer" in (failed.error or "") and failed.read == 0
    assert counts.read == read.read
    with pytest.raises(SlurmUnavailable):
        service(bad).ingest(since=world["since"])

"""Accounting, quotas and reports on two real Slurm clusters (gwlocal and gwlocal2 on one slurmdbd).

The site lists both clusters; project ``multi`` has a queue on each, project ``only2`` one on
gwlocal2 only. Checked against Slurm's own multi-cluster commands:

- the quotas land in ``sacctmgr show assoc cluster=gwlocal2`` (and only2's account nowhere else),
  and the apply plan names each change's cluster;
- a job id present on both clusters (the test forces the collision) gives two accounting records,
  each with its own cluster's numbers as ``sacct -M <cluster>`` prints them;
- report totals per cluster equal a hand sum from ``sacct -M <cluster>``.

Skipped where the second cluster is not set up (``slurm_second_cluster: false``, docs/cluster.md).
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.reports.rows import unreconciled
from gateway.core.site.schema import parse_site
from gateway.services import Services
from gateway.settings import Settings
from gateway.store.accounting.accounting import RecordFilter
from gateway.wiring import build_services
from tests.conftest import JOB_ROOT
from tests.service.conftest import OPERATOR, fresh_database

pytestmark = pytest.mark.slurm
FIRST, SECOND = "gwlocal", "gwlocal2"
SACCT_WAIT_S = 120
MAX_BUMPS = 3000  # placeholder submissions to bring one cluster's job id counter level with the other's
ENV = {"TZ": "UTC", "SLURM_TIME_FORMAT": "%Y-%m-%dT%H:%M:%S", "PATH": "/usr/bin:/bin"}

SITE = """
allow_root_mapping: true
clusters:
  - {{name: {first}}}
  - {{name: {second}}}
users:
  - {{name: admin, os_user: root, admin: true}}
  - {{name: carla, os_user: root}}
projects:
  - name: multi
    slurm_account: {account}
    quota: {{gpus: 3, gpu_hours_per_month: 10}}
    members: [{{user: carla, role: lead}}]
    queues:
      - {{name: here, partition: cpu, cluster: {first}}}
      - {{name: there, partition: cpu, cluster: {second}}}
  - name: only2
    slurm_account: {account}t
    quota: {{gpus: 1}}
    members: [{{user: carla, role: member}}]
    queues: [{{name: there, partition: cpu, cluster: {second}}}]
"""
# Pruned to no projects with both clusters still listed, so both clusters' associations go.
TEARDOWN = """
allow_root_mapping: true
clusters: [{{name: {first}}}, {{name: {second}}}]
users: [{{name: admin, os_user: root, admin: true}}]
projects: []
"""


def _run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, env=ENV).stdout


def second_cluster_up() -> bool:
    listed = subprocess.run(
        ["sacctmgr", "-n", "-P", "show", "cluster", f"cluster={SECOND}", "format=Cluster,ControlPort"],
        capture_output=True,
        text=True,
    ).stdout.split("|")
    if listed[0].strip() != SECOND or listed[-1].strip() in ("", "0"):
        return False
    return subprocess.run(["sinfo", "-M", SECOND, "-h"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def two(backend, tmp_path_factory) -> Iterator[dict]:
    """Gateway services of their own (own database) on a site that lists both clusters."""
    if not second_cluster_up():
        pytest.skip(
            f"the second cluster {SECOND} is not set up here (make cluster with slurm_second_cluster)"
        )
    with fresh_database(backend, tmp_path_factory.mktemp("db2")) as url:
        runs_dir = JOB_ROOT / f"runs-{uuid.uuid4().hex[:8]}"
        runs_dir.mkdir(parents=True, exist_ok=True)
        settings = Settings(
            database_url=url,
            runs_dir=runs_dir,
            audit_anchor_path=tmp_path_factory.mktemp("anchor2") / "anchors.jsonl",
            refresh_interval_s=1,
        )
        services: Services = build_services(settings)
        account = f"gwm{uuid.uuid4().hex[:10]}"
        site = parse_site(SITE.format(account=account, first=FIRST, second=SECOND))
        planned = services.site.apply(OPERATOR, site, dry_run=True)
        applied = services.site.apply(OPERATOR, site)
        try:
            yield {"services": services, "account": account, "planned": planned.slurm, "applied": applied}
        finally:
            try:
                for cluster in (FIRST, SECOND):
                    ids = _run("squeue", "-M", cluster, "-h", f"--account={account},{account}t", "-o", "%i")
                    if ids.split():
                        subprocess.run(["scancel", "-M", cluster, *ids.split()], check=False)
                time.sleep(1)
                services.site.apply(
                    OPERATOR, parse_site(TEARDOWN.format(first=FIRST, second=SECOND)), prune=True
                )
            finally:
                services.close()


def associations(cluster: str, account: str) -> dict[str, tuple[str, str]]:
    """``sacctmgr show assoc cluster=C account=A``: user ('' for the account's own) -> (GrpTRES,
    GrpTRESMins)."""
    out = _run(
        "sacctmgr", "-n", "-P", "show", "assoc", "where", f"cluster={cluster}", f"account={account}",
        "format=User,GrpTRES,GrpTRESMins",
    )  # fmt: skip
    return {user: (tres, mins) for user, tres, mins in (line.split("|") for line in out.splitlines() if line)}


def test_quotas_are_pushed_to_each_cluster_where_the_project_has_a_queue(two):
    account = two["account"]
    assert any(line.startswith(f"{SECOND}: add account {account}:") for line in two["planned"])
    assert any(line.startswith(f"{FIRST}: add account {account}:") for line in two["planned"])
    assert not any(line.startswith(f"{FIRST}: add account {account}t") for line in two["planned"])
    for cluster in (FIRST, SECOND):
        multi = associations(cluster, account)
        assert multi[""] == ("gres/gpu=3", "gres/gpu=600"), (cluster, multi)
        assert "root" in multi  # carla's OS user
    assert associations(SECOND, f"{account}t")[""][0] == "gres/gpu=1"
    assert associations(FIRST, f"{account}t") == {}  # no queue on gwlocal: no association there
    # a second apply finds nothing to change on either cluster
    again = two["services"].slurm_sync.sync(OPERATOR, dry_run=True)
    assert again == []


def _sbatch(cluster: str, account: str, *args: str) -> str:
    out = _run(
        "sbatch", "-M", cluster, "--parsable", f"--account={account}", "--partition=cpu", "--mem=100M",
        "--time=5", "--output=/dev/null", *args,
    )  # fmt: skip
    return out.strip().split(";")[0]  # with -M, sbatch --parsable prints "ID;CLUSTER"


def colliding_jobs(account: str) -> str:
    """Submit one held job on each cluster with the same job id (forced by submitting and cancelling
    placeholders on the cluster whose counter is behind), release both; the shared id."""
    commands = {
        FIRST: ("-c", "1", "--hold", "--wrap=sleep 2"),
        SECOND: ("-c", "2", "--hold", "--wrap=sleep 4"),
    }
    held = {cluster: _sbatch(cluster, account, *args) for cluster, args in commands.items()}
    for _ in range(MAX_BUMPS):
        if held[FIRST] == held[SECOND]:
            for cluster, job in held.items():
                _run("scontrol", "-M", cluster, "release", job)
            return held[FIRST]
        behind = FIRST if int(held[FIRST]) < int(held[SECOND]) else SECOND
        _run("scancel", "-M", behind, held[behind])
        held[behind] = _sbatch(behind, account, *commands[behind])
    raise AssertionError(f"could not bring the two clusters' job ids level: {held}")


def sacct_lines(cluster: str, *selection: str) -> list[dict[str, str]]:
    """``sacct -M cluster`` allocation lines, read here by hand."""
    fields = ["Cluster", "JobIDRaw", "Submit", "Start", "End", "State", "ElapsedRaw", "AllocTRES"]
    out = _run(
        "sacct", "-M", cluster, "-X", "--duplicates", "--allusers", "-n", "-P",
        f"--format={','.join(fields)}", *selection,
    )  # fmt: skip
    return [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines() if line.strip()]


def wait_ended(cluster: str, job_id: str, since: datetime) -> dict[str, str]:
    deadline = time.monotonic() + SACCT_WAIT_S
    while True:
        lines = [
            ln
            for ln in sacct_lines(cluster, f"--jobs={job_id}")
            if ln["Submit"] >= f"{since:%Y-%m-%dT%H:%M:%S}"
        ]
        done = [ln for ln in lines if ln["End"] not in ("Unknown", "") and ln["State"] == "COMPLETED"]
        if done:
            return done[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct -M {cluster} shows no ended record of job {job_id}: {lines}")
        time.sleep(1)


@pytest.fixture(scope="module")
def collided(two) -> dict:
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    job_id = colliding_jobs(two["account"])
    lines = {cluster: wait_ended(cluster, job_id, since) for cluster in (FIRST, SECOND)}
    counts = two["services"].accounting.ingest(since=since)
    return {"since": since, "job_id": job_id, "sacct": lines, "counts": counts}


def test_one_job_id_on_both_clusters_is_two_records_each_with_its_clusters_numbers(two, collided):
    counts = collided["counts"]
    assert {c.cluster for c in counts.clusters} == {FIRST, SECOND} and not any(
        c.error for c in counts.clusters
    )
    records = [
        r
        for r in two["services"].accounting.store.records(RecordFilter(job_ids=[collided["job_id"]]))
        if r.record.submit_time >= collided["since"] and r.record.state == "COMPLETED"
    ]
    by_cluster = {r.record.cluster: r.record for r in records}
    assert sorted(by_cluster) == [FIRST, SECOND] and len(records) == 2
    for cluster, line in collided["sacct"].items():
        record = by_cluster[cluster]
        tres = dict(item.split("=", 1) for item in line["AllocTRES"].split(","))
        assert record.cluster == line["Cluster"] == cluster
        assert record.elapsed_s == int(line["ElapsedRaw"])
        assert record.alloc.cpus == int(tres["cpu"])
        assert record.start_time == datetime.fromisoformat(line["Start"]).replace(tzinfo=UTC)
    assert (by_cluster[FIRST].alloc.cpus, by_cluster[SECOND].alloc.cpus) == (1, 2)
    # a second ingest changes neither record (other tests' jobs in the window may still end and update)
    two["services"].accounting.ingest(since=collided["since"])
    again = [
        r.record
        for r in two["services"].accounting.store.records(RecordFilter(job_ids=[collided["job_id"]]))
        if r.record.submit_time >= collided["since"] and r.record.state == "COMPLETED"
    ]
    assert sorted(again, key=lambda r: r.cluster) == sorted(by_cluster.values(), key=lambda r: r.cluster)


def hand_sum(cluster: str, account: str, start: datetime, end: datetime) -> tuple[int, float]:
    """Records and CPU-hours of ``account``'s allocations on ``cluster`` that started in [start, end),
    from ``sacct -M cluster``."""
    records, cpu_h = 0, 0.0
    for line in sacct_lines(
        cluster, f"--accounts={account}", "-S", f"{start:%Y-%m-%dT%H:%M:%S}", "-E", "now"
    ):
        if line["Start"] in ("", "None", "Unknown"):
            continue
        at = datetime.fromisoformat(line["Start"]).replace(tzinfo=UTC)
        if not start <= at < end:
            continue
        tres = dict(item.split("=", 1) for item in line["AllocTRES"].split(",") if "=" in item)
        records += 1
        cpu_h += int(tres.get("cpu", 0)) * int(line["ElapsedRaw"]) / 3600
    return records, cpu_h


def test_report_totals_per_cluster_equal_a_hand_sum_from_sacct(two, collided):
    services = two["services"]
    today = datetime.now(UTC).date()
    period = f"{today - timedelta(days=1)}..{today}"
    start = datetime.combine(today - timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    end = start + timedelta(days=2)
    services.accounting.ingest(since=start)
    report = services.reports.report(OPERATOR, "usage", by="cluster", period=period, project="multi")
    rows = {r.key: r.values for r in report.rows}
    assert set(rows) == {FIRST, SECOND}
    for cluster in (FIRST, SECOND):
        records, cpu_h = hand_sum(cluster, two["account"], start, end)
        assert rows[cluster]["records"] == records and records >= 1
        assert rows[cluster]["cpu_hours"] == pytest.approx(cpu_h, abs=1e-9)
    assert unreconciled(report) == []
    table = services.reports.render(report, "table").text
    assert FIRST in table and SECOND in table


FIRST_CPU_RATE, SECOND_CPU_RATE = 1.0, 3.0  # currency per core-hour: the site's, and gwlocal2's own
RATES = f"""
accounting:
  currency: EUR
  rates: [{{partition: '*', valid_from: 2020-01-01, cpu_core_hour: {FIRST_CPU_RATE}}}]
  clusters:
    {SECOND}:
      rates: [{{partition: cpu, valid_from: 2020-01-01, cpu_core_hour: {SECOND_CPU_RATE}}}]
"""


def _equal_runs(services: Services) -> dict[str, str]:
    """One run of the same spec on each cluster (two cores, three seconds), followed to its end; run id
    by cluster."""
    from gateway.core.slurm.states import TERMINAL, RunState
    from gateway.core.spec.run_spec import build_spec

    carla = services.access.principal("carla", source="pytest")
    runs = {}
    for cluster, queue in ((FIRST, "here"), (SECOND, "there")):
        spec = {
            "name": f"equal-{queue}", "project": "multi", "queue": queue, "command": "sleep 3",
            "workdir": "/tmp", "resources": {"cpus_per_task": 2, "mem_gb": 0.1, "walltime_min": 5},
        }  # fmt: skip
        runs[cluster] = services.runs.submit(build_spec(spec), principal=carla).id
    deadline = time.monotonic() + SACCT_WAIT_S
    while time.monotonic() < deadline:
        services.refresher.refresh()
        states = {c: services.runs.store.get_run(r).state for c, r in runs.items()}
        if all(s in TERMINAL for s in states.values()):
            assert set(states.values()) == {RunState.SUCCEEDED}, states
            return runs
        time.sleep(1)
    raise AssertionError(f"the two runs did not end: {runs}")


def test_equal_runs_on_the_two_clusters_cost_what_each_clusters_rates_say(two):
    """The site prices core-hours at 1, gwlocal2 at 3 of its own: a run on each of the same use costs
    its records' core-hours at its cluster's rate, in the run's cost, on its page and in the cost
    report by cluster (a hand sum from sacct -M at each cluster's rate)."""
    services = two["services"]
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    runs = _equal_runs(services)
    site = SITE.format(account=two["account"], first=FIRST, second=SECOND) + RATES
    services.site.apply(OPERATOR, parse_site(site))
    exported = services.site.export(OPERATOR).accounting
    assert exported is not None and exported.clusters[SECOND].rates[0].cpu_core_hour == SECOND_CPU_RATE
    deadline = time.monotonic() + SACCT_WAIT_S
    while True:
        services.accounting.ingest(since=since)
        costs = {c: services.accounting.run_cost(OPERATOR, r) for c, r in runs.items()}
        if all(c.priced and all(a.state == "COMPLETED" for a in c.attempts) for c in costs.values()):
            break
        assert time.monotonic() < deadline, f"runs not priced from sacct: {costs}"
        time.sleep(2)
    rate = {FIRST: FIRST_CPU_RATE, SECOND: SECOND_CPU_RATE}
    for cluster, cost in costs.items():
        (record,) = cost.attempts
        assert record.cluster == cluster and record.cpu_hours > 0
        assert cost.total == pytest.approx(record.cpu_hours * rate[cluster], rel=1e-9), (cluster, cost)
    assert costs[SECOND].attempts[0].rates == (f"{SECOND}:cpu/*@2020-01-01",)
    assert costs[FIRST].attempts[0].rates == ("*/*@2020-01-01",)  # gwlocal has none of its own
    per_core_hour = {c: cost.total / cost.attempts[0].cpu_hours for c, cost in costs.items()}
    assert per_core_hour[SECOND] == pytest.approx(3 * per_core_hour[FIRST])

    token = services.auth.issue_token(OPERATOR, "admin", name="pytest-cost")[0]
    from tests.service.web_client import web_client

    with web_client(services, token) as web:
        page = web.get(f"/ui/runs/{runs[SECOND]}").text
    assert f"{SECOND}:cpu/*@2020-01-01" in page and f"{costs[SECOND].total:.6f}" in page

    today = datetime.now(UTC).date()
    start = datetime.combine(today - timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    services.accounting.ingest(since=start)
    period = f"{today - timedelta(days=1)}..{today}"
    report = services.reports.report(OPERATOR, "cost", by="cluster", period=period, project="multi")
    rows = {r.key: r.values for r in report.rows}
    for cluster in (FIRST, SECOND):
        _records, cpu_h = hand_sum(cluster, two["account"], start, start + timedelta(days=2))
        assert rows[cluster]["cost"] == pytest.approx(cpu_h * rate[cluster], abs=1e-9), cluster

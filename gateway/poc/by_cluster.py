"""The accounting checks per cluster, once every scenario has ended: the gateway's usage report of the
POC's project by cluster (``GET /reports/usage?by=cluster``) against a hand sum from Slurm's own
``sacct -M <cluster>`` of the project's Slurm account.

Both count the allocations that started in the period (the POC's days, UTC): records, CPU-hours
(``cpu`` x ElapsedRaw) and GPU-hours (``gres/gpu`` x ElapsedRaw) from AllocTRES, as docs/reports.md
says the report does. ``sacct`` runs here, through the runner (the POC runs beside the clusters, as on
the local set-up; a cluster with its own ``slurm_conf`` is asked with it as ``SLURM_CONF``); where this
machine has no ``sacct`` the totals are shown and the comparison says why it was not made.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.adapters.runner import LocalRunner
from gateway.client.api import ApiError
from gateway.errors import CommandError, CommandTimeout
from gateway.poc.checks import Check
from gateway.poc.world import World

FIELDS = ("Cluster", "JobIDRaw", "Start", "ElapsedRaw", "AllocTRES")
MEASURES = ("records", "cpu_hours", "gpu_hours")
TOLERANCE_H = 1e-6  # the report sums the same integers; only float rounding may differ


def check(world: World, run_clusters: set[str | None]) -> dict[str, Any]:
    """Ingest, read the report by cluster and compare each row with ``sacct -M``: the summary's
    ``accounting`` (``period``, ``clusters``: one entry per row, ``checks``)."""
    start_day = world.started_at.date()
    today = datetime.now(UTC).date()
    period = f"{start_day}..{today}"
    out: dict[str, Any] = {"period": period, "account": world.project, "clusters": [], "checks": []}
    checks: list[Check] = []
    try:
        world.call("POST", "/admin/accounting/ingest", body={"since": _iso(world.started_at)})
        report = world.call(
            "GET", "/reports/usage", params={"by": "cluster", "period": period, "project": world.project}
        )
    except ApiError as exc:
        checks.append(
            Check("accounting per cluster", False, "the usage report by cluster", str(exc), "accounting")
        )
        out["checks"] = [c.__dict__ for c in checks]
        return out
    rows = {r["key"]: r["values"] for r in report["rows"]}
    ran_on = sorted(c for c in run_clusters if c)
    checks.append(
        Check(
            "accounting: a row for every cluster the runs ran on",
            set(ran_on) <= set(rows),
            f"rows for {', '.join(ran_on) or 'the one cluster'}",
            f"rows for {', '.join(sorted(rows)) or 'no cluster'}",
            "accounting",
        )
    )
    start = datetime.combine(start_day, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(today, datetime.min.time(), tzinfo=UTC) + timedelta(days=1)
    for cluster in sorted(rows):
        gateway = {m: rows[cluster].get(m) for m in MEASURES}
        entry: dict[str, Any] = {"cluster": cluster, "gateway": gateway, "sacct": None, "why": None}
        try:
            entry["sacct"] = hand_sum(world, cluster, start, end)
        except _NoSacct as exc:
            entry["why"] = str(exc)
        else:
            checks.append(_compare(cluster, gateway, entry["sacct"]))
        out["clusters"].append(entry)
    out["checks"] = [c.__dict__ for c in checks]
    return out


def _compare(cluster: str, gateway: dict[str, Any], sacct: dict[str, Any]) -> Check:
    same = gateway["records"] == sacct["records"] and all(
        abs((gateway[m] or 0) - sacct[m]) <= TOLERANCE_H for m in ("cpu_hours", "gpu_hours")
    )
    return Check(
        f"accounting on {cluster}: the report's totals equal sacct -M {cluster}",
        same,
        f"the records, CPU-hours and GPU-hours sacct -M {cluster} gives ({_words(sacct)})",
        f"the gateway's report: {_words(gateway)}",
        "accounting",
    )


def _words(values: dict[str, Any]) -> str:
    return (
        f"{values['records']} records, {float(values['cpu_hours'] or 0):.6f} CPU-hours, "
        f"{float(values['gpu_hours'] or 0):.6f} GPU-hours"
    )


class _NoSacct(Exception):
    """sacct cannot be asked here (not installed, or it failed): why."""


def hand_sum(world: World, cluster: str, start: datetime, end: datetime) -> dict[str, Any]:
    """Records, CPU-hours and GPU-hours of the POC account's allocations on ``cluster`` that started in
    [start, end), summed here from ``sacct -M cluster`` lines; _NoSacct when sacct cannot be asked."""
    sacct = shutil.which("sacct")
    if not sacct:
        raise _NoSacct("no sacct on the machine the POC ran on: the totals were not compared with Slurm's")
    spec = next((c for c in world.clusters if c["name"] == cluster), {})
    env = {"TZ": "UTC", "SLURM_TIME_FORMAT": "%Y-%m-%dT%H:%M:%S"}  # added to this process's environment
    if spec.get("slurm_conf"):
        env["SLURM_CONF"] = spec["slurm_conf"]
    argv = [
        sacct, "-M", spec.get("slurm_name") or cluster, "-X", "--duplicates", "--allusers", "-n", "-P",
        f"--accounts={world.project}", "-S", f"{start:%Y-%m-%dT%H:%M:%S}", "-E", "now",
        f"--format={','.join(FIELDS)}",
    ]  # fmt: skip
    try:
        done = LocalRunner().run(argv, timeout_s=60, env=env)
    except (CommandError, CommandTimeout) as exc:
        raise _NoSacct(f"sacct -M {cluster} could not be asked: {exc}") from exc
    if done.returncode != 0:
        raise _NoSacct(f"sacct -M {cluster} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    total: dict[str, Any] = {"records": 0, "cpu_hours": 0.0, "gpu_hours": 0.0}
    for line in done.stdout.splitlines():
        values = dict(zip(FIELDS, line.split("|"), strict=False))
        if values.get("Start") in (None, "", "None", "Unknown"):
            continue  # never started: held nothing, counted by neither
        if not start <= datetime.fromisoformat(values["Start"]).replace(tzinfo=UTC) < end:
            continue
        tres = dict(i.split("=", 1) for i in values.get("AllocTRES", "").split(",") if "=" in i)
        elapsed = int(values.get("ElapsedRaw") or 0)
        total["records"] += 1
        total["cpu_hours"] += int(tres.get("cpu", 0)) * elapsed / 3600
        total["gpu_hours"] += int(tres.get("gres/gpu", 0)) * elapsed / 3600
    return total


def _iso(moment: datetime) -> str:
    return (moment - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

"""Benchmark: reports over 1,000,000 accounting rows against the plain SQL GROUP BY, SQLite and PostgreSQL.

    .venv/bin/python -m bench.reports [ROWS] [--databases sqlite,postgresql]

Fills ``accounting_records`` of a fresh database (a SQLite file; a new
PostgreSQL database, dropped afterwards: ``bench/databases.py``)
with ROWS records (default 1,000,000) over one month: 40 projects, 300
users, 3 partitions, a tenth failed, three rate versions, waits of 0 s to
2 h. Then times, best of 3, in the same process and database:

- the cost report by project over the month (``ReportService.report``, the
  service and its store as ``gw report cost`` runs them, every measure, the
  total and the rate versions), against the plain ``GROUP BY project`` that
  sums the same columns over the same rows;
- the usage report by user (with the wait median and p90), against the
  plain SQL of the same numbers: ``GROUP BY user`` plus the nearest-rank
  percentiles (``percentile_disc`` on PostgreSQL, a window on SQLite).

Both must give the same numbers. Prints each time and ratio; exits 1 when a ratio is 2 or more, or
when the numbers differ.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from bench.databases import fresh_database
from gateway.core.access.values import Principal
from gateway.services.accounting.reports import ReportService
from gateway.store.access.access import AccessStore
from gateway.store.accounting.models import AccountingRecordRow, RateVersionRow
from gateway.store.db import Database
from gateway.store.reports.reports import ReportStore

TARGET = 2.0
MONTH = "2026-11"
START = datetime(2026, 11, 1, tzinfo=UTC)
BATCH = 20_000
REC = AccountingRecordRow.__table__

PLAIN_COST = """
SELECT project, COUNT(*), SUM(gpu_hours), SUM(cpu_hours), SUM(COALESCE(cost, 0)),
       SUM(CASE WHEN failed THEN COALESCE(cost, 0) ELSE 0 END)
FROM accounting_records WHERE start_time >= :start AND start_time < :end GROUP BY project
"""
PLAIN_USAGE = """
SELECT user_name, COUNT(*), SUM(gpu_hours), SUM(cpu_hours)
FROM accounting_records WHERE start_time >= :start AND start_time < :end GROUP BY user_name
"""
WAIT = {
    "sqlite": "(julianday(start_time) - julianday(eligible_time)) * 86400.0",
    "postgresql": "EXTRACT(EPOCH FROM start_time - eligible_time)",
}
PERCENTILES_PG = f"""
SELECT user_name, percentile_disc(0.5) WITHIN GROUP (ORDER BY {WAIT["postgresql"]}),
       percentile_disc(0.9) WITHIN GROUP (ORDER BY {WAIT["postgresql"]})
FROM accounting_records WHERE start_time >= :start AND start_time < :end AND eligible_time IS NOT NULL
GROUP BY user_name
"""
PERCENTILES_SQLITE = f"""
SELECT k, MAX(CASE WHEN rn = (n + 1) / 2 THEN w END), MAX(CASE WHEN rn = (9 * n + 9) / 10 THEN w END) FROM (
  SELECT user_name AS k, {WAIT["sqlite"]} AS w,
         ROW_NUMBER() OVER (PARTITION BY user_name ORDER BY {WAIT["sqlite"]}) AS rn,
         COUNT(*) OVER (PARTITION BY user_name) AS n
  FROM accounting_records WHERE start_time >= :start AND start_time < :end AND eligible_time IS NOT NULL
) GROUP BY k
"""


def _rows(count: int, seed: int = 7) -> Iterator[list[dict[str, Any]]]:
    rng = random.Random(seed)
    month_s = 30 * 86400
    batch = []
    for i in range(count):
        start = START + timedelta(seconds=rng.randrange(month_s))
        elapsed = rng.randrange(60, 86400)
        gpus = rng.choice((0, 0, 1, 2, 4, 8))
        cpus = rng.choice((1, 2, 4, 8, 16, 32))
        failed = rng.random() < 0.1
        version = 1 + (i % 3)
        batch.append(
            {
                "cluster": "bench",
                "job_id_raw": str(i),
                "submit_time": start - timedelta(seconds=rng.randrange(7200)),
                "job_id": str(i),
                "user_name": f"u{rng.randrange(300):03d}",
                "account": f"acct{rng.randrange(40):02d}",
                "project": f"p{rng.randrange(40):02d}",
                "partition": rng.choice(("cpu", "gpu", "big")),
                "state": "FAILED" if failed else "COMPLETED",
                "eligible_time": start - timedelta(seconds=rng.randrange(7200)),
                "start_time": start,
                "end_time": start + timedelta(seconds=elapsed),
                "elapsed_s": elapsed,
                "alloc_cpus": cpus,
                "alloc_gpus": gpus,
                "ended": True,
                "failed": failed,
                "gpu_hours": gpus * elapsed / 3600,
                "cpu_hours": cpus * elapsed / 3600,
                "rate_version": version,
                "currency": "EUR",
                "cost": round(gpus * elapsed / 3600 * 2.5 + cpus * elapsed / 3600 * 0.05, 6),
                "first_seen_at": start,
                "updated_at": start,
            }
        )
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def fill(db: Database, count: int) -> float:
    """Insert ``count`` records (and the three rate versions they name); the seconds it took."""
    began = time.perf_counter()
    with db.transaction() as conn:
        conn.execute(
            insert(RateVersionRow.__table__),
            [
                {"version": v, "currency": "EUR", "rates": {}, "sha256": f"{v:064d}", "applied_by": "bench"}
                for v in (1, 2, 3)
            ],
        )
    for batch in _rows(count):
        with db.transaction() as conn:
            conn.execute(insert(REC), batch)
    with db.transaction() as conn:
        conn.execute(text("ANALYZE"))
    return time.perf_counter() - began


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """The fastest of ``repeat`` calls, in seconds, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - began)
    return best, result


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1.0)


def bench_one(db: Database, count: int) -> list[str]:
    """Time both reports on ``db`` (filled here); print; the problems found (empty: all within target)."""
    print(f"{db.dialect}: filling {count:,} records ...", flush=True)
    print(f"  filled in {fill(db, count):.1f} s", flush=True)
    service = ReportService(ReportStore(db), AccessStore(db))
    admin = Principal.operator()
    end = START + timedelta(days=30)
    params = {"start": START, "end": end}
    if db.dialect == "sqlite":  # the store keeps naive UTC text on SQLite; bind it the same way
        params = {k: v.replace(tzinfo=None) for k, v in params.items()}
    problems = []

    def plain(sql: str) -> Callable[[], list[Any]]:
        def run() -> list[Any]:
            with db.transaction() as conn:
                return conn.execute(text(sql), params).all()

        return run

    def plain_usage() -> tuple[list[Any], list[Any]]:
        percentiles = PERCENTILES_PG if db.dialect == "postgresql" else PERCENTILES_SQLITE
        return plain(PLAIN_USAGE)(), plain(percentiles)()

    cases = [
        (
            "cost by project",
            lambda: service.report(admin, "cost", by="project", period=MONTH),
            plain(PLAIN_COST),
        ),
        ("usage by user", lambda: service.report(admin, "usage", by="user", period=MONTH), plain_usage),
    ]
    for name, report_fn, plain_fn in cases:
        plain_s, reference = best_of(plain_fn)
        report_s, report = best_of(report_fn)
        ratio = report_s / plain_s
        print(
            f"  {name}: report {report_s:.3f} s, plain GROUP BY {plain_s:.3f} s, ratio {ratio:.2f}",
            flush=True,
        )
        if ratio >= TARGET:
            problems.append(f"{db.dialect} {name}: ratio {ratio:.2f} >= {TARGET}")
        problems.extend(f"{db.dialect} {name}: {p}" for p in _compare(name, report, reference))
    return problems


def _compare(name: str, report: Any, reference: Any) -> list[str]:
    rows = {r.key: r.values for r in report.rows}
    problems = []
    if name.startswith("cost"):
        for key, records, gpu_h, cpu_h, cost, _failed in reference:
            got = rows.get(key)
            if (
                got is None
                or got["records"] != records
                or not all(
                    _close(got[m], v) for m, v in (("gpu_hours", gpu_h), ("cpu_hours", cpu_h), ("cost", cost))
                )
            ):
                problems.append(f"{key}: report {got} differs from plain SQL {records, gpu_h, cpu_h, cost}")
        return problems
    sums, percentiles = reference
    waits = {k: (m, p) for k, m, p in percentiles}
    for key, records, gpu_h, _cpu_h in sums:
        got = rows.get(key)
        median, p90 = waits[key]
        if got is None or got["records"] != records or not _close(got["gpu_hours"], gpu_h):
            problems.append(f"{key}: report {got} differs from plain SQL {records, gpu_h}")
        elif abs(got["wait_median_s"] - float(median)) > 0.01 or abs(got["wait_p90_s"] - float(p90)) > 0.01:
            problems.append(f"{key}: waits {got['wait_median_s'], got['wait_p90_s']} vs {median, p90}")
    return problems


def main(argv: list[str]) -> int:
    """Run the benchmark; 0 when every ratio is under ``TARGET`` and the numbers agree, else 1."""
    parser = argparse.ArgumentParser(prog="python -m bench.reports")
    parser.add_argument("rows", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--databases", default="sqlite,postgresql")
    args = parser.parse_args(argv)
    problems = []
    for backend in args.databases.split(","):
        with tempfile.TemporaryDirectory() as tmp, fresh_database(backend, Path(tmp)) as db:
            problems += bench_one(db, args.rows)
    for problem in problems:
        print(f"FAIL: {problem}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

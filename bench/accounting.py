"""Benchmark: ingesting sacct output into the accounting ledger, twice, against a plain executemany.

    .venv/bin/python -m bench.accounting [LINES] [--postgres URL]

Generates LINES (default 100,000) allocation lines in the exact format the
ingest asks sacct for (``LEDGER_FORMAT``, 0x1F-separated, UTC times):
jobs of 200 users in 20 accounts over 30 days, every 10th one requeued (a
second record with the same job id and a later submit time), a rate table
in force. ``AccountingService.ingest`` reads them (the ``SlurmLedger`` here
answers with the generated text instead of running sacct; parsing, linking,
pricing and the idempotent save are the real ones) into a throwaway
database, then ingests the same text again. The reference, timed in the same
run: the same rows' column values inserted with one plain SQLAlchemy Core
``executemany`` into a fresh table. On SQLite, which works inside this
process, times are the process's CPU time (wall time on a shared machine
swings with the other processes' load); on PostgreSQL, whose server does the
work, wall time. Prints the times and ratios; exits 1
unless both ingests leave exactly LINES rows, the second one adds and
updates nothing, and the first stays within ``TARGET`` x the reference.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from bench.databases import POSTGRES_ADMIN_URL, fresh_database
from gateway.core.accounting.cost import Rate, RateTable, midnight
from gateway.core.accounting.parse import LEDGER_FIELDS, US, LedgerRead, parse_ledger
from gateway.core.accounting.records import RecordLink
from gateway.services.accounting.ledger import AccountingService
from gateway.store.accounting.accounting import AccountingStore
from gateway.store.accounting.models import AccountingRecordRow
from gateway.store.accounting.rows import Entry, columns
from gateway.store.runs.runs import RunStore

TARGET = 5.0  # first ingest (parse, link, price, upsert by identity) / a plain executemany of the parsed rows
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def generate(lines: int, seed: int = 7) -> str:
    """``lines`` allocation lines; every 10th job is requeued (two records, one job id)."""
    rng = random.Random(seed)
    out, job = [], 1000
    while len(out) < lines:
        job += 1
        submit = T0 + timedelta(seconds=rng.randrange(30 * 86400))
        records = 2 if job % 10 == 0 and len(out) + 2 <= lines else 1
        for k in range(records):
            start = submit + timedelta(seconds=rng.randrange(600))
            elapsed = rng.randrange(30, 7200)
            gpus = rng.choice((0, 0, 1, 2, 4))
            cpus, mem_g = rng.choice((1, 2, 4, 8)), rng.choice((1, 4, 16))
            tres = f"billing={max(gpus, 1)},cpu={cpus},mem={mem_g}G,node=1"
            if gpus:
                tres += f",gres/gpu:a100={gpus},gres/gpu={gpus}"
            fields = {
                "Cluster": "bench",
                "DBIndex": str(len(out) + 1),
                "JobID": str(job),
                "JobIDRaw": str(job),
                "JobName": f"job-{job}",
                "User": f"u{job % 200}",
                "Account": f"acct{job % 20}",
                "Partition": "gpu" if gpus else "cpu",
                "QOS": "normal",
                "State": "REQUEUED" if k == 0 and records == 2 else rng.choice(("COMPLETED", "FAILED")),
                "ExitCode": "0:0",
                "Submit": f"{submit:%Y-%m-%dT%H:%M:%S}",
                "Eligible": f"{submit:%Y-%m-%dT%H:%M:%S}",
                "Start": f"{start:%Y-%m-%dT%H:%M:%S}",
                "End": f"{start + timedelta(seconds=elapsed):%Y-%m-%dT%H:%M:%S}",
                "ElapsedRaw": str(elapsed),
                "Timelimit": "02:00:00",
                "AllocTRES": tres,
                "ReqTRES": tres,
                "NodeList": f"n{job % 64}",
                "Comment": "",
                "MaxRSS": "",
                "TRESUsageInMax": "",
            }
            out.append(US.join(fields[name] for name in LEDGER_FIELDS))
            submit = start + timedelta(seconds=elapsed + 30)
    return "\n".join(out) + "\n"


class GeneratedLedger:
    """A ``SlurmLedger`` answering with generated sacct output (parsed by the real parser)."""

    def __init__(self, output: str) -> None:
        self.output = output

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """The whole generated output, parsed (the bench reads it in one window)."""
        return parse_ledger(self.output)


def rates() -> RateTable:
    day = midnight(date(2026, 11, 1))
    return RateTable(
        0, "EUR", (Rate("cpu", "*", day, 0, 0.02, 0.004), Rate("gpu", "*", day, 2.5, 0.02, 0.004)), {}
    )


def main(argv: list[str]) -> int:
    """Run the benchmark (module docstring); returns the exit status."""
    lines = int(argv[0]) if argv and argv[0].isdigit() else 100_000
    url = argv[argv.index("--postgres") + 1] if "--postgres" in argv else None
    output = generate(lines)
    kind, admin = ("postgresql", url) if url else ("sqlite", POSTGRES_ADMIN_URL)
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database(kind, Path(tmp), admin_url=admin) as ref_db,
        fresh_database(kind, Path(tmp), admin_url=admin) as db,
    ):
        records = parse_ledger(output).records
        values = [columns(Entry(r, RecordLink(), None)) for r in records]
        clock = time.process_time if url is None else time.perf_counter
        started = clock()
        with ref_db.transaction() as conn:
            conn.execute(insert(AccountingRecordRow.__table__), values)
        reference_s = clock() - started

        store = AccountingStore(db)
        table = rates()
        store.add_rate_version(table, "bench")
        service = AccountingService(
            store,
            RunStore(db),
            GeneratedLedger(output),
            window_s=60 * 86400,
            overlap_s=0,
            lookback_days=60,
            clock=lambda: T0 + timedelta(days=40),
        )
        started = clock()
        first = service.ingest(since=T0 - timedelta(days=1))
        first_s = clock() - started
        started = clock()
        second = service.ingest(since=T0 - timedelta(days=1))
        second_s = clock() - started
        rows = store.count()
    backend = "postgresql" if url else "sqlite"
    ratio = first_s / reference_s
    measure = "process CPU time" if url is None else "wall time"
    print(f"accounting ingest of {lines} sacct lines ({backend}; {measure})")
    print(f"  reference executemany insert   {reference_s:8.2f} s")
    print(f"  first ingest                   {first_s:8.2f} s   {ratio:5.2f}x   {first}")
    print(f"  second ingest (same lines)     {second_s:8.2f} s   {second_s / reference_s:5.2f}x   {second}")
    print(f"  rows after both                {rows}")
    ok = rows == lines and first.new == lines and second.new == 0 and second.updated == 0 and ratio <= TARGET
    print(f"target: {lines} rows, second ingest changes nothing, first <= {TARGET}x reference: "
          f"{'met' if ok else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

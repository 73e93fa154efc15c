"""What the CLI backend asks Slurm: each query's argv and the environment every command runs with.

The ``--format`` of each query is the one its parser reads (``gateway.core.slurm.parse``,
``gateway.core.accounting.parse``); a change to what is asked goes here and there together.
Times go out and come back in UTC (``SLURM_ENV``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from gateway.core.accounting.parse import LEDGER_FORMAT
from gateway.core.slurm.parse import SACCT_FORMAT, SQUEUE_FORMAT, US

# Every Slurm command runs with these, so times come back in UTC, ISO-like.
SLURM_ENV = {"TZ": "UTC", "SLURM_TIME_FORMAT": "standard"}
TAG_LOOKBACK = timedelta(days=14)


def squeue_argv(job_ids: Sequence[str]) -> list[str]:
    """The one squeue command a refresh runs for live jobs (array tasks one by one)."""
    return ["squeue", "--noheader", "--array", f"--format={SQUEUE_FORMAT}", f"--jobs={','.join(job_ids)}"]


def sacct_argv(job_ids: Sequence[str]) -> list[str]:
    """The one sacct command a refresh runs for jobs that left the queue (requeues included)."""
    return [
        "sacct",
        "--noheader",
        "--parsable2",
        f"--delimiter={US}",
        "--duplicates",
        "--allusers",
        "--units=K",
        f"--format={SACCT_FORMAT}",
        f"--jobs={','.join(job_ids)}",
    ]


def live_comments_argv() -> list[str]:
    """squeue of every job still known to the controller: base job id and comment, one a line."""
    return ["squeue", "--noheader", "--all", "--states=all", f"--format=%F{US}%k"]


def usage_argv(accounts: Sequence[str], since: datetime) -> list[str]:
    """sacct of the allocations (no steps) charged to ``accounts`` since ``since``, requeues included."""
    return [
        "sacct",
        "--noheader",
        "--parsable2",
        f"--delimiter={US}",
        "--allocations",
        "--duplicates",
        "--allusers",
        "--units=K",
        f"--accounts={','.join(accounts)}",
        f"--starttime={since.astimezone(UTC):%Y-%m-%dT%H:%M:%S}",
        "--endtime=now",
        f"--format={SACCT_FORMAT}",
    ]


def ledger_argv(start: datetime, end: datetime) -> list[str]:
    """sacct of every record (all users, requeued attempts, states, steps) in [start, end)."""
    return [
        "sacct",
        "--noheader",
        "--parsable2",
        f"--delimiter={US}",
        "--allusers",
        "--duplicates",
        "--units=K",
        f"--starttime={start.astimezone(UTC):%Y-%m-%dT%H:%M:%S}",
        f"--endtime={end.astimezone(UTC):%Y-%m-%dT%H:%M:%S}",
        f"--format={LEDGER_FORMAT}",
    ]


def ended_comments_argv(start: datetime) -> list[str]:
    """sacct of every allocation since ``start`` (UTC): job id and comment, one a line."""
    return [
        "sacct",
        "--noheader",
        "--parsable2",
        f"--delimiter={US}",
        "--allusers",
        "--allocations",
        "--duplicates",
        f"--starttime={start:%Y-%m-%dT%H:%M:%S}",
        "--format=JobID,Comment",
    ]

"""What the gateway needs from a Slurm backend (CLI now; pyslurm or REST later)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from gateway.core.slurm_records import (
    AccountingRecord,
    JobStatus,
    NodeInfo,
    PartitionInfo,
)


class SlurmBackend(Protocol):
    def submit(
        self, script: str, *, tag: str, as_user: str | None = None, exclude_nodes: Sequence[str] = ()
    ) -> str:
        """Submit a batch script with ``tag`` in its comment, as OS user ``as_user``, kept off
        ``exclude_nodes``; return the job id.

        Raises SubmitRejected when Slurm refuses it, SlurmUnavailable when
        Slurm does not answer (the job may or may not exist: look it up by tag).
        """
        ...

    def cancel(self, job_id: str) -> None:
        """Cancel a job (or a whole array); a job that already ended is not an error."""
        ...

    def status(self, job_ids: Sequence[str]) -> list[JobStatus]:
        """Live jobs among ``job_ids`` (array tasks one by one), in one call.

        A job missing from the answer has left the queue (ask accounting).
        """
        ...

    def accounting(self, job_ids: Sequence[str]) -> list[AccountingRecord]:
        """Accounting of ``job_ids`` in one call: one record per attempt, requeues included."""
        ...

    def find_by_tag(self, tag: str, *, since: datetime | None = None) -> list[str]:
        """Ids of the jobs whose comment is ``tag``, live or finished since ``since``."""
        ...

    def jobs(
        self, *, accounts: Sequence[str] = (), partitions: Sequence[str] = (), users: Sequence[str] = ()
    ) -> list[JobStatus]:
        """Every live job on the cluster (gateway runs and others), narrowed by the filters."""
        ...

    def usage(self, accounts: Sequence[str], *, since: datetime) -> list[AccountingRecord]:
        """Allocations charged to ``accounts`` since ``since`` (requeues included), in one call."""
        ...

    def partitions(self) -> list[PartitionInfo]: ...

    def nodes(self) -> list[NodeInfo]: ...

"""What the gateway needs from Slurm (CLI now; pyslurm or REST later): jobs, and associations.

``SlurmBackend`` submits and follows jobs (``SlurmCLI``); ``SlurmAssociations``
keeps the gateway's Slurm accounts and their caps in step (``SlurmAccounts``,
over ``sacctmgr``). Services hold these protocols; ``gateway.wiring`` picks
the implementations.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from datetime import datetime
from typing import Protocol

from gateway.adapters.slurm.associations import AccountSpec, Change
from gateway.core.accounting.parse import LedgerRead
from gateway.core.slurm.records import (
    AccountingRecord,
    JobStatus,
    NodeInfo,
    PartitionInfo,
)


class PreparedSubmit(Protocol):
    """A submission made ready before its script exists (``SlurmBackend.prepare_submit``)."""

    def send(self, script: str) -> str:
        """Submit ``script``; its job id.

        Raises SubmitRejected when Slurm refuses the job or sbatch cannot be started (nothing was
        queued), SlurmUnavailable when Slurm does not answer (the job may or may not exist: look it
        up by tag), SlurmOutputError when the answer holds no job id.
        """
        ...

    def abandon(self) -> None:
        """Give the submission up: nothing is, or will be, queued."""
        ...


class SlurmBackend(Protocol):
    def prepare_submit(
        self,
        *,
        tag: str,
        as_user: str | None = None,
        exclude_nodes: Sequence[str] = (),
        comment: str | None = None,
        mail_user: str | None = None,
        script_path: str | None = None,
    ) -> PreparedSubmit:
        """The one way to submit: a batch script with ``tag`` in its comment (then the user's
        ``comment``, after a space: ``tags.slurm_comment``), as OS user ``as_user``, kept off
        ``exclude_nodes``, mailing ``mail_user`` (sbatch's ``--mail-user``, any text: an argument
        of sbatch, never a line of the script), from the file ``script_path`` where the caller has
        written the script (the CLI backend gives sbatch that path, so Slurm records it as the job's
        Command and a job can resubmit it; the REST backend sends the text), in two steps, so that
        what a submission costs before its script is needed overlaps the caller's work:
        ``send(script)`` submits and returns the job id, ``abandon()`` gives it up
        (``gateway.services.runs.submission`` is the caller).

        The CLI backend starts ``sbatch`` (through ``runuser`` for another user) here, and it waits
        for the script on its stdin (given a ``script_path``, it starts sbatch with that path at
        ``send`` instead): until ``send``, nothing can be queued, so the gateway commits
        the attempt in the meantime and keeps its exactly-once order (committed, then submitted).
        Raises SpecError for a malformed tag, node name or comment; everything else comes from
        ``send``.
        """
        ...

    def test_only(
        self,
        script: str,
        *,
        as_user: str | None = None,
        comment: str | None = None,
        mail_user: str | None = None,
    ) -> str:
        """Ask Slurm whether and when it would start ``script`` (``sbatch --test-only``), as OS user
        ``as_user``, queueing nothing; returns Slurm's answer (expected start, nodes, partition).

        Raises SubmitRejected when Slurm refuses the job, SlurmUnavailable when it does not answer.
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

    def comments(self) -> list[tuple[str, str]]:
        """(base job id, comment) of every job the controller still holds (all users; ended ones too,
        for MinJobAge), in one call: how the refresh finds jobs that runs submitted themselves."""
        ...

    def usage(self, accounts: Sequence[str], *, since: datetime) -> list[AccountingRecord]:
        """Allocations charged to ``accounts`` since ``since`` (requeues included), in one call."""
        ...

    def partitions(self) -> list[PartitionInfo]:
        """Every partition: its state, nodes, CPUs, time limits (minutes), QOS and allowed accounts."""
        ...

    def nodes(self) -> list[NodeInfo]:
        """Every node: its state and reason, partitions, CPUs, memory (MB) and GPUs, total and allocated."""
        ...


class ClusterSlurm(SlurmBackend, Protocol):
    """One cluster's backend as the registry holds it (``CachedSlurm`` over a ``SlurmBackend``)."""

    backend: SlurmBackend  # the backend behind the cache: every call of it asks Slurm

    def forget(self, *keys: Hashable) -> None:
        """Drop the cached cluster facts of ``keys`` (all when none is given)."""
        ...

    def node_sizes(self) -> list[NodeInfo]:
        """``nodes`` for what a job never changes (partitions, CPUs, memory, GPUs): cached as ``nodes``
        is, but kept when a submission or a cancel drops ``nodes``, so its allocation figures may be
        older than the gateway's last submission."""
        ...

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """``SlurmLedger.ledger`` of this cluster."""
        ...


class SlurmLedger(Protocol):
    """The cluster's accounting records, for the accounting ingest (``SlurmCLI.ledger``)."""

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """Every allocation record (all users, each requeued attempt, all states, with steps) that was
        eligible, running or ended in [start, end) (UTC), in one call.

        Raises SlurmUnavailable when Slurm does not answer, SlurmError when the read fails.
        """
        ...


class SlurmAssociations(Protocol):
    """The gateway-managed Slurm accounts and associations that carry the projects' caps."""

    def plan(self, desired: Sequence[AccountSpec], *, scope: Collection[str] | None = None) -> list[Change]:
        """What ``apply`` would change so Slurm matches ``desired``, comparing only the managed
        accounts in ``scope`` plus those in ``desired`` (all managed ones when None).

        Raises Conflict when a desired account exists but is not the gateway's.
        """
        ...

    def apply(self, changes: Sequence[Change]) -> None:
        """Make the changes ``plan`` gave, all checked before the first one runs.

        Raises Conflict when a removal meets jobs still in the queue, SlurmError
        when Slurm refuses a change.
        """
        ...

"""A run, its attempts and their timeline as the services pass them around, and what a refresh writes.

They are plain frozen dataclasses; ORM rows never leave the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Final

from gateway.core.runs.paging import Cursor
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec


@dataclass(frozen=True)
class StateEvent:
    id: int
    attempt_id: int
    at: datetime
    from_state: RunState | None
    to_state: RunState
    slurm_state: str | None
    reason: str | None
    source: str  # "gateway", "squeue", "sacct", "reconcile"


@dataclass(frozen=True)
class Attempt:
    id: int
    run_id: str
    number: int
    tag: str
    job_id: str | None
    state: RunState
    slurm_state: str | None
    reason: str | None
    stale: bool
    node_list: str | None
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    exit_code: int | None
    exit_signal: int | None
    elapsed_s: int | None
    alloc_tres: dict[str, str]
    max_rss_kb: int | None
    cancelled_by_uid: int | None
    timelimit_min: int | None
    tasks: dict[str, dict[str, Any]]  # array tasks by index: state, exit_code, node_list ...
    array_size: int | None  # number of array tasks; None for a plain job
    expected_start: datetime | None  # Slurm's start estimate while pending
    created_at: datetime
    updated_at: datetime
    events: list[StateEvent] = field(default_factory=list)
    failure: dict[str, Any] | None = None  # class, summary, action, evidence (once it failed)
    # submit, retry (the gateway's policy), requeue (Slurm's, same job id) or resubmit (the job's own
    # sbatch of its script: a job id of its own, adopted by the refresh)
    origin: str = "submit"
    excluded_nodes: list[str] | None = None
    slurm_record: int = 0  # which of sacct --duplicates' records of the job this attempt is
    superseded: bool = False  # Slurm requeued its job: a later attempt carries on with the same job id
    retry_at: datetime | None = None  # when the gateway's retry policy resubmits it
    cluster: str | None = None  # the Slurm cluster its job is on (None: recorded before, the first cluster)


@dataclass(frozen=True)
class Run:
    id: str
    name: str
    project: str
    queue: str
    submitter: str
    tags: list[str]
    state: RunState
    spec: RunSpec  # as submitted (validated then, and again when read back)
    spec_sha256: str
    script: str
    script_sha256: str
    template_name: str
    template_version: str
    run_dir: str
    created_at: datetime
    updated_at: datetime
    attempts: list[Attempt] = field(default_factory=list)
    parent_run_id: str | None = None  # the run this one was derived from (rerun)
    derived_diff: list[dict[str, Any]] | None = None  # the spec changes against the parent
    code: dict[str, Any] | None = None  # git repo, commit, branch, dirty, diff_sha256 (at submission)
    environment: dict[str, Any] | None = None  # container image and digest, venv packages, modules
    os_user: str | None = None  # the OS account its jobs run as (None: recorded before the gateway kept it)
    # who asked for it when that is not ``submitter``: a lead's rerun of another person's run, which
    # runs as its owner (the submitter) and names the lead here
    requested_by: str | None = None

    @property
    def latest(self) -> Attempt | None:
        """The newest attempt; None before the first was recorded."""
        return self.attempts[-1] if self.attempts else None


@dataclass(frozen=True)
class NewInput:
    """A dataset version a new run reads, as the store records it."""

    position: int
    ref: str  # as the spec named it
    version_id: str
    path: str  # where the job reads it
    verify: str  # exists | digest
    env_var: str


@dataclass(frozen=True)
class NewRun:
    """A run to record, with its first attempt (SUBMITTING, tagged ``first_tag``)."""

    id: str
    spec: RunSpec
    submitter: str
    os_user: str
    script: str
    script_sha256: str
    template_name: str
    template_version: str
    run_dir: str
    first_tag: str
    array_size: int | None = None  # number of array tasks; None for a plain job
    parent_run_id: str | None = None  # a rerun: the run it derives from
    derived_diff: list[dict[str, Any]] | None = None  # a rerun: its spec changes against the parent
    code: dict[str, Any] | None = None
    environment: dict[str, Any] | None = None
    inputs: tuple[NewInput, ...] = ()
    requested_by: str | None = None  # a rerun on the owner's behalf: the caller who asked for it
    cluster: str | None = None  # the cluster its queue's partition is on (recorded on the first attempt)


@dataclass(frozen=True)
class Page:
    items: list[Run]
    next_cursor: Cursor | None  # where the next page starts; None on the last


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing shows, newest first, ``limit`` at a time (``cursor``: the next page).

    ``since``/``until`` bound ``created_at`` (aware UTC datetimes): ``since`` <= created_at < ``until``.
    """

    project: str | None = None
    state: RunState | None = None
    submitter: str | None = None
    tag: str | None = None
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before
    cluster: str | None = None  # with an attempt on this cluster
    cluster_first: bool = False  # ``cluster`` is the site's first (attempts with no cluster recorded count)
    cursor: Cursor | None = None  # start after this run (the previous page's next_cursor)
    limit: int = 50


class Keep:
    """The marker for "leave this column as it is" in ``AttemptFacts``."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = Keep()


@dataclass(frozen=True)
class AttemptFacts:
    """What Slurm said about one attempt, field by field; a field left at ``KEEP`` is not written.

    The names are the attempt's own (``Attempt``); units are in them.
    """

    node_list: str | None | Keep = KEEP
    submit_time: datetime | None | Keep = KEEP
    start_time: datetime | None | Keep = KEEP
    end_time: datetime | None | Keep = KEEP
    expected_start: datetime | None | Keep = KEEP  # Slurm's start estimate while pending
    exit_code: int | None | Keep = KEEP
    exit_signal: int | None | Keep = KEEP
    elapsed_s: int | None | Keep = KEEP
    alloc_tres: dict[str, str] | Keep = KEEP
    max_rss_kb: int | None | Keep = KEEP
    cancelled_by_uid: int | None | Keep = KEEP
    timelimit_min: int | None | Keep = KEEP
    tasks: dict[str, dict[str, Any]] | Keep = KEEP  # array tasks by index

    def changes(self) -> dict[str, Any]:
        """The fields to write, by name (those not left at ``KEEP``)."""
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not KEEP}


@dataclass(frozen=True)
class AttemptUpdate:
    """What a refresh learned about one attempt; the store writes it and its event."""

    attempt_id: int
    state: RunState
    slurm_state: str | None = None
    reason: str | None = None
    stale: bool = False
    event_at: datetime | None = None
    source: str = "gateway"
    facts: AttemptFacts = AttemptFacts()

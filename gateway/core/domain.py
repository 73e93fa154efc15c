"""Domain values the services pass around: runs, attempts and their timeline.

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


# -- who may do what ------------------------------------------------------------------

# Per project: viewer < member < lead in power (site admins are above all); a reviewer reads as a
# viewer does and may also record evaluation reviews (gateway/core/access/policy.py).
ROLES = ("viewer", "reviewer", "member", "lead")


@dataclass(frozen=True)
class Quota:
    """Caps; None means no cap."""

    gpus: int | None = None  # GPUs in use at once
    gpu_hours_per_month: int | None = None  # per calendar month (UTC)
    jobs_in_queue: int | None = None  # queued + running


@dataclass(frozen=True)
class User:
    name: str
    os_user: str | None
    is_admin: bool
    disabled: bool


@dataclass(frozen=True)
class Token:
    id: int
    user: str
    name: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    scope: str = "api"  # TOKEN_SCOPES: "api" (the API and web UI) or "metrics" (GET /metrics only)


TOKEN_SCOPES = ("api", "metrics")


@dataclass(frozen=True)
class Member:
    user: str
    role: str
    quota: Quota


@dataclass(frozen=True)
class Queue:
    name: str
    partition: str
    qos: str | None
    gpu_types: list[str]
    max_walltime_min: int | None
    retry: dict[str, Any] | None = None  # the queue's retry policy (classes, max_attempts, backoff_s)
    whole_node_mem: bool = False  # --mem=0 (all of each node's memory) is allowed on this queue
    cluster: str | None = None  # the cluster whose partition it is (None: the site's first cluster)


@dataclass(frozen=True)
class ClusterSubmitHost:
    """The SSH submit host (login node) of one cluster: where its Slurm commands run (docs/clusters.md).

    The same settings the server's own ``GATEWAY_SUBMIT_HOST`` and ``GATEWAY_SSH_*`` give, for this
    cluster alone: ``login`` is ``per_user_key`` (each job user's key, ``user_keys`` with ``{user}``) or
    ``sudo`` (``service_user`` runs ``sudo -n -u USER``); paths are on the gateway's host.
    """

    host: str
    known_hosts: str
    service_user: str
    service_key: str
    port: int = 22
    login: str = "per_user_key"
    user_keys: str = "/etc/gateway/ssh/users/{user}"


@dataclass(frozen=True)
class ClusterRestd:
    """A slurmrestd the site runs for one cluster (rest_auth/jwt), reached at ``url`` (``http://HOST:PORT``
    or ``unix:///PATH``); the gateway signs each user's short-lived token (``token_lifespan_s``) with
    the HS256 key in ``jwt_key``, a file on the gateway's host (docs/clusters.md)."""

    url: str
    jwt_key: str
    token_lifespan_s: int = 300


@dataclass(frozen=True)
class Cluster:
    """One Slurm cluster behind the gateway, as the site file lists it (docs/clusters.md).

    The CLI backend reaches it with ``SLURM_CONF=slurm_conf`` when that is given, else with
    ``-M slurm_name`` (default: ``name``), Slurm's multi-cluster option on one slurmdbd; with a
    ``submit_host`` its commands run there over SSH. ``backend`` None means the server's
    ``slurm_backend``; ``rest`` starts its slurmrestd daemons with ``SLURM_CONF=slurm_conf``, their
    sockets in ``restd_socket_dir`` (None: the server's socket directory / the cluster's name); with
    ``restd`` it uses the site's own slurmrestd instead and starts none.
    """

    name: str
    slurm_name: str | None = None
    slurm_conf: str | None = None
    backend: str | None = None  # "cli" or "rest"; None: the server's slurm_backend
    restd_socket_dir: str | None = None
    submit_host: ClusterSubmitHost | None = None  # its Slurm commands over SSH (None: the server's runner)
    restd: ClusterRestd | None = None  # rest: the site-run slurmrestd (None: the gateway's own daemons)

    @property
    def m_name(self) -> str | None:
        """The ``-M`` name its commands carry; None when ``slurm_conf`` points at it instead."""
        return None if self.slurm_conf else (self.slurm_name or self.name)


@dataclass(frozen=True)
class Project:
    name: str
    description: str
    slurm_account: str
    quota: Quota
    members: list[Member]
    queues: list[Queue]

    def queue(self, name: str) -> Queue | None:
        """The project's queue called ``name``; None when it has none by that name."""
        return next((q for q in self.queues if q.name == name), None)

    def role_of(self, user: str) -> str | None:
        """``user``'s role in the project (one of :data:`ROLES`); None when not a member."""
        return next((m.role for m in self.members if m.user == user), None)


OPERATOR = "operator"  # the audit actor of operator commands; reserved, never a user's name
OPERATOR_SOURCE = "gateway host"


@dataclass(frozen=True)
class Principal:
    """The caller of an operation: a user, with their site-wide and per-project roles."""

    user: str
    is_admin: bool
    roles: dict[str, str]  # project -> role
    os_user: str | None = None
    source: str | None = None  # where the request came from (client address)

    def role(self, project: str) -> str | None:
        """The caller's role in ``project``; None when not a member (site admin or not)."""
        return self.roles.get(project)

    @classmethod
    def operator(cls) -> Principal:
        """The operator on the gateway host (``gw admin ...``): a site admin who is no gateway user.

        Services check permissions for every caller; operator commands pass
        this principal explicitly. Audit events name it ``operator``, from
        ``gateway host`` (no site file may add a user by that name).
        """
        return cls(user=OPERATOR, is_admin=True, roles={}, os_user=None, source=OPERATOR_SOURCE)


@dataclass(frozen=True)
class AuditEvent:
    seq: int
    at: datetime
    actor: str
    action: str
    target_type: str
    target_id: str
    project: str | None
    source: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    prev_hash: str
    hash: str


# -- datasets and lineage ----------------------------------------------------------------


@dataclass(frozen=True)
class DatasetVersion:
    """One immutable version of a dataset, identified by its manifest digest."""

    id: str
    dataset_id: str
    project: str  # the owning project
    name: str
    number: int  # 1, 2, ... in registration order within the dataset
    digest: str  # sha256 over the manifest (gateway.core.lineage.manifest)
    kind: str  # directory | file
    path: str | None  # where jobs read it (absolute path on the cluster)
    source_uri: str
    file_count: int
    total_bytes: int
    description: str
    license: str
    registered_by: str
    registered_at: datetime
    parent_id: str | None = None
    made_by_run_id: str | None = None
    made_by_command: str | None = None

    @property
    def ref(self) -> str:
        """``project/name@number``: how people and specs name this version."""
        return f"{self.project}/{self.name}@{self.number}"


@dataclass(frozen=True)
class Dataset:
    id: str
    project: str
    name: str
    description: str
    created_by: str
    created_at: datetime
    shared_with: list[str] = field(default_factory=list)  # projects that may read it
    latest: DatasetVersion | None = None
    version_count: int = 0


@dataclass(frozen=True)
class RunInput:
    """A dataset version a run was submitted with, and the path its job was given."""

    position: int
    ref: str  # as the spec named it
    version: DatasetVersion
    path: str
    verify: str  # exists | digest
    env_var: str  # the job's variable holding the path


@dataclass(frozen=True)
class Artifact:
    """A file a run declared as output, as one attempt left it."""

    id: int
    run_id: str
    attempt_id: int
    attempt_number: int
    path: str  # relative to the run directory
    size_bytes: int
    sha256: str
    created_at: datetime

"""Accounting records: what slurmdbd keeps about every job attempt on the cluster, as plain values.

``SacctRecord`` is one allocation (one job attempt: a requeued job has one
per run, each with its own submit time) as ``sacct --duplicates`` prints it,
with its steps folded in; ``LedgerRecord`` is the same record as the
gateway keeps it, with its link to a gateway attempt (if any), the project
it is charged to and its price. Parsing is in ``core/accounting/parse.py``,
the cost math in ``core/accounting/cost.py``.

Record identity: ``RecordKey`` = (cluster, JobIDRaw, Submit). It is the
unique key slurmdbd itself puts on its job table (``id_job, time_submit``
per cluster): a requeue starts a new row with a new submit time (and a new
``DBIndex``), while a row that changes (a pending job that started, a
running one that ended, an array's pending rest that became its last task)
keeps it. ``DBIndex`` is kept beside it, but not trusted as the key: it is
an auto-increment that starts again when slurmdbd's database is rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# States in which an allocation is still going (its record will change).
LIVE_STATES = frozenset({"PENDING", "RUNNING", "SUSPENDED", "REQUEUED_HOLD", "RESIZING", "REQUEUED_FED"})
# Ended states whose money counts as spent on an attempt that did not succeed ("failed" in reports):
# everything that ended other than COMPLETED or CANCELLED, requeued and preempted attempts included.
# A cancellation is its own outcome (someone asked for it), counted apart ("cancelled" in reports).
SUCCESS_STATES = frozenset({"COMPLETED"})
CANCELLED_STATE = "CANCELLED"


@dataclass(frozen=True)
class Tres:
    """A TRES list (``AllocTRES`` / ``ReqTRES``) as numbers; 0 where Slurm gave none."""

    cpus: int = 0
    mem_mb: int = 0  # MiB
    gpus: int = 0
    gpu_type: str | None = None  # from gres/gpu:<type>=N; None when untyped
    nodes: int = 0
    billing: int = 0  # Slurm's billing TRES (its own weighted charge units)

    @property
    def mem_gb(self) -> float:
        """Memory in GiB."""
        return self.mem_mb / 1024


@dataclass(frozen=True)
class RecordKey:
    """slurmdbd's identity of one allocation record (see the module docstring)."""

    cluster: str
    job_id_raw: str  # the numeric id: "127" for task 4 of array 123
    submit_time: datetime  # UTC, whole seconds


@dataclass(frozen=True)
class SacctStep:
    """One step of an allocation (``batch``, ``extern``, ``0`` ...)."""

    step: str
    name: str
    state: str  # Slurm's state word, e.g. COMPLETED, CANCELLED, OUT_OF_MEMORY
    exit_code: int | None
    exit_signal: int | None
    start_time: datetime | None
    end_time: datetime | None
    elapsed_s: int
    node_list: str | None
    max_rss_kb: int | None  # KiB
    tres_usage_in_max: str | None  # TRESUsageInMax as Slurm prints it (cpu=..,mem=..,energy=..)


@dataclass(frozen=True)
class SacctRecord:
    """One allocation record from ``sacct --duplicates`` (one job attempt), steps folded in."""

    cluster: str
    db_index: int | None  # slurmdbd's DBIndex of the row (informational)
    job_id: str  # as Slurm shows it: "123", "123_4", "123_[5-9]"
    job_id_raw: str
    array_job_id: str | None
    array_task_id: str | None
    name: str
    user: str
    account: str | None
    partition: str | None
    qos: str | None
    state: str  # Slurm's state word (CANCELLED, never "CANCELLED by 0")
    cancelled_by_uid: int | None
    exit_code: int | None
    exit_signal: int | None
    submit_time: datetime  # UTC
    eligible_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    elapsed_s: int  # seconds (ElapsedRaw)
    timelimit_min: int | None  # None: unlimited
    alloc: Tres
    req: Tres
    alloc_tres: str  # AllocTRES as printed (kept for evidence)
    req_tres: str
    node_list: str | None
    comment: str | None  # the gateway's tag for its own jobs (a requeued record's comment is empty)
    max_rss_kb: int | None  # KiB, the largest over the steps
    steps: tuple[SacctStep, ...] = ()

    @property
    def key(self) -> RecordKey:
        """This record's identity."""
        return RecordKey(self.cluster, self.job_id_raw, self.submit_time)

    @property
    def ended(self) -> bool:
        """True once the allocation ended (its record will not change any more)."""
        return self.end_time is not None and self.state not in LIVE_STATES

    @property
    def failed(self) -> bool:
        """True when it ended other than COMPLETED or CANCELLED (failed, timed out, requeued ...)."""
        return self.ended and self.state not in SUCCESS_STATES and not self.cancelled

    @property
    def cancelled(self) -> bool:
        """True when it ended because someone cancelled it (``CANCELLED``, whoever asked)."""
        return self.ended and self.state == CANCELLED_STATE

    @property
    def gpu_hours(self) -> float:
        """Allocated GPUs x elapsed, in GPU-hours."""
        return self.alloc.gpus * self.elapsed_s / 3600

    @property
    def cpu_hours(self) -> float:
        """Allocated CPU cores x elapsed, in core-hours."""
        return self.alloc.cpus * self.elapsed_s / 3600


@dataclass(frozen=True)
class RecordLink:
    """Who a record is charged to: a gateway attempt (when it is one) and a project (when known)."""

    run_id: str | None = None
    attempt_id: int | None = None  # attempts.id
    attempt_number: int | None = None
    project: str | None = None  # the run's project, else the project whose Slurm account it is


@dataclass(frozen=True)
class CostPart:
    """The cost of one stretch of a record priced by one rate (a rate change splits a record)."""

    rate_id: str  # which rate: "<partition>/<gpu type or *>@<valid from>"
    start: datetime
    end: datetime
    hours: float
    cost: float


@dataclass(frozen=True)
class Price:
    """A record's price: the rate table version that priced it and the parts it was split into."""

    rate_version: int
    currency: str
    cost: float
    parts: tuple[CostPart, ...]
    note: str | None = None  # e.g. "no rate for partition gpu" (then cost is 0)


@dataclass(frozen=True)
class LedgerRecord:
    """An accounting record as the gateway keeps it."""

    id: int
    record: SacctRecord
    link: RecordLink
    price: Price | None  # None until a rate table exists
    first_seen_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ClusterIngest:
    """What one ingest did on one cluster; ``error`` says why its sacct gave nothing (it was not read)."""

    cluster: str
    read: int = 0
    new: int = 0
    updated: int = 0
    linked: int = 0
    error: str | None = None


@dataclass(frozen=True)
class IngestCounts:
    """What one ingest did: records read from sacct, new ones, changed ones, newly linked ones
    (summed over the clusters), and the same per cluster."""

    read: int
    new: int
    updated: int
    linked: int
    priced: int = 0
    clusters: tuple[ClusterIngest, ...] = ()


@dataclass(frozen=True)
class GatewayAttempt:
    """A gateway attempt that has a Slurm job id: what linking a record to it needs."""

    attempt_id: int
    run_id: str
    number: int
    tag: str
    job_id: str  # the base job id ("123" for a whole array)
    slurm_record: int  # which of sacct --duplicates' records of the job it is (0: the first)
    submit_time: datetime | None
    project: str
    cluster: str  # the Slurm cluster it was submitted to: job ids are unique per cluster only

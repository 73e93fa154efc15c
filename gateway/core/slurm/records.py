"""Plain values read from Slurm's output (squeue, sacct, scontrol)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from gateway.core.slurm.states import RunState
from gateway.core.slurm.units import gpus_per_node, mem_to_kb


@dataclass(frozen=True)
class JobStatus:
    """One live job (or array task) as ``squeue`` shows it."""

    job_id: str  # "123", or "123_4" for an array task
    array_job_id: str | None
    array_task_id: str | None
    slurm_state: str
    state: RunState
    reason: str | None  # None when Slurm says "None"
    node_list: str | None
    partition: str
    user: str
    name: str
    comment: str | None
    submit_time: datetime | None
    start_time: datetime | None  # actual start when running; Slurm's estimate when pending
    nodes: int | None
    cpus: int | None
    tres_per_node: str | None  # e.g. "gres:gpu:2" or "gres:gpu:fake:2"
    priority: int | None = None
    account: str | None = None

    @property
    def gpus(self) -> int:
        """GPUs the job asks for per node times its nodes (a --gpus per-job request is not shown)."""
        return gpus_per_node(self.tres_per_node) * (self.nodes or 1)


@dataclass(frozen=True)
class StepRecord:
    """A job step from ``sacct`` (``batch``, ``extern``, ``0`` ...)."""

    step: str
    slurm_state: str
    exit_code: int | None
    exit_signal: int | None
    max_rss_kb: int | None
    node_list: str | None


@dataclass(frozen=True)
class AccountingRecord:
    """One attempt of one job from ``sacct`` (a requeue is a new record)."""

    job_id: str  # as Slurm shows it: "123", "123_4"
    job_id_raw: str  # the unique numeric id: "123", "127" for task 4 of array 123
    array_job_id: str | None
    array_task_id: str | None
    name: str
    user: str
    account: str | None
    partition: str | None
    comment: str | None
    slurm_state: str
    state: RunState
    cancelled_by_uid: int | None
    exit_code: int | None
    exit_signal: int | None
    submit_time: datetime | None  # UTC
    start_time: datetime | None
    end_time: datetime | None
    elapsed_s: int
    timelimit_min: int | None
    alloc_tres: dict[str, str]
    node_list: str | None
    reason: str | None
    max_rss_kb: int | None  # the largest over the job's steps
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def alloc_cpus(self) -> int:
        """CPUs allocated (``cpu`` in AllocTRES); 0 when Slurm gave none."""
        return int(self.alloc_tres.get("cpu", "0") or 0)

    @property
    def alloc_mem_mb(self) -> int:
        """Memory allocated in MiB (``mem`` in AllocTRES, a bare number read as MiB); 0 when none."""
        kb = mem_to_kb(self.alloc_tres.get("mem", ""), default_unit="M")
        return (kb or 0) // 1024

    @property
    def alloc_gpus(self) -> int:
        """GPUs allocated (``gres/gpu`` in AllocTRES); 0 when none."""
        return int(self.alloc_tres.get("gres/gpu", "0") or 0)

    @property
    def alloc_nodes(self) -> int:
        """Nodes allocated (``node`` in AllocTRES); 0 when none."""
        return int(self.alloc_tres.get("node", "0") or 0)


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    is_default: bool
    state: str
    node_list: str
    total_nodes: int
    total_cpus: int
    max_time_min: int | None  # None: unlimited
    default_time_min: int | None
    qos: str | None
    allow_accounts: str | None
    # The partition's limits on one job (None: UNLIMITED, or not set). Memory in MiB, as Slurm gives it;
    # a partition has either the per-node or the per-CPU form of each memory limit, never both.
    max_nodes: int | None = None  # MaxNodes: nodes one job may have
    min_nodes: int = 0  # MinNodes: nodes one job must ask for
    max_cpus_per_node: int | None = None  # MaxCPUsPerNode: CPUs the partition's jobs may use on a node
    max_mem_per_node_mb: int | None = None  # MaxMemPerNode
    max_mem_per_cpu_mb: int | None = None  # MaxMemPerCPU: Slurm raises a job's CPUs to stay under it
    def_mem_per_node_mb: int | None = None  # DefMemPerNode: a job's memory when it asks none
    def_mem_per_cpu_mb: int | None = None  # DefMemPerCPU: the same, per allocated CPU


@dataclass(frozen=True)
class NodeInfo:
    name: str
    state: str  # e.g. IDLE, MIXED, ALLOCATED, DOWN+DRAIN
    partitions: list[str]
    cpus: int
    alloc_cpus: int
    real_memory_mb: int
    alloc_memory_mb: int
    gpus: int
    gpus_alloc: int
    gpu_type: str | None
    reason: str | None

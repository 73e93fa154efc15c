"""Response and request models of accounting: a run's cost, and an ingest's counts."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from gateway.core.accounting.records import IngestCounts
from gateway.services.accounting.ledger import RunCost


class AttemptCostPublic(BaseModel):
    attempt: int | None = Field(description="The gateway attempt number; null for a record linked to none")
    job_id: str = Field(description="The Slurm job id as sacct shows it (123, 123_4)")
    state: str = Field(description="Slurm's state of this record: COMPLETED, FAILED, REQUEUED ...")
    elapsed_s: int = Field(description="Elapsed time, seconds")
    gpu_hours: float = Field(description="Allocated GPUs x elapsed, GPU-hours")
    cpu_hours: float = Field(description="Allocated CPU cores x elapsed, core-hours")
    cost: float | None = Field(description="In `currency`; null when not priced (no rate table)")
    rate_version: int | None = Field(description="The rate table version that priced it")
    failed: bool = Field(
        description="It failed: ended other than COMPLETED or CANCELLED (failed, requeued ...)"
    )
    cancelled: bool = Field(
        default=False,
        description="It ended CANCELLED: someone asked for that, which is counted apart from failures",
    )
    cluster: str = Field(default="", description="The Slurm cluster it ran on, as sacct names it (Cluster)")
    rates: list[str] = Field(
        default_factory=list,
        description="The rates that priced it, by id: [cluster:]partition/gpu type@valid from; a cluster's "
        "own rate names its cluster (docs/clusters.md)",
    )


class RunCostPublic(BaseModel):
    run_id: str
    currency: str | None = Field(description="ISO 4217 code of every cost here; null when nothing is priced")
    total: float = Field(description="Sum of the priced records' cost")
    failed_total: float = Field(
        description="The part of `total` spent on records that failed (not cancelled)"
    )
    cancelled_total: float = Field(default=0.0, description="The part of `total` spent on cancelled records")
    attempts: list[AttemptCostPublic] = Field(description="One per accounting record (a requeue adds one)")
    priced: bool = Field(description="Every record is priced")
    note: str = Field(description="What the numbers rest on, or why there are none")

    @classmethod
    def of(cls, cost: RunCost) -> RunCostPublic:
        """The response body of a service ``RunCost``."""
        return cls(
            run_id=cost.run_id,
            currency=cost.currency,
            total=cost.total,
            failed_total=cost.failed_total,
            cancelled_total=cost.cancelled_total,
            attempts=[AttemptCostPublic(**{**a.__dict__, "rates": list(a.rates)}) for a in cost.attempts],
            priced=cost.priced,
            note=cost.note,
        )


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: datetime | None = Field(
        default=None,
        description="Read sacct from this time (with a time zone, e.g. 2026-11-01T00:00:00Z); default: "
        "from the oldest record still running, else the newest seen, less the overlap",
    )


class ClusterIngestPublic(BaseModel):
    cluster: str = Field(description="The Slurm cluster (the name sacct prints as Cluster)")
    read: int = Field(description="Distinct accounting records its sacct gave")
    new: int = Field(description="Records the ledger did not have")
    updated: int = Field(description="Records updated in place")
    linked: int = Field(description="Records newly linked to a gateway attempt on this cluster")
    error: str | None = Field(description="Why this cluster was not read (its sacct failed); null: it was")


class IngestPublic(BaseModel):
    read: int = Field(description="Distinct accounting records sacct gave (every cluster)")
    new: int = Field(description="Records the ledger did not have")
    updated: int = Field(description="Records updated in place (a job that ended since ...)")
    linked: int = Field(description="Records newly linked to a gateway attempt")
    priced: int = Field(description="Records priced: those read, and older ones re-priced by a newer table")
    clusters: list[ClusterIngestPublic] = Field(
        default_factory=list, description="The same per cluster, one entry per cluster read (or tried)"
    )

    @classmethod
    def of(cls, counts: IngestCounts) -> IngestPublic:
        """The response body of an ingest's counts."""
        return cls(
            **{k: v for k, v in asdict(counts).items() if k != "clusters"},
            clusters=[ClusterIngestPublic(**asdict(c)) for c in counts.clusters],
        )

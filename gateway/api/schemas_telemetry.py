"""Response models of GPU telemetry (``GET /runs/{run_id}/telemetry``, docs/telemetry.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class GpuSummaryPublic(BaseModel):
    node: str = Field(description="The node the GPU is in (Slurm's name)")
    gpu_index: int = Field(description="The GPU's NVML index on its node")
    uuid: str = Field(description="The GPU's UUID as NVML reports it")
    name: str
    samples: int = Field(description="How many samples the sampler took of it")
    duration_s: float = Field(description="From the first sample to the last, seconds")
    util_mean_pct: float | None = Field(description="Mean utilisation over the samples, percent")
    util_max_pct: float | None
    idle_fraction: float | None = Field(description="Share of samples below the idle threshold (0..1)")
    mem_peak_mib: float | None = Field(description="The most memory used in any sample, MiB")
    mem_total_mib: float | None
    energy_wh: float | None = Field(description="Power integrated over the samples (trapezoids), Wh")
    power_mean_w: float | None
    temp_max_c: float | None
    series: list[list[float | None]] | None = Field(
        description="With ?samples=true: at most 500 samples, evenly thinned, as "
        "[seconds since the first sample, util_pct, mem_used_mib, power_w]; else null"
    )


class AttemptTelemetryPublic(BaseModel):
    attempt: int
    job_id: str | None
    cluster: str | None = Field(
        default=None, description="The Slurm cluster the attempt ran on (its nodes' names are that cluster's)"
    )
    status: str = Field(
        description="ok (samples taken), no_nvml, no_gpus, mismatch (Slurm's GPUs not found in NVML), "
        "crashed (nothing sampled before the sampler failed), unreadable, no_telemetry (no sampler file)"
    )
    note: str | None = Field(description="Why a node has no samples, what could not be read")
    idle_threshold_pct: float = Field(description="A sample below this utilisation counted as idle")
    harvested_at: str
    allocated_gpu_hours: float | None = Field(description="AllocTRES gres/gpu x elapsed, hours")
    idle_fraction: float | None = Field(description="Mean idle fraction of the sampled GPUs")
    idle_gpu_hours: float | None = Field(description="allocated_gpu_hours x idle_fraction")
    energy_wh: float | None = Field(description="Energy of the sampled GPUs together, Wh")
    gpus: list[GpuSummaryPublic]


class GpuUsePublic(BaseModel):
    """An attempt's GPU telemetry in brief, in its lineage record and evidence."""

    status: str
    gpus_sampled: int
    allocated_gpu_hours: float | None
    idle_gpu_hours: float | None
    idle_fraction: float | None
    energy_wh: float | None


class RunTelemetryPublic(BaseModel):
    run_id: str
    attempts: list[AttemptTelemetryPublic] = Field(
        description="Harvested attempts that had GPUs, by number; empty until an attempt with GPUs ended"
    )

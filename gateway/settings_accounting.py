"""The accounting and GPU telemetry part of the gateway's settings (``GATEWAY_ACCOUNTING_*``,
``GATEWAY_GPU_*``): one group of fields that ``gateway.settings.Settings`` inherits, so that every
variable is still declared once and read through the one ``Settings`` class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AccountingSettings(BaseSettings):
    """Accounting ingest (docs/accounting.md) and GPU telemetry (docs/telemetry.md) settings."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    accounting_interval_s: float = Field(
        default=300.0,
        gt=0,
        description="How often `gw serve` (the leader) ingests the cluster's sacct records (0 < value).",
    )
    accounting_window_s: float = Field(
        default=86_400.0,
        ge=60,
        description="The time span of one sacct read of an accounting ingest; a longer stretch is read "
        "in overlapping windows of this size.",
    )
    accounting_overlap_s: float = Field(
        default=3_600.0,
        ge=0,
        description="How far each accounting read reaches back before where the previous one ended "
        "(records that slurmdbd writes late are read again, and re-reads change nothing).",
    )
    accounting_lookback_days: float = Field(
        default=31.0,
        gt=0,
        description="How far back the first accounting ingest (an empty ledger) reads, and the farthest "
        "any ingest without --since reaches back for records still running.",
    )
    gpu_telemetry: bool = Field(
        default=True,
        description="Start the NVML GPU sampler (accounting/telemetry/gpu_sampler.py) on every node of a job "
        "that asks for GPUs, and harvest its samples when the attempt ends (docs/telemetry.md).",
    )
    gpu_sample_interval_s: float = Field(
        default=10.0, ge=0.5, le=3600, description="Seconds between GPU samples."
    )
    gpu_nvml: Literal["real", "fake"] = Field(
        default="real",
        description="real: the sampler reads GPUs through pynvml (nvidia-ml-py). fake: through "
        "accounting/telemetry/fake_nvml.py, the test double of the test cluster's gpu:fake devices "
        "(never with GPUs).",
    )
    gpu_sampler_python: str = Field(
        default="/usr/bin/python3",
        pattern=r"^[A-Za-z0-9._/+-]{1,1024}$",
        description="The interpreter the GPU sampler runs under on compute nodes: standard library, pynvml "
        "(`pip install nvidia-ml-py`, python3-pynvml); without pynvml it records 'no NVML', the job runs on.",
    )
    accounting_dir: Path | None = Field(
        default=None,
        description="The site's accounting/ directory (the GPU sampler: telemetry/gpu_sampler.py) as compute "
        "nodes see it; default: the one the installed gateway carries (gateway/resources.py).",
    )
    gpu_idle_threshold_pct: float = Field(
        default=5.0, ge=0, le=100, description="A GPU sample below this utilisation (percent) counts as idle."
    )

"""The gateway's configuration: one typed class, every variable declared once.

Each field reads the environment variable ``GATEWAY_<FIELD>`` (upper case),
e.g. ``GATEWAY_TEMPLATE_DIR=/etc/gateway/sbatch``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    template_dir: Path | None = Field(
        default=None,
        description="A site's own sbatch templates; a file there overrides the built-in one of that name.",
    )
    runs_dir: Path = Field(
        default=Path("/var/lib/gateway/runs"),
        description="Where each run's directory (job output, params file) is made; jobs must reach it.",
    )
    database_url: str = Field(
        default="sqlite:////var/lib/gateway/gateway.db",
        description="SQLAlchemy URL of the gateway's database (SQLite file, or postgresql+psycopg://...).",
    )
    refresh_interval_s: float = Field(
        default=5.0, gt=0, description="How often `gw serve` asks Slurm about live attempts."
    )
    submit_grace_s: float = Field(
        default=120.0,
        gt=0,
        description="An attempt still SUBMITTING after this long is looked up by its tag (crash recovery).",
    )
    slurm_query_timeout_s: float = Field(
        default=30.0, gt=0, description="Longest wait for squeue, sacct or scontrol before 'unknown'."
    )
    slurm_submit_timeout_s: float = Field(
        default=60.0, gt=0, description="Longest wait for sbatch before the submission is looked up by tag."
    )

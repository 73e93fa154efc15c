"""The gateway's configuration: one typed class, every variable declared once.

Each field reads the environment variable ``GATEWAY_<FIELD>`` (upper case),
e.g. ``GATEWAY_TEMPLATE_DIR=/etc/gateway/sbatch``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
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
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="NORMAL",
        description=(
            "SQLite's fsync policy (WAL mode). NORMAL survives a crash of the gateway; a power loss may "
            "undo the last commits, as it may Slurm's own recent state. FULL syncs every commit."
        ),
    )
    auth_mode: Literal["token", "trusted_proxy"] = Field(
        default="token",
        description=(
            "token: every request carries `Authorization: Bearer <token>`. trusted_proxy: a front end "
            "that authenticated the user sends their name in `trusted_user_header`; bind the gateway "
            "where only that front end can reach it."
        ),
    )
    trusted_user_header: str = Field(
        default="X-Remote-User", description="The header a trusted front end puts the user name in."
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

    @model_validator(mode="after")
    def _grace_covers_sbatch(self) -> Settings:
        if self.submit_grace_s <= self.slurm_submit_timeout_s:
            raise ValueError(
                f"submit_grace_s ({self.submit_grace_s:g}) must be longer than slurm_submit_timeout_s "
                f"({self.slurm_submit_timeout_s:g}): reconciliation must never judge a submission "
                "still in flight"
            )
        return self


CLIENT_CONFIG_FILE = Path.home() / ".config" / "gw" / "config.toml"


class ClientSettings(BaseSettings):
    """What the ``gw`` CLI needs to reach the API.

    Read from ``GW_URL`` and ``GW_TOKEN`` (environment wins), else from
    ``~/.config/gw/config.toml`` (``GW_CONFIG`` names another file) with keys
    ``url`` and ``token``.
    """

    model_config = SettingsConfigDict(env_prefix="GW_", extra="ignore")

    url: str = Field(default="http://127.0.0.1:8000", description="Base URL of the gateway API.")
    token: str | None = Field(default=None, description="API token (sent as a Bearer token).")
    timeout_s: float = Field(default=30.0, gt=0, description="HTTP timeout of one request.")

    @classmethod
    def load(cls) -> ClientSettings:
        import os
        import tomllib

        path = Path(os.environ.get("GW_CONFIG", CLIENT_CONFIG_FILE))
        values = {}
        if path.is_file():
            with path.open("rb") as handle:
                values = {k: v for k, v in tomllib.load(handle).items() if k in cls.model_fields}
        env = cls()  # environment (and defaults)
        explicit = {k for k in cls.model_fields if f"GW_{k.upper()}" in os.environ}
        merged = {**values, **{k: getattr(env, k) for k in explicit}}
        settings = cls.model_validate({**env.model_dump(), **merged})
        return settings

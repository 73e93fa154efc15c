"""The SSH submit host (``GATEWAY_SUBMIT_HOST``, ``GATEWAY_SSH_*``): one group of fields that
``gateway.settings.Settings`` inherits, so that every variable is still declared once and read through the
one ``Settings`` class (docs/ssh.md). ``Settings`` checks that they are complete together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SshSettings(BaseSettings):
    """Where Slurm commands and job files go over SSH, and how the gateway logs in there."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    submit_host: str | None = Field(
        default=None,
        description="The Slurm login node to submit through over SSH (docs/ssh.md); unset: Slurm commands "
        "and job files are run and read on this machine.",
    )
    ssh_port: int = Field(default=22, ge=1, le=65535, description="The submit host's SSH port.")
    ssh_known_hosts: Path = Field(
        default=Path("/etc/gateway/ssh/known_hosts"),
        description="The only host keys the gateway accepts for the submit host (OpenSSH known_hosts "
        "format); an unknown or changed key is refused, and the refusal names its fingerprint.",
    )
    ssh_login: Literal["per_user_key", "sudo"] = Field(
        default="per_user_key",
        description="How the gateway acts as a job's OS user on the submit host. per_user_key: it logs in "
        "as that user with that user's own key (ssh_user_keys). sudo: it logs in as ssh_service_user and "
        "runs `sudo -n -u USER --` there. Risks of each: docs/ssh.md.",
    )
    ssh_service_user: str | None = Field(
        default=None,
        description="The account the gateway logs in as for its own commands (squeue, sacct, scontrol, "
        "sacctmgr, account look-ups) and, in sudo mode, for every command. Required with submit_host.",
    )
    ssh_service_key: Path | None = Field(
        default=None,
        description="Private key file (unencrypted, mode 0600, the gateway's alone) of ssh_service_user. "
        "Required with submit_host; no default.",
    )
    ssh_user_keys: str = Field(
        default="/etc/gateway/ssh/users/{user}",
        description="per_user_key mode: where each job user's private key file is; {user} is replaced "
        "by the OS user name (a strict POSIX name). Each file mode 0600, the gateway's alone.",
    )
    ssh_pool_size: int = Field(
        default=8,
        ge=1,
        le=256,
        description="Most SSH connections open to the submit host at once, over all logins; an idle "
        "one of another login is closed to make room.",
    )
    ssh_sessions_per_connection: int = Field(
        default=8,
        ge=1,
        le=64,
        description="Commands at once on one connection (keep it below the server's MaxSessions, 10 by "
        "default).",
    )
    ssh_keepalive_s: float = Field(
        default=15.0,
        ge=0,
        description="Seconds between SSH keepalives on an open connection (0: none); a dead one is "
        "noticed and replaced.",
    )
    ssh_connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Longest wait for the TCP connection, the SSH handshake and the login, each.",
    )
    ssh_idle_close_s: float = Field(
        default=300.0,
        gt=0,
        description="An SSH connection unused this long is closed (the next command opens a new one).",
    )

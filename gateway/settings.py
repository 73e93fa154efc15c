"""The gateway's configuration: one typed class, every variable declared once.

Each field reads the environment variable ``GATEWAY_<FIELD>`` (upper case),
e.g. ``GATEWAY_TEMPLATE_DIR=/etc/gateway/sbatch``, and else the same line in the
server's settings file (``settings_file``: ``GATEWAY_SETTINGS_FILE``, default
``/etc/gateway/gateway.env``, the file ``make up`` and the Ansible deployment
write), so ``gw serve`` and ``gw admin`` find the same database without
anything exported. The environment wins over the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from gateway.settings_access import AccessSettings
from gateway.settings_accounting import AccountingSettings
from gateway.settings_handoff import HandoffSettings
from gateway.settings_ssh import SshSettings

SETTINGS_FILE_ENV = "GATEWAY_SETTINGS_FILE"
DEFAULT_SETTINGS_FILE = Path("/etc/gateway/gateway.env")


class SettingsFileError(ValueError):
    """The server's settings file is named but missing, or cannot be read (the message names it)."""


def settings_file(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The server's settings file (``KEY=value`` lines of ``GATEWAY_*`` variables), or None.

    ``GATEWAY_SETTINGS_FILE`` names it (empty: no file); unset, ``/etc/gateway/gateway.env`` where
    it exists. Raises :class:`SettingsFileError` for a named file that does not exist, or one that
    exists and cannot be read: silently falling back to the defaults would point ``gw admin`` at
    another database than the server's.
    """
    named = environ.get(SETTINGS_FILE_ENV)
    if named == "":
        return None
    path = Path(named) if named is not None else DEFAULT_SETTINGS_FILE
    if not path.exists():
        if named is None:
            return None
        raise SettingsFileError(
            f"{SETTINGS_FILE_ENV} names {path}, which does not exist: point it at the server's settings "
            f"file (make up writes {DEFAULT_SETTINGS_FILE}), or set it empty to read the environment only"
        )
    if not path.is_file() or not os.access(path, os.R_OK):
        why = "not a file" if not path.is_file() else "permission denied"
        raise SettingsFileError(
            f"cannot read the gateway's settings file {path} ({why}): "
            f"run as a user who may (root, or the gateway's service user), or set {SETTINGS_FILE_ENV}"
        )
    return path


class Settings(AccountingSettings, HandoffSettings, AccessSettings, SshSettings):
    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then ``GATEWAY_*`` variables, then the settings file (``settings_file``)."""
        path = settings_file()
        if path is None:
            return (init_settings, env_settings)
        return (init_settings, env_settings, DotEnvSettingsSource(settings_cls, env_file=path))

    template_dir: Path | None = Field(
        default=None,
        description="A site's own sbatch templates; a file there overrides the built-in one of that name.",
    )
    runs_dir: Path = Field(
        default=Path("/var/lib/gateway/runs"),
        description="Where each run's directory (job output, params file) is made; jobs must reach it.",
    )
    retention_interval_s: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "How often `gw serve` (the leader) runs the retention sweep: deletions the site file's "
            "retention policies allow, then the run directories measured (docs/retention.md)."
        ),
    )
    database_url: str = Field(
        default="sqlite:////var/lib/gateway/gateway.db",
        description="SQLAlchemy URL of the gateway's database (SQLite file, or postgresql+psycopg://...).",
    )
    audit_anchor_path: Path | None = Field(
        default=None,
        description=(
            "The audit anchor file: checkpoints of the audit chain's head, kept outside the database so "
            "that a log cut at its end is detected (docs/audit.md). Default: <name>-audit-anchors.jsonl "
            "beside a SQLite database file, else /var/lib/gateway/gateway-audit-anchors.jsonl."
        ),
    )
    evidence_signing_key: Path | None = Field(
        default=None,
        description=(
            "The site's Ed25519 private key (PEM, unencrypted; made by gw admin evidence-key generate) "
            "that signs every evidence bundle's manifest.json into manifest.sig (docs/evidence-schema.md). "
            "Unset: bundles are unsigned."
        ),
    )
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="NORMAL",
        description=(
            "SQLite's fsync policy (WAL mode). NORMAL survives a crash of the gateway; a power loss may "
            "undo the last commits, as it may Slurm's own recent state. FULL syncs every commit."
        ),
    )
    refresh_interval_s: float = Field(
        default=5.0, gt=0, description="How often `gw serve` asks Slurm about live attempts."
    )
    scheduler_stop_grace_s: float = Field(
        default=10.0,
        ge=0,
        le=300,
        description="At shutdown (SIGTERM), how long `gw serve` waits for a periodic job still running (a "
        "refresh cycle, say) before it exits without it; the job's Slurm calls end by their own limits.",
    )
    submit_grace_s: float = Field(
        default=120.0,
        gt=0,
        description="An attempt still SUBMITTING after this long is looked up by its tag (crash recovery).",
    )
    max_body_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        description=(
            "Largest request body the API reads; a longer one is answered 413 before it is read. "
            "Dataset manifests have their own cap, max_manifest_body_bytes."
        ),
    )
    max_manifest_body_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description=(
            "Largest body of POST /datasets/{project}/{name}/versions: a dataset's manifest, about "
            "120 bytes per file (256 MiB holds some two million files)."
        ),
    )
    slurm_query_timeout_s: float = Field(
        default=30.0, gt=0, description="Longest wait for squeue, sacct or scontrol before 'unknown'."
    )
    slurm_submit_timeout_s: float = Field(
        default=60.0, gt=0, description="Longest wait for sbatch before the submission is looked up by tag."
    )
    slurm_submit_by_path: bool = Field(
        default=True,
        description="Give sbatch the run's rendered script by path (RUN_DIR/job.sbatch), so Slurm records it "
        "as the job's Command and a job can resubmit it; false: on stdin, sbatch started before the attempt "
        "is recorded (Command=(null)).",
    )
    slurm_backend: Literal["cli", "rest"] = Field(
        default="cli",
        description="cli: sbatch, squeue, sacct (a process per call). rest: slurmrestd on unix sockets, one "
        "daemon per submitting OS user, no fork per job; not as root, not with submit_host "
        "(docs/slurm-backends.md).",
    )
    slurmrestd_socket_dir: Path = Field(
        default=Path("/run/gateway/slurmrestd"),
        description="rest: the daemons' sockets, in a directory only the gateway may enter (mode 0700).",
    )
    slurmrestd_query_user: str = Field(
        default="slurm", description="rest: the OS user whose daemon reads job states and cancels jobs."
    )
    slurmrestd_max_daemons: int = Field(default=32, ge=2, description="rest: most daemons at once (LRU).")
    slurmrestd_idle_stop_s: float = Field(default=900.0, gt=0, description="rest: an unused daemon stops.")
    slurmrestd_connect_timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="rest: longest wait for a slurmrestd (the gateway's own or a site-run one) to take a "
        "connection; each request's whole answer must then come within slurm_query_timeout_s (queries, "
        "cancels) or slurm_submit_timeout_s (submissions), else the cluster is down and its runs stale.",
    )

    cluster_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="The one cluster's name when the site file lists no clusters (docs/clusters.md); "
        "default: the ClusterName of this host's slurm.conf, else `default`.",
    )
    cluster_facts_ttl_s: float = Field(
        default=10.0,
        ge=0,
        description="How long partitions, nodes, the live job list and usage are reused for pages and "
        "explanations (one Slurm call serves every watcher in that window).",
    )
    batch_max_items: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description="Most runs one POST /runs/batch may submit (gw submit with several files, gw sbatch "
        "with several scripts, Gateway.batch()); a longer batch is refused whole, saying so.",
    )
    batch_submit_parallel: int = Field(
        default=8,
        ge=1,
        le=64,
        description="How many of a batch's submissions go to Slurm at once: sbatch processes on the CLI "
        "backend, kept-alive connections on slurmrestd.",
    )
    idempotency_ttl_s: float = Field(
        default=86_400.0,
        gt=0,
        description="How long an Idempotency-Key of a submission is remembered (a retry within it gets the "
        "same run).",
    )
    run_host_python: str = Field(
        default="/usr/bin/python3",
        description="The Python the run host's file agent runs under as a job's OS user (standard library "
        "only; the gateway's own venv may not be readable by that user).",
    )
    run_host_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Longest wait for one file operation on the run host (read a log ...).",
    )

    eval_dir: Path | None = Field(
        default=None,
        description="The site's eval/ directory (suite task YAMLs and the eval job's programs) as the "
        "compute nodes see it; default: the one the installed gateway carries (gateway/resources.py).",
    )
    eval_python: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9._/+-]{1,1024}$",
        description="The interpreter eval jobs run eval/jobs/run_eval.py with: a program on the job's PATH "
        "or an absolute path. It needs PyYAML, and lm_eval at the suite's version for lm-eval suites. "
        "Unset (and no eval_environment): eval jobs of suites naming no environment run in the site's "
        "built-in eval environment (site/lm-eval@N, eval/environments/lm-eval.lock), which the gateway "
        "registers and builds by a Slurm job the first time an eval needs it.",
    )
    eval_environment: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}/[A-Za-z0-9][A-Za-z0-9._-]{0,62}@[1-9][0-9]{0,8}$",
        description="The site's default eval environment: a registered environment version "
        "(PROJECT/NAME@N, docs/environments.md) that eval jobs of suites naming none run in, with its "
        "python3 (it needs PyYAML, and lm_eval for lm-eval suites); the users who start evals must be "
        "able to read it. Unset: eval jobs run eval_python.",
    )
    envs_dir: Path | None = Field(
        default=None,
        description="Where locked Python environments are built (docs/environments.md): a directory on the "
        "shared file system that compute nodes see and the projects' OS users may write under. Default: "
        "an 'envs' directory beside runs_dir.",
    )
    env_build_python: str = Field(
        default="/usr/bin/python3",
        pattern=r"^[A-Za-z0-9._/+-]{1,1024}$",
        description="The interpreter a locked environment's venv is made from (python -m venv) on the nodes.",
    )
    env_pip_find_links: Path | None = Field(
        default=None,
        description="A directory of wheels (a wheelhouse) locked environments install from, with no index "
        "(pip --no-index --find-links); for sites whose nodes reach no package index.",
    )
    env_pip_index_url: str | None = Field(
        default=None,
        pattern=r"^https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]{1,2000}$",
        description="The package index locked environments install from (pip --index-url); default: pip's.",
    )
    advisory_dir: Path | None = Field(
        default=None,
        description="A directory of OSV advisory files (JSON) the site keeps current; environments' packages "
        "are scanned against it (docs/environments.md). Unset: no scan.",
    )
    container_runtime: str = Field(
        default="podman",
        pattern=r"^(podman)$",
        description="The runtime image environments run with: podman (set up as docs/environments.md says).",
    )
    eval_results_max_bytes: int = Field(
        default=4 * 1024**3,
        ge=1024,
        description="The most an eval run's results files may hold in all; larger ones are refused unread.",
    )

    file_reads_at_once: int = Field(
        default=8,
        ge=1,
        le=64,
        description="Log reads served at once, in threads of their own (the other routes keep theirs).",
    )
    file_read_wait_s: float = Field(
        default=5.0, gt=0, description="Longest a log read waits for a free slot before it gets 503."
    )

    @field_validator("eval_dir", "accounting_dir")
    @classmethod
    def _absolute_eval_dir(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_absolute():
            raise ValueError(f"{value} is not an absolute path; jobs read it on their compute node")
        return value

    @model_validator(mode="after")
    def _grace_covers_sbatch(self) -> Settings:
        if self.submit_grace_s <= self.slurm_submit_timeout_s:
            raise ValueError(
                f"submit_grace_s ({self.submit_grace_s:g}) must be longer than slurm_submit_timeout_s "
                f"({self.slurm_submit_timeout_s:g}): reconciliation must never judge a submission "
                "still in flight"
            )
        return self

    @model_validator(mode="after")
    def _ssh_login_complete(self) -> Settings:
        if self.submit_host is None:
            return self
        if self.slurm_backend == "rest":
            raise ValueError("slurm_backend rest talks to slurmrestd on this host; use cli with submit_host")
        missing = [
            f"GATEWAY_{name.upper()}"
            for name in ("ssh_service_user", "ssh_service_key")
            if not getattr(self, name)
        ]
        if missing:
            raise ValueError(
                f"submit_host {self.submit_host} needs {' and '.join(missing)}: the account the gateway logs "
                "in as for its own Slurm commands, and that account's private key file (docs/ssh.md)"
            )
        if self.ssh_login == "per_user_key" and "{user}" not in self.ssh_user_keys:
            raise ValueError(
                f"ssh_user_keys {self.ssh_user_keys!r} must contain {{user}}, replaced by each job user's OS "
                "name, e.g. /etc/gateway/ssh/users/{user}"
            )
        return self

    @property
    def environments_dir(self) -> Path:
        """Where locked Python environments are built: ``envs_dir``, else ``envs`` beside ``runs_dir``."""
        return self.envs_dir or self.runs_dir.parent / "envs"

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite database file ``database_url`` names; None for PostgreSQL or an in-memory one."""
        sqlite = _SQLITE_FILE.match(self.database_url)
        if sqlite and sqlite["path"] != ":memory:":
            return Path(sqlite["path"])
        return None

    @property
    def anchor_path(self) -> Path:
        """``audit_anchor_path``, or its default derived from ``database_url``."""
        if self.audit_anchor_path is not None:
            return self.audit_anchor_path
        sqlite = _SQLITE_FILE.match(self.database_url)
        if sqlite and sqlite["path"] != ":memory:":
            database = Path(sqlite["path"])
            return database.with_name(f"{database.stem}-audit-anchors.jsonl")
        return DEFAULT_ANCHOR_PATH


DEFAULT_ANCHOR_PATH = Path("/var/lib/gateway/gateway-audit-anchors.jsonl")
_SQLITE_FILE = re.compile(r"sqlite(\+\w+)?:///(?P<path>[^?]+)")


def settings_problems(exc: ValidationError, prefix: str = "GATEWAY_") -> str:
    """What is wrong with the settings, one line a problem, naming each environment variable.

    pydantic's own text echoes every refused value; a setting may be a secret (a token, a
    database URL with its password), so the values are left out here.
    """
    lines = []
    for error in exc.errors(include_input=False, include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "(settings)"
        variable = f"{prefix}{field.split('.')[0].upper()}" if error["loc"] else ""
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"  - {field}{f' ({variable})' if variable else ''}: {message}")
    return "\n".join(lines)

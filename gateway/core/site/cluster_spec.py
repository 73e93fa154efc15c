"""The site file's clusters (``clusters:``, docs/clusters.md): how the gateway reaches each Slurm cluster,
through the CLI (``-M`` or its slurm.conf, on this host or over SSH on its own submit host) or slurmrestd.

``SiteConfig`` (``gateway.core.site.schema``) lists them; ``domain()`` gives the core's ``Cluster``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.core import names
from gateway.core.described import Name, OsUser, anchored, documented
from gateway.core.site.clusters import Cluster, ClusterSubmitHost
from gateway.core.site.restd import RestdSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


_AbsolutePath = Annotated[str, Field(min_length=2, max_length=4096, pattern=r"^/[^\x00-\x1f]*$")]


_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:-]{0,252}")
_FILE = re.compile(r"/[^\x00-\x1f]{1,4095}")
_File = Annotated[str, documented(pattern=anchored(_FILE))]


class SubmitHostSpec(_Strict):
    """A cluster's own SSH submit host (login node): its Slurm commands run there (docs/clusters.md)."""

    host: Annotated[str, documented(pattern=anchored(_HOST))]  # a host name or address
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    known_hosts: _File  # its host key, checked strictly (an unknown or changed key is refused)
    # per_user_key: log in as each job user with their key (user_keys); sudo: as service_user, then sudo
    login: Literal["per_user_key", "sudo"] = "per_user_key"
    service_user: OsUser  # logs in for the gateway's own commands (queries, cancels, sacctmgr)
    service_key: _File  # service_user's private key file (mode 0600, the gateway's alone)
    user_keys: _File = "/etc/gateway/ssh/users/{user}"  # each user's key file; {user}: their name

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not _HOST.fullmatch(value):
            raise ValueError(
                "not a host name or address; use letters, digits, '.', '-' and ':' (e.g. login2.example.org, "
                "10.0.0.5), at most 253 characters, no user@ and no port (port: is its own field)"
            )
        return value

    @field_validator("known_hosts", "service_key", "user_keys")
    @classmethod
    def _file(cls, value: str) -> str:
        if not _FILE.fullmatch(value):
            raise ValueError(
                "not an absolute file path; give the file's full path on the gateway's host (starting with "
                "/, no control characters, at most 4096 characters)"
            )
        return value

    @field_validator("service_user")
    @classmethod
    def _service_user(cls, value: str) -> str:
        if not names.OS_USER.fullmatch(value):
            raise ValueError(f"not a valid OS user name; use {names.OS_USER_HELP}")
        return value

    @model_validator(mode="after")
    def _keys(self) -> SubmitHostSpec:
        if self.login == "per_user_key" and "{user}" not in self.user_keys:
            raise ValueError(
                f"user_keys {self.user_keys!r} must contain {{user}} (login per_user_key logs in with each "
                "job user's own key), e.g. /etc/gateway/ssh/users/{user}; or use login: sudo"
            )
        return self

    def domain(self) -> ClusterSubmitHost:
        """This submit host as the domain's ``ClusterSubmitHost``."""
        return ClusterSubmitHost(
            self.host,
            self.known_hosts,
            self.service_user,
            self.service_key,
            self.port,
            self.login,
            self.user_keys,
        )


class ClusterSpec(_Strict):
    """One Slurm cluster: how the gateway reaches it (docs/clusters.md)."""

    name: Name
    # the name Slurm knows it by, for -M (sbatch -M, squeue -M ...); default: name
    slurm_name: Name | None = None
    # its slurm.conf (SLURM_CONF for every command) instead of -M
    slurm_conf: _AbsolutePath | None = None
    backend: Literal["cli", "rest"] | None = None  # None: the server's slurm_backend
    # rest: this cluster's slurmrestd sockets (its own); default: the server's socket directory / name
    restd_socket_dir: _AbsolutePath | None = None
    submit_host: SubmitHostSpec | None = None  # cli: its commands over SSH on this login node
    restd: RestdSpec | None = None  # rest: the site's own slurmrestd (rest_auth/jwt), not the gateway's

    @field_validator("name", "slurm_name")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        if value is not None and not names.NAME.fullmatch(value):
            raise ValueError(f"not a valid name; use {names.NAME_HELP}")
        return value

    @model_validator(mode="after")
    def _reachable(self) -> ClusterSpec:
        if self.slurm_conf and self.slurm_name:
            raise ValueError(
                f"cluster {self.name}: give slurm_conf (its slurm.conf) or slurm_name (its -M name), not both"
            )
        if self.restd is not None and (self.backend != "rest" or self.restd_socket_dir or self.submit_host):
            raise ValueError(
                f"cluster {self.name}: restd (a site-run slurmrestd) needs backend: rest and takes neither "
                "restd_socket_dir nor submit_host (the gateway starts no daemon for it)"
            )
        if self.backend == "rest" and not self.slurm_conf and self.restd is None:
            raise ValueError(
                f"cluster {self.name}: backend rest needs slurm_conf, the cluster's slurm.conf on the "
                "gateway's host (slurmrestd has no -M: each daemon reads its cluster from SLURM_CONF), "
                "or restd, the site's own slurmrestd"
            )
        if self.backend == "rest" and self.submit_host is not None:
            raise ValueError(
                f"cluster {self.name}: backend rest runs its slurmrestd daemons on the gateway's host, so "
                "it takes no submit_host; use backend cli with submit_host, or rest without it"
            )
        if self.restd_socket_dir is not None and (self.backend == "cli" or self.submit_host is not None):
            raise ValueError(
                f"cluster {self.name}: restd_socket_dir is for backend rest only (this cluster's commands "
                "run through the CLI); set backend: rest or remove restd_socket_dir"
            )
        return self

    def domain(self) -> Cluster:
        """This cluster as the domain's ``Cluster``."""
        return Cluster(
            self.name,
            self.slurm_name,
            self.slurm_conf,
            self.backend,
            self.restd_socket_dir,
            self.submit_host.domain() if self.submit_host else None,
            self.restd.domain() if self.restd else None,
        )

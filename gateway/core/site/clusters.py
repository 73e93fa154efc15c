"""The Slurm clusters behind the gateway as the site file lists them: submit hosts, slurmrestd.

Plain frozen dataclasses (docs/clusters.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterSubmitHost:
    """The SSH submit host (login node) of one cluster: where its Slurm commands run (docs/clusters.md).

    The same settings the server's own ``GATEWAY_SUBMIT_HOST`` and ``GATEWAY_SSH_*`` give, for this
    cluster alone: ``login`` is ``per_user_key`` (each job user's key, ``user_keys`` with ``{user}``) or
    ``sudo`` (``service_user`` runs ``sudo -n -u USER``); paths are on the gateway's host.
    """

    host: str
    known_hosts: str
    service_user: str
    service_key: str
    port: int = 22
    login: str = "per_user_key"
    user_keys: str = "/etc/gateway/ssh/users/{user}"


@dataclass(frozen=True)
class ClusterRestd:
    """A slurmrestd the site runs for one cluster (rest_auth/jwt), reached at ``url`` (``http://HOST:PORT``
    or ``unix:///PATH``); the gateway signs each user's short-lived token (``token_lifespan_s``) with
    the HS256 key in ``jwt_key``, a file on the gateway's host (docs/clusters.md)."""

    url: str
    jwt_key: str
    token_lifespan_s: int = 300


@dataclass(frozen=True)
class Cluster:
    """One Slurm cluster behind the gateway, as the site file lists it (docs/clusters.md).

    The CLI backend reaches it with ``SLURM_CONF=slurm_conf`` when that is given, else with
    ``-M slurm_name`` (default: ``name``), Slurm's multi-cluster option on one slurmdbd; with a
    ``submit_host`` its commands run there over SSH. ``backend`` None means the server's
    ``slurm_backend``; ``rest`` starts its slurmrestd daemons with ``SLURM_CONF=slurm_conf``, their
    sockets in ``restd_socket_dir`` (None: the server's socket directory / the cluster's name); with
    ``restd`` it uses the site's own slurmrestd instead and starts none.
    """

    name: str
    slurm_name: str | None = None
    slurm_conf: str | None = None
    backend: str | None = None  # "cli" or "rest"; None: the server's slurm_backend
    restd_socket_dir: str | None = None
    submit_host: ClusterSubmitHost | None = None  # its Slurm commands over SSH (None: the server's runner)
    restd: ClusterRestd | None = None  # rest: the site-run slurmrestd (None: the gateway's own daemons)

    @property
    def m_name(self) -> str | None:
        """The ``-M`` name its commands carry; None when ``slurm_conf`` points at it instead."""
        return None if self.slurm_conf else (self.slurm_name or self.name)

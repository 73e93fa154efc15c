"""The composition root's Slurm part: the machine jobs are submitted from, each cluster's runner and
backend (docs/clusters.md, docs/slurm-backends.md, docs/ssh.md).

``gateway.wiring.build_services`` calls these; they pick the concrete adapters (the local or SSH
runner and run host, the CLI or slurmrestd backend) from the settings and the site file's clusters.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from gateway.adapters.runhost import RunHost
from gateway.adapters.runhost_local import LocalRunHost
from gateway.adapters.runhost_ssh import SshRunHost
from gateway.adapters.runner import CommandRunner, LocalRunner
from gateway.adapters.runner_metered import MeteredRunner
from gateway.adapters.runner_ssh import SshRunner
from gateway.adapters.slurm import SlurmBackend, SlurmCLI
from gateway.adapters.slurm.cached import CachedSlurm
from gateway.adapters.slurm.clusters import DEFAULT_NAME, SlurmClusters, configured_cluster_name
from gateway.adapters.slurm.rest import SlurmRest
from gateway.adapters.slurm.restd import RestDaemons
from gateway.adapters.slurm.restd_site import SiteRestd
from gateway.adapters.ssh import SshPool
from gateway.adapters.ssh_hop import SubmitHop
from gateway.adapters.ssh_login import SshTarget
from gateway.core.site.cluster_spec import ClusterSpec
from gateway.core.site.clusters import Cluster, ClusterSubmitHost
from gateway.core.site.schema import CLUSTERS
from gateway.settings import Settings
from gateway.store.access.access import AccessStore


def build_machine(settings: Settings) -> tuple[CommandRunner, RunHost, SubmitHop | None]:
    """The runner and run host of the machine where jobs are submitted, and the hop to it (None: here)."""
    if settings.submit_host is None:
        runner = LocalRunner()
        return (
            runner,
            LocalRunHost(runner, python=settings.run_host_python, timeout_s=settings.run_host_timeout_s),
            None,
        )
    assert (
        settings.ssh_service_user is not None and settings.ssh_service_key is not None
    )  # the settings insist
    ssh = _ssh_runner(
        settings,
        ClusterSubmitHost(
            host=settings.submit_host,
            known_hosts=str(settings.ssh_known_hosts),
            service_user=settings.ssh_service_user,
            service_key=str(settings.ssh_service_key),
            port=settings.ssh_port,
            login=settings.ssh_login,
            user_keys=settings.ssh_user_keys,
        ),
    )
    return ssh, SshRunHost(ssh, python=settings.run_host_python, timeout_s=settings.run_host_timeout_s), ssh


def _ssh_runner(settings: Settings, host: ClusterSubmitHost) -> SshRunner:
    """The SSH command runner to ``host`` (the server's submit host or a cluster's own), its pool sized and
    timed by the server's ``ssh_*`` settings."""
    pool = SshPool(
        SshTarget(
            host=host.host,
            port=host.port,
            known_hosts=Path(host.known_hosts),
            connect_timeout_s=settings.ssh_connect_timeout_s,
            keepalive_s=settings.ssh_keepalive_s,
            idle_close_s=settings.ssh_idle_close_s,
        ),
        max_connections=settings.ssh_pool_size,
        sessions_per_connection=settings.ssh_sessions_per_connection,
    )
    return SshRunner(
        pool,
        login_mode="sudo" if host.login == "sudo" else "per_user_key",
        service_user=host.service_user,
        service_key=Path(host.service_key),
        user_keys=host.user_keys,
    )


class ClusterRunners:
    """The runner of each cluster's Slurm commands: the server's metered ``runner``, or for a cluster with
    its own submit host an SSH runner to that host (metered alike), one per host, kept for reuse."""

    def __init__(self, settings: Settings, runner: MeteredRunner, hop: SubmitHop | None = None) -> None:
        self.settings = settings
        self.runner = runner
        self.server_hop = hop  # the server-wide submit host's (GATEWAY_SUBMIT_HOST); None: this machine
        self._ssh: dict[ClusterSubmitHost, SshRunner] = {}
        self._lock = threading.Lock()

    def of(self, cluster: Cluster) -> CommandRunner:
        """The runner ``cluster``'s commands (sbatch ... sacctmgr) go through."""
        if cluster.submit_host is None:
            return self.runner
        return MeteredRunner(self._ssh_to(cluster.submit_host), self.runner.metrics)

    def hop(self, cluster: Cluster) -> SubmitHop | None:
        """The SSH hop ``cluster``'s commands go over: its own submit host's (the same pool its commands
        use), else the server-wide one's; None when they run on this machine."""
        if cluster.submit_host is None:
            return self.server_hop
        return self._ssh_to(cluster.submit_host)

    def _ssh_to(self, host: ClusterSubmitHost) -> SshRunner:
        with self._lock:
            ssh = self._ssh.get(host)
            if ssh is None:
                ssh = self._ssh[host] = _ssh_runner(self.settings, host)
        return ssh

    def close(self) -> None:
        """Close every submit host's SSH connections (a later command opens new ones)."""
        with self._lock:
            opened = list(self._ssh.values())
        for ssh in opened:
            ssh.close()


def build_clusters(
    settings: Settings, access: AccessStore, default: CachedSlurm, runners: ClusterRunners
) -> SlurmClusters:
    """The clusters registry (docs/clusters.md): the site file's clusters (the ``clusters`` site
    option), each backend built once over its cluster's runner (``runners``: the server's, or an SSH
    runner to the cluster's own submit host) and cached as ``default`` is; with none listed, ``default`` is
    the one cluster, named by the setting, slurm.conf's ClusterName or ``default``. The registry's
    ``close`` stops what the built backends hold (SSH connections, slurmrestd daemons)."""
    named: list[str] = []
    started: list[SlurmRest] = []

    def default_name() -> str:
        if not named:
            found = settings.cluster_name or configured_cluster_name(os.environ.get("SLURM_CONF"))
            named.append(found or DEFAULT_NAME)
        return named[0]

    def definitions() -> list[Cluster]:
        return [ClusterSpec.model_validate(c).domain() for c in access.option(CLUSTERS, []) or []]

    def build(cluster: Cluster) -> CachedSlurm:
        backend = slurm_backend(settings, runners.of(cluster), cluster)
        if isinstance(backend, SlurmRest):
            started.append(backend)
        return CachedSlurm(backend, ttl_s=settings.cluster_facts_ttl_s)

    def close() -> None:
        for rest in started:
            rest.close()
        runners.close()

    return SlurmClusters(
        default, definitions=definitions, build=build, default_name=default_name, close=close
    )


def _socket_dir(settings: Settings, cluster: Cluster | None) -> Path:
    """Where ``cluster``'s slurmrestd sockets live: its own directory, else the server's, per cluster."""
    if cluster is None:
        return settings.slurmrestd_socket_dir
    return Path(cluster.restd_socket_dir or settings.slurmrestd_socket_dir / cluster.name)


def _slurm_cli(settings: Settings, runner: CommandRunner, cluster: Cluster | None = None) -> SlurmCLI:
    return SlurmCLI(
        runner,
        query_timeout_s=settings.slurm_query_timeout_s,
        submit_timeout_s=settings.slurm_submit_timeout_s,
        cluster=cluster.m_name if cluster else None,
        slurm_conf=cluster.slurm_conf if cluster else None,
    )


def slurm_backend(settings: Settings, runner: CommandRunner, cluster: Cluster | None = None) -> SlurmBackend:
    """The Slurm backend ``settings.slurm_backend`` names (or ``cluster``'s own ``backend``): the CLI, or
    slurmrestd (the gateway's own daemons, or the site's at ``cluster.restd``), its exit-code fallback,
    sacct, ``--test-only`` and the ledger through the CLI backend; aimed at ``cluster`` (None: the
    cluster this host's Slurm configuration names)."""
    cli = _slurm_cli(settings, runner, cluster)
    kind = (cluster.backend if cluster else None) or settings.slurm_backend
    if kind == "cli" or (cluster is not None and cluster.submit_host is not None):  # its host: the CLI
        return cli
    daemons: RestDaemons | SiteRestd
    if cluster is not None and cluster.restd is not None:  # the site's own daemon: none started here
        daemons = SiteRestd(
            cluster.restd, cluster=cluster.name, connect_timeout_s=settings.slurmrestd_connect_timeout_s
        )
    else:
        daemons = RestDaemons(
            _socket_dir(settings, cluster),
            max_daemons=settings.slurmrestd_max_daemons,
            idle_stop_s=settings.slurmrestd_idle_stop_s,
            connect_timeout_s=settings.slurmrestd_connect_timeout_s,
            slurm_conf=cluster.slurm_conf if cluster else None,
        )
    return SlurmRest(
        daemons,
        cli,
        query_user=settings.slurmrestd_query_user,
        query_timeout_s=settings.slurm_query_timeout_s,
        submit_timeout_s=settings.slurm_submit_timeout_s,
    )

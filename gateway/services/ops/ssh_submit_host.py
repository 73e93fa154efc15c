"""The submit hosts: can the gateway act as each mapped OS user there (``gw admin ssh-check``).

The server-wide one (``GATEWAY_SUBMIT_HOST``) serves the clusters without a submit host of their own;
a cluster entry's own ``submit_host`` (docs/clusters.md) serves that cluster. Each host is checked once,
naming the clusters it serves.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.ssh_hop import HopOf, LoginCheck, SubmitHop
from gateway.core.access.values import Principal
from gateway.errors import Conflict, Forbidden
from gateway.store.access.access import AccessStore


@dataclass(frozen=True)
class LoginReport:
    hop: str  # where the hop goes and how it logs in
    service: LoginCheck  # the gateway's own login (Slurm queries, account look-ups)
    users: list[LoginCheck]  # one per OS user some gateway user maps to, by name
    clusters: tuple[str, ...] = ()  # the site file's clusters whose commands go there (none listed: ())

    @property
    def ok(self) -> bool:
        """True when the service login and every mapped user's login work."""
        return self.service.ok and all(check.ok for check in self.users)


class SubmitHostService:
    def __init__(
        self,
        access: AccessStore,
        hop: SubmitHop | None,
        clusters: SlurmClusters | None = None,
        hop_of: HopOf | None = None,
    ) -> None:
        self.access = access
        self.hop = hop  # None: no server-wide submit host, jobs are submitted on this machine
        self.clusters = clusters
        self.hop_of = hop_of  # a listed cluster's hop: its own submit host's, else ``hop``

    def hosts(self) -> list[tuple[SubmitHop, tuple[str, ...]]]:
        """Each submit host once, with the listed clusters whose commands go there, in the site file's
        order (with no clusters listed: the server-wide one alone, naming none)."""
        listed = self.clusters.listed() if self.clusters is not None else []
        if not listed or self.hop_of is None:
            return [(self.hop, ())] if self.hop is not None else []
        found: dict[int, tuple[SubmitHop, list[str]]] = {}
        for cluster in listed:
            hop = self.hop_of(cluster)
            if hop is not None:
                found.setdefault(id(hop), (hop, []))[1].append(cluster.name)
        return [(hop, tuple(names)) for hop, names in found.values()]

    def check_logins(self, principal: Principal) -> list[LoginReport]:
        """On each submit host (``hosts``), log in (``id -un``) as its service user and as every mapped
        OS user, the way their jobs are submitted, and report which work and why not. Site admins only
        (Forbidden); Conflict when no submit host is configured, server-wide or a cluster's."""
        if not principal.is_admin:
            raise Forbidden("only a site admin may test the submit host's logins")
        hosts = self.hosts()
        if not hosts:
            raise Conflict(
                "no submit host is configured (GATEWAY_SUBMIT_HOST is unset and no cluster of the site "
                "file has a submit_host): jobs are submitted on this machine, so there is no SSH login "
                "to test"
            )
        mapped = sorted({user.os_user for user in self.access.users() if user.os_user})
        return [
            LoginReport(
                hop.describe(),
                hop.check_login(hop.service_user),
                [hop.check_login(user) for user in mapped],
                clusters,
            )
            for hop, clusters in hosts
        ]

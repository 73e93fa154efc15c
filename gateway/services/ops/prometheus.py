"""GET /metrics: who may read it, and the values read at scrape time (runs by state, GPU use vs caps).

The counters and histograms live in ``gateway.adapters.prometheus`` (the one
module that imports prometheus-client); this service adds the gauges that
are read when Prometheus scrapes: runs by state per project (one grouped
query), and per project and cluster the GPUs in use and this month's
GPU-hours with their caps (``UsageService.usage`` on each cluster the project
has a queue on: Slurm keeps each cluster's associations apart; one squeue
per cluster shared by all projects, one sacct per project and cluster, all
behind the cluster-facts cache). Their labels are projects and clusters of
the site file: the series do not grow with runs.

A scraper has no user token: it reads with ``Settings.metrics_token``, or with
a metrics-scope token (``gw admin token USER --scope metrics``: one per
scraper, revocable, expiring, and refused by every other route), and when
``Settings.metrics_allow`` lists addresses, only from those. Neither: nobody
reads. An address alone never suffices: on a host where jobs run, any job's
user can connect from 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from gateway.adapters.prometheus import (
    CLUSTER_UP,
    CONTENT_TYPE,
    RUNS,
    STORAGE_GAUGES,
    USAGE_GAUGES,
    GatewayMetrics,
    GaugeSource,
    Sample,
)
from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.core.projects import Project
from gateway.core.slurm.states import RunState
from gateway.errors import Forbidden, GatewayError
from gateway.services.accounting.usage import UsageService
from gateway.services.retention.storage import StorageService
from gateway.settings import Settings
from gateway.store.access.access import AccessStore
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def refusal_reason(exc: BaseException) -> str:
    """The bounded label of a refusal: the most specific class of ``gateway.errors`` the error is."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "gateway.errors":
            return cls.__name__
    return "unexpected"


class MetricsService:
    """Decides who may scrape, and renders the exposition with the scrape-time gauges read fresh."""

    def __init__(
        self,
        metrics: GatewayMetrics,
        store: RunStore,
        access: AccessStore,
        usage: UsageService,
        settings: Settings,
        storage: StorageService | None = None,
        clusters: SlurmClusters | None = None,
    ) -> None:
        self.metrics = metrics
        self.clusters = clusters
        self.storage = storage
        self.store = store
        self.access = access
        self.usage = usage
        self.allow: Sequence[Network] = tuple(settings.metrics_allow)
        self.token = settings.metrics_token.get_secret_value() if settings.metrics_token else None
        self._add_sources()

    def scrape(self, *, source: str | None, token: str | None) -> tuple[bytes, str]:
        """The exposition text and its content type; Forbidden unless the token (and, with an
        allow-list, the peer) is allowed."""
        if not self._token_ok(token):
            raise Forbidden(
                "GET /metrics is for scrapers: send a metrics-scope token (`gw admin token USER --scope "
                "metrics`) or the site's GATEWAY_METRICS_TOKEN as `Authorization: Bearer` (docs/metrics.md); "
                "user tokens do not open it"
            )
        if not self._address_ok(source):
            raise Forbidden(
                f"GET /metrics: {source or 'this client'} is not in GATEWAY_METRICS_ALLOW, the addresses the "
                "metrics token may be used from"
            )
        return self.metrics.render(), CONTENT_TYPE

    def allowed(self, *, source: str | None, token: str | None) -> bool:
        """True when ``token`` is the metrics token or a valid metrics-scope token, and ``source`` (the
        TCP peer) is in the allow-list (an empty list: any address)."""
        return self._token_ok(token) and self._address_ok(source)

    def _token_ok(self, token: str | None) -> bool:
        if token is None:
            return False
        if self.token is not None and hmac.compare_digest(token, self.token):
            return True
        # the digest the database keeps of a token's secret (gateway.services.site.auth.digest)
        found = self.access.token_owner(hashlib.sha256(token.encode()).hexdigest())
        if found is None:
            return False
        scoped, user, _roles = found
        return (
            scoped.scope == "metrics"
            and scoped.revoked_at is None
            and (scoped.expires_at is None or scoped.expires_at > datetime.now(UTC))
            and not user.disabled
        )

    def _address_ok(self, source: str | None) -> bool:
        if not self.allow:
            return True
        try:
            address = ipaddress.ip_address(source or "")
        except ValueError:
            return False  # no address (a unix socket, a test client)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.allow)

    # -- scrape-time gauges --------------------------------------------------------------

    def _add_sources(self) -> None:
        self.metrics.add_source(GaugeSource((RUNS,), self._runs_by_state))
        self.metrics.add_source(GaugeSource(USAGE_GAUGES, self._usage))
        if self.storage is not None:
            self.metrics.add_source(GaugeSource(STORAGE_GAUGES, self._storage))
        self.metrics.add_source(GaugeSource((CLUSTER_UP,), self._clusters_up))

    def _clusters_up(self) -> dict[str, list[Sample]]:
        """Each listed cluster's health as the registry knows it (no Slurm call at scrape time)."""
        if self.clusters is None or not self.clusters.listed():
            return {CLUSTER_UP.name: []}
        down = self.clusters.all_down()
        return {CLUSTER_UP.name: [Sample((n,), 0.0 if n in down else 1.0) for n in self.clusters.names()]}

    def _storage(self) -> dict[str, list[Sample]]:
        """Each project's cached run-directory bytes (no run host call at scrape time)."""
        assert self.storage is not None
        samples: dict[str, list[Sample]] = {g.name: [] for g in STORAGE_GAUGES}
        for project in self.access.projects():
            space = self.storage.space(project.name)
            if space.size_bytes is not None:
                samples["gateway_project_storage_bytes"].append(Sample((project.name,), space.size_bytes))
                samples["gateway_project_storage_freeable_bytes"].append(
                    Sample((project.name,), space.freeable_bytes)
                )
            if space.limit_bytes is not None:
                samples["gateway_project_storage_limit_bytes"].append(
                    Sample((project.name,), space.limit_bytes)
                )
        return samples

    def _runs_by_state(self) -> dict[str, list[Sample]]:
        counts = self.store.count_by_project_state()
        projects = sorted({p.name for p in self.access.projects()} | {p for p, _ in counts})
        # Every state of every project, zeros too: a series does not vanish when it empties.
        return {
            RUNS.name: [
                Sample((project, state.value), counts.get((project, state.value), 0))
                for project in projects
                for state in RunState
            ]
        }

    def _usage(self) -> dict[str, list[Sample]]:
        """Each project's usage on each of its clusters, read once per scrape; a cap only where the
        project has one."""
        samples: dict[str, list[Sample]] = {g.name: [] for g in USAGE_GAUGES}
        for project in self.access.projects():
            for cluster, slurm in self._clusters_of(project):
                try:
                    usage = self.usage.usage(project, slurm=slurm)
                except GatewayError as exc:  # Slurm down: this scrape has no usage for the project there
                    log.warning("no usage of project %s on %s for /metrics: %s", project.name, cluster, exc)
                    continue
                labels = (project.name, cluster)
                for name, use in (("gpus", usage.gpus), ("gpu_hours", usage.gpu_hours)):
                    samples[f"gateway_project_{name}_used"].append(Sample(labels, float(use.used)))
                    if use.cap is not None:
                        samples[f"gateway_project_{name}_cap"].append(Sample(labels, float(use.cap)))
        return samples

    def _clusters_of(self, project: Project) -> list[tuple[str, SlurmBackend | None]]:
        """The clusters ``project`` has a queue on (the first cluster when it has none), in the site
        file's order, each with its backend (None: the usage service's own, the one cluster). A listed
        cluster known not to answer is left out: no scrape waits on it (``gateway_cluster_up`` is 0)."""
        if self.clusters is None:
            return [(self.metrics.local_cluster(), None)]
        if not self.clusters.listed():
            return [(self.clusters.first(), None)]
        used = {self.clusters.of_queue(q) for q in project.queues} or {self.clusters.first()}
        down = self.clusters.all_down()
        return [(n, self.clusters.get(n)) for n in self.clusters.names() if n in used and n not in down]

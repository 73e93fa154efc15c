"""The Slurm clusters behind one gateway: one cached, metered backend per cluster (docs/clusters.md).

``SlurmClusters`` is the registry the services hold. The site file's
``clusters`` (a site option, read through the access cache on every use, so
``gw admin apply`` is seen by a running server without a restart) say which
clusters there are, the first being the default one; ``build`` (the wiring's)
makes each one's backend once per definition. When the site file lists none,
the registry holds the one cluster the server reaches as it always did (the
``default`` backend, no ``-M``, no ``SLURM_CONF``), named by ``default_name``
(the ``cluster_name`` setting, else Slurm's ``ClusterName``, else
``default``): the single-cluster gateway, unchanged.

It also keeps each cluster's health as this process saw it: a cluster whose
Slurm did not answer (the refresh cycle's squeue, an sbatch) is down since
then until it answers again, and when it last answered (``last_answered``,
for ``/healthz`` and ``gw health``). Submissions to a down cluster's queues are
refused with a message naming it (``gateway.services.runs.admission``);
its runs are marked stale, never failed; the other clusters go on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gateway.adapters.slurm.protocol import ClusterSlurm
from gateway.core.clock import utcnow
from gateway.core.projects import Queue
from gateway.core.site.clusters import Cluster
from gateway.errors import NotFound

DEFAULT_NAME = "default"  # the one cluster's name when neither the setting nor slurm.conf gives one


@dataclass(frozen=True)
class ClusterDown:
    """A cluster whose Slurm did not answer: since when, and what was said."""

    name: str
    since: datetime
    error: str

    def since_said(self) -> str:
        """``since 2026-12-03 14:02:11 UTC: what was said``, as refusals and pages give it."""
        return f"since {self.since:%Y-%m-%d %H:%M:%S} UTC: {self.error}"


class SlurmClusters:
    """The clusters by name, each with its backend; the first is the default."""

    def __init__(
        self,
        default: ClusterSlurm,
        *,
        definitions: Callable[[], Sequence[Cluster]] = lambda: (),
        build: Callable[[Cluster], ClusterSlurm] | None = None,
        default_name: Callable[[], str] = lambda: DEFAULT_NAME,
        close: Callable[[], None] = lambda: None,
    ) -> None:
        self.default = default  # the one cluster's backend when the site file lists none
        self.definitions = definitions
        self.build = build
        self.default_name = default_name
        self._close = close  # stops what the built backends hold (SSH connections, slurmrestd daemons)
        self._built: dict[Cluster, ClusterSlurm] = {}
        self._down: dict[str, ClusterDown] = {}
        self._answered: dict[str, datetime] = {}  # when each cluster last answered this process
        self._lock = threading.Lock()

    # -- which clusters -----------------------------------------------------------------

    def listed(self) -> list[Cluster]:
        """The site file's clusters, in its order; empty: the single-cluster set-up."""
        return list(self.definitions())

    def names(self) -> list[str]:
        """Every cluster's name, the default (first) one first."""
        listed = self.listed()
        return [c.name for c in listed] if listed else [self.default_name()]

    def first(self) -> str:
        """The default cluster's name: the first listed, or the one cluster."""
        return self.names()[0]

    def name_of(self, recorded: str | None) -> str:
        """The cluster an attempt or queue is on, by what it recorded (None: the first cluster)."""
        if not self.listed():
            return self.first()  # one cluster: everything is on it, whatever was recorded
        return recorded or self.first()

    def of_queue(self, queue: Queue) -> str:
        """The name of the cluster ``queue``'s partition is on."""
        return self.name_of(queue.cluster)

    def check(self, name: str) -> str:
        """``name`` when it is a cluster's; NotFound naming the clusters otherwise."""
        names = self.names()
        if name not in names:
            raise NotFound(f"no cluster {name!r}; clusters are: {', '.join(names)}")
        return name

    def get(self, name: str | None = None) -> ClusterSlurm:
        """The backend of cluster ``name`` (None: the first); NotFound naming the valid ones (with no
        clusters listed, the one cluster's, whatever the name)."""
        listed = self.listed()
        if not listed:
            return self.default  # one cluster: every name recorded is this one
        cluster = listed[0] if name is None else next((c for c in listed if c.name == name), None)
        if cluster is None:
            raise NotFound(f"no cluster {name!r}; clusters are: {', '.join(c.name for c in listed)}")
        with self._lock:
            backend = self._built.get(cluster)
        if backend is None:
            if self.build is None:
                raise NotFound(f"cluster {cluster.name} is listed but this gateway builds no backends")
            backend = self.build(cluster)
            with self._lock:
                backend = self._built.setdefault(cluster, backend)
        return backend

    def backends(self) -> list[tuple[str, ClusterSlurm]]:
        """Every cluster's name and backend, the first first."""
        return [(name, self.get(name)) for name in self.names()]

    def close(self) -> None:
        """Stop what the clusters' backends hold: their SSH connections, their slurmrestd daemons."""
        with self._lock:
            self._built.clear()
        self._close()

    # -- health as this process saw it --------------------------------------------------

    def mark_down(self, name: str, error: str) -> None:
        """Cluster ``name`` did not answer (``error``); it stays down, since the first time, until
        ``mark_up``."""
        with self._lock:
            if name not in self._down:
                self._down[name] = ClusterDown(name, utcnow(), error)

    def mark_up(self, name: str) -> None:
        """Cluster ``name`` answered (now)."""
        with self._lock:
            self._down.pop(name, None)
            self._answered[name] = utcnow()

    def last_answered(self, name: str) -> datetime | None:
        """When cluster ``name`` last answered this process (a refresh, a health check); None: not yet."""
        with self._lock:
            return self._answered.get(name)

    def down(self, name: str) -> ClusterDown | None:
        """Since when cluster ``name`` has not answered; None when it answers."""
        with self._lock:
            return self._down.get(name)

    def all_down(self) -> dict[str, ClusterDown]:
        """The clusters that do not answer now, by name."""
        with self._lock:
            return dict(self._down)


def configured_cluster_name(slurm_conf: str | None) -> str | None:
    """The ``ClusterName`` of the slurm.conf at ``slurm_conf`` (default ``/etc/slurm/slurm.conf``);
    None when the file cannot be read or names none (the Slurm client reads the same file)."""
    path = Path(slurm_conf or "/etc/slurm/slurm.conf")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.split("#", 1)[0].partition("=")
        if key.strip().lower() == "clustername" and value.strip():
            return value.strip()
    return None

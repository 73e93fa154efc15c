"""The gateway's Prometheus metrics: every definition, and the one module that imports prometheus-client.

``GatewayMetrics`` holds a registry of its own (never the process-wide
default), so each ``Services`` (tests, several apps in one process) counts
apart. Services and adapters record through its methods; values read at
scrape time (runs by state, GPU use) come from *sources* the services add:
functions that return samples, called once per scrape.

Labels are bounded by construction: a Slurm command name from a fixed set,
an error class from ``gateway.errors``, a project, queue or cluster from the
site file (a Slurm command's cluster is the one it aims at: ``-M``/
``--clusters=``, sacctmgr's ``cluster=``, the ClusterName of its
``SLURM_CONF``, else the local one), a run state from ``RunState``. Nothing is labelled by job, run or user.
docs/metrics.md lists every metric.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

# The Slurm commands the gateway runs; anything else a metered runner sees is counted as "other".
SLURM_COMMANDS = frozenset({"sbatch", "squeue", "sacct", "scontrol", "scancel", "sacctmgr", "sinfo", "sprio"})
# Seconds: from a cached squeue (milliseconds) to an sbatch or sacct on a loaded controller.
SLURM_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
REFRESH_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sample:
    """One value of a gauge read at scrape time, with its label values in the gauge's label order."""

    labels: tuple[str, ...]
    value: float


@dataclass(frozen=True)
class Gauge:
    """A gauge read at scrape time: its name, help text and label names."""

    name: str
    documentation: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class GaugeSource:
    """Gauges that one call of ``read`` fills at scrape time: gauge name -> its samples.

    A read that raises leaves its gauges empty for that scrape (logged); the rest of the scrape stands.
    """

    gauges: tuple[Gauge, ...]
    read: Callable[[], Mapping[str, Iterable[Sample]]]


# The gauges gateway.services.ops.prometheus fills at scrape time.
RUNS = Gauge(
    "gateway_runs",
    "Runs recorded, by project and run state (every state of every project).",
    ("project", "state"),
)
CLUSTER_UP = Gauge(
    "gateway_cluster_up",
    "1 while the cluster answers, 0 since the refresh or a health check found it not answering "
    "(clusters listed in the site file only: docs/clusters.md).",
    ("cluster",),
)
STORAGE_GAUGES = (
    Gauge(
        "gateway_project_storage_bytes",
        "Bytes the project's run directories take, as the last retention sweep measured them.",
        ("project",),
    ),
    Gauge(
        "gateway_project_storage_limit_bytes",
        "The project's space limit for its run directories (projects with a limit only).",
        ("project",),
    ),
    Gauge(
        "gateway_project_storage_freeable_bytes",
        "What the next retention sweep would delete of the project's run directories.",
        ("project",),
    ),
)
USAGE_GAUGES = (
    Gauge(
        "gateway_project_gpus_used",
        "GPUs held now by the project's running jobs on the cluster (squeue).",
        ("project", "cluster"),
    ),
    Gauge(
        "gateway_project_gpus_cap",
        "The project's cap on GPUs at once, as pushed to the cluster's association (capped only).",
        ("project", "cluster"),
    ),
    Gauge(
        "gateway_project_gpu_hours_used",
        "GPU-hours the project used this month on the cluster, UTC (sacct).",
        ("project", "cluster"),
    ),
    Gauge(
        "gateway_project_gpu_hours_cap",
        "The project's cap on GPU-hours a month, as pushed to the cluster's association (capped only).",
        ("project", "cluster"),
    ),
)


def command_cluster(argv: Sequence[str], env: Mapping[str, str] | None, local: Callable[[], str]) -> str:
    """The cluster a Slurm command aims at (see the module docstring); ``local()`` when it names none."""
    for i, arg in enumerate(argv[1:], start=1):
        for prefix in ("--clusters=", "-M", "cluster="):
            if arg.startswith(prefix) and len(arg) > len(prefix):
                return arg[len(prefix) :].split(",")[0]
        if arg in ("-M", "--clusters") and i + 1 < len(argv):
            return argv[i + 1].split(",")[0]
    conf = (env or {}).get("SLURM_CONF")
    if conf:
        return _conf_cluster(conf)
    return local()


_CONF_NAMES: dict[str, str] = {}


def _conf_cluster(path: str) -> str:
    """The ClusterName of the slurm.conf at ``path`` (read once), ``unknown`` when it names none here."""
    if path not in _CONF_NAMES:
        from gateway.adapters.slurm.clusters import configured_cluster_name

        _CONF_NAMES[path] = configured_cluster_name(path) or "unknown"
    return _CONF_NAMES[path]


def _local_cluster() -> str:
    if "" not in _CONF_NAMES:
        from gateway.adapters.slurm.clusters import DEFAULT_NAME, configured_cluster_name

        _CONF_NAMES[""] = configured_cluster_name(os.environ.get("SLURM_CONF")) or DEFAULT_NAME
    return _CONF_NAMES[""]


def command_name(argv: Sequence[str]) -> str:
    """The bounded label of a command: its program's base name when it is a Slurm command, else "other"."""
    name = os.path.basename(argv[0]) if argv else ""
    return name if name in SLURM_COMMANDS else "other"


class GatewayMetrics:
    """The metrics of one gateway process (one ``Services``), in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # the cluster of a command that names none (wiring: the registry's one cluster's name)
        self.local_cluster: Callable[[], str] = _local_cluster
        self.submissions = Counter(
            "gateway_submissions",
            "Runs the gateway accepted and recorded (a replayed Idempotency-Key is not counted).",
            ["project", "queue"],
            registry=self.registry,
        )
        self.refusals = Counter(
            "gateway_submission_refusals",
            "Submissions refused, by the gateway error class of the refusal (a fixed set).",
            ["reason"],
            registry=self.registry,
        )
        self.slurm_seconds = Histogram(
            "gateway_slurm_command_duration_seconds",
            "Wall time of each Slurm command the gateway ran, answered or not, by the cluster it aimed at.",
            ["command", "cluster"],
            buckets=SLURM_BUCKETS_S,
            registry=self.registry,
        )
        self.slurm_errors = Counter(
            "gateway_slurm_command_errors",
            "Slurm commands that failed: exit (non-zero exit), timeout, unstartable (could not run).",
            ["command", "kind", "cluster"],
            registry=self.registry,
        )
        self.refresh_seconds = Histogram(
            "gateway_refresh_cycle_duration_seconds",
            "Wall time of one refresh cycle (squeue, sacct, the state writes).",
            buckets=REFRESH_BUCKETS_S,
            registry=self.registry,
        )
        self.refresh_cycles = Counter(
            "gateway_refresh_cycles",
            "Refresh cycles run, by outcome: ok, or skipped (the database or Slurm failed the cycle).",
            ["outcome"],
            registry=self.registry,
        )

    # -- recording ---------------------------------------------------------------------

    def submitted(self, project: str, queue: str) -> None:
        """Count one accepted submission."""
        self.submissions.labels(project=project, queue=queue).inc()

    def refused(self, reason: str) -> None:
        """Count one refused submission; ``reason`` is an error class name (a bounded set)."""
        self.refusals.labels(reason=reason).inc()

    def slurm_command(
        self,
        argv: Sequence[str],
        duration_s: float,
        error: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Observe one command's wall time, run with ``env``, under the cluster it aimed at; ``error``
        (exit, timeout, unstartable) also counts a failure."""
        command = command_name(argv)
        cluster = command_cluster(argv, env, self.local_cluster) if command != "other" else ""
        self.slurm_seconds.labels(command=command, cluster=cluster).observe(duration_s)
        if error is not None:
            self.slurm_errors.labels(command=command, kind=error, cluster=cluster).inc()

    def refresh_cycle(self, duration_s: float, *, ok: bool) -> None:
        """Observe one refresh cycle's wall time and count it by outcome."""
        self.refresh_seconds.observe(duration_s)
        self.refresh_cycles.labels(outcome="ok" if ok else "skipped").inc()

    def add_source(self, source: GaugeSource) -> None:
        """Register a gauge read at scrape time."""
        self.registry.register(_SourceCollector(source))

    # -- exposition --------------------------------------------------------------------

    def render(self) -> bytes:
        """The text exposition format of every metric in this registry (sources are read now)."""
        return generate_latest(self.registry)


class _SourceCollector(Collector):
    def __init__(self, source: GaugeSource) -> None:
        self.source = source

    def describe(self) -> list[GaugeMetricFamily]:
        # Described without reading, so registering a source never touches the database or Slurm.
        return [GaugeMetricFamily(g.name, g.documentation, labels=g.labels) for g in self.source.gauges]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        names = ", ".join(g.name for g in self.source.gauges)
        try:
            read = {name: list(samples) for name, samples in self.source.read().items()}
        except Exception as exc:  # noqa: BLE001 - one unreadable source must not fail the whole scrape
            log.warning("metrics %s left out of this scrape: %s", names, exc)
            read = {}
        for gauge in self.source.gauges:
            family = GaugeMetricFamily(gauge.name, gauge.documentation, labels=gauge.labels)
            for sample in read.get(gauge.name, []):
                family.add_metric(list(sample.labels), sample.value)
            yield family

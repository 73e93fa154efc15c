"""The composition root: the one place that picks the concrete adapters and builds the services.

Interfaces (``gw serve``, ``gw admin``, tests, benchmarks) call
``build_services(settings)`` once and keep the ``Services`` it returns.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from gateway.adapters.anchor import AnchorFile
from gateway.adapters.prometheus import GatewayMetrics
from gateway.adapters.runhost import RunHost
from gateway.adapters.runner import CommandRunner
from gateway.adapters.runner_metered import MeteredRunner
from gateway.adapters.runner_ssh import SshRunner
from gateway.adapters.slurm import SlurmBackend
from gateway.adapters.slurm.accounts import SlurmAccounts
from gateway.adapters.slurm.cached import CachedSlurm
from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.rest import SlurmRest
from gateway.adapters.ssh_hop import SubmitHop
from gateway.core.sbatch.templates import build_template_env
from gateway.core.site.clusters import Cluster
from gateway.errors import StoreError
from gateway.services import Services
from gateway.services.accounting.ledger import AccountingService
from gateway.services.accounting.reports import ReportService
from gateway.services.accounting.telemetry import TelemetryService
from gateway.services.accounting.usage import UsageService
from gateway.services.audit.log import AuditService
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.envs.evidence import environment_evidence
from gateway.services.envs.registry import EnvironmentService
from gateway.services.lineage.datasets import DatasetService
from gateway.services.lineage.outputs import OutputHarvester
from gateway.services.lineage.task_harvest import TaskHarvester
from gateway.services.lineage.tasks import TaskService
from gateway.services.lineage.walk import LineageService
from gateway.services.ops.health import HealthService
from gateway.services.ops.prometheus import MetricsService
from gateway.services.ops.ssh_submit_host import SubmitHostService
from gateway.services.retention.notes import ExpiredFiles
from gateway.services.retention.storage import StorageService
from gateway.services.runs.admission import Admission
from gateway.services.runs.logs import JobFiles, LogService
from gateway.services.runs.refresh import Refresher
from gateway.services.runs.retry import RetryService
from gateway.services.runs.run_service import RunService
from gateway.services.runs.submit_form import SubmitFormService
from gateway.services.runs.waiting import WaitingService
from gateway.services.site.apply import SiteService
from gateway.services.site.auth import AuthService
from gateway.services.site.projects import ProjectService
from gateway.services.site.slurm_sync import SlurmSync
from gateway.settings import Settings
from gateway.store import Database, RunStore
from gateway.store.access.access import AccessStore
from gateway.store.accounting.telemetry import TelemetryStore
from gateway.store.audit.audit import AuditStore
from gateway.store.envs.envs import EnvStore
from gateway.store.lineage.datasets import DatasetStore
from gateway.store.lineage.lineage import LineageStore
from gateway.store.lineage.task_metrics import TaskMetricsStore
from gateway.store.reports.reports import ReportStore
from gateway.store.retention.retention import RetentionStore
from gateway.wiring_slurm import ClusterRunners, build_clusters, build_machine, slurm_backend
from gateway.wiring_topics import (
    build_accounting,
    build_background,
    build_evals,
    build_handoff,
    build_harvester,
    build_releases,
    build_retention,
    handoff_config,
)

__all__ = ["build_machine", "build_services", "handoff_config", "upgrade_database"]


@dataclass(frozen=True)
class _Machine:
    """Where Slurm commands and job files go: the submit machine, each cluster's backend (clusters.md)."""

    runner: CommandRunner  # the submit machine's own (SSH to the submit host, or local)
    host: RunHost
    hop: SubmitHop | None  # None: jobs are submitted from this machine
    metrics: GatewayMetrics  # this Services' own registry (GET /metrics)
    backend: SlurmBackend  # the first cluster's, uncached
    cluster: CachedSlurm  # ``backend`` behind the cluster-facts cache
    runners: ClusterRunners
    clusters: SlurmClusters
    files: JobFiles


@dataclass(frozen=True)
class _RunSide:
    """The run services and the stores and services that every topic built after them uses."""

    store: RunStore
    usage: UsageService
    waiting: WaitingService
    retries: RetryService
    datasets: DatasetService
    lineage_store: LineageStore
    telemetry_store: TelemetryStore
    task_metrics: TaskMetricsStore
    audit: AuditService
    refresher: Refresher
    harvester: OutputHarvester
    env_catalog: EnvCatalog
    runs: RunService
    environments: EnvironmentService
    lineage: LineageService


def build_services(
    settings: Settings, *, slurm: SlurmBackend | None = None, upgrade: bool = True
) -> Services:
    """Build every service once; upgrades the database schema first unless told not to (then a schema
    older than the code is refused: StoreError naming both revisions, nothing written).

    ``slurm`` replaces the Slurm backend (tests and benchmarks count its calls); cluster-wide
    reads go through a cache of ``settings.cluster_facts_ttl_s`` in front of it. With
    ``settings.submit_host`` set, Slurm commands and job files go over SSH to that host
    (``SshRunner`` + ``SshRunHost``); otherwise they run on this machine.
    """
    db = _database(settings, upgrade=upgrade)
    access = AccessStore(db)
    machine = _machine(settings, access, slurm)
    run = _run_side(settings, db, access, machine)
    topics = _topics(settings, db, access, machine, run)
    return Services(
        settings=settings,
        db=db,
        slurm=machine.cluster,
        clusters=machine.clusters,
        templates=run.runs.templates,  # the sbatch templates' Jinja2 environment, built once
        access=access,
        **_run_fields(run, machine, topics["expired"]),
        **_site_and_ops(settings, db, access, machine, run, topics["accounting"], topics["storage"]),
        **topics,
    )


def _topics(
    settings: Settings, db: Database, access: AccessStore, machine: _Machine, run: _RunSide
) -> dict[str, Any]:
    """Evaluation, accounting, the hand-off, releases, retention and the leader's periodic work, built on
    the run side, by their field names in ``Services``."""
    store, lineage_store = run.store, run.lineage_store
    evals = build_evals(
        settings,
        db,
        run.datasets,
        access,
        run.runs,
        store,
        lineage_store,
        run.lineage,
        machine.files,
        run.environments,
    )
    accounting = build_accounting(settings, db, store, machine.cluster, machine.clusters)
    handoff = build_handoff(settings, db, store, lineage_store)
    releases = build_releases(
        db, evals, run.lineage, store, access, run.audit.store, accounting, settings, handoff
    )
    retention = build_retention(settings, db, store, access, machine.host)
    run.runs.space_warning = retention["storage"].warning
    releases["promotions"].environments = run.environments  # a policy's advisory rule
    background = build_background(
        settings,
        db,
        store,
        run.refresher,
        run.retries,
        run.harvester,
        run.audit,
        evals,
        machine.metrics,
        accounting,
        retention["retention"],
        handoff,
        run.env_catalog,
    )
    return {
        **evals,
        **releases,
        **retention,
        "background": background,
        "handoff": handoff,
        "accounting": accounting,
    }


def _database(settings: Settings, *, upgrade: bool) -> Database:
    """The gateway's database, its schema upgraded (``upgrade``) or else checked to be the code's."""
    db = Database(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    if upgrade:
        db.upgrade()
    elif (behind := db.schema_behind()) is not None:
        db.dispose()
        raise StoreError(
            f"the gateway database's schema is at revision {behind[0] or 'none (empty)'}, this gateway "
            f"needs {behind[1]}: run `gw admin db upgrade` first (nothing was changed)"
        )
    return db


def _machine(settings: Settings, access: AccessStore, slurm: SlurmBackend | None) -> _Machine:
    """The submit machine and every cluster's Slurm backend (``slurm``: the first cluster's, given)."""
    runner, host, hop = build_machine(settings)
    metrics = GatewayMetrics()
    slurm_runner = MeteredRunner(runner, metrics)  # every Slurm command passes here, timed
    backend = slurm or slurm_backend(settings, slurm_runner)
    cluster = CachedSlurm(backend, ttl_s=settings.cluster_facts_ttl_s)
    runners = ClusterRunners(settings, slurm_runner, hop)
    clusters = build_clusters(settings, access, cluster, runners)
    metrics.local_cluster = clusters.default_name  # a Slurm command that names no cluster: the one
    files = JobFiles(host, access)
    return _Machine(runner, host, hop, metrics, backend, cluster, runners, clusters, files)


def _run_side(settings: Settings, db: Database, access: AccessStore, machine: _Machine) -> _RunSide:
    """Admission, submission, refresh and retries, with the datasets, environments and lineage they use."""
    store, host, files, clusters = RunStore(db), machine.host, machine.files, machine.clusters
    usage = UsageService(access, machine.cluster, clusters)
    waiting = WaitingService(access, usage, clusters)
    retries = RetryService(store, access, clusters, files, by_path=settings.slurm_submit_by_path)
    templates = build_template_env(settings.template_dir)
    datasets = DatasetService(DatasetStore(db), access, store)
    lineage_store, telemetry_store = LineageStore(db), TelemetryStore(db)
    audit = AuditService(AuditStore(db), AnchorFile(settings.anchor_path))
    refresher = Refresher(store, clusters, settings, retries)
    task_metrics = TaskMetricsStore(db)
    harvester = build_harvester(settings, lineage_store, telemetry_store, host, files, clusters)
    harvester.tasks = TaskHarvester(task_metrics, host, files)
    admission = Admission(access, host, clusters)  # each queue's cluster's facts, through its cache
    env_catalog = EnvCatalog(EnvStore(db), store, host, runtime=settings.container_runtime)
    runs = RunService(
        store, admission, clusters, host, templates, settings, datasets, waiting, machine.metrics, env_catalog
    )
    environments = EnvironmentService(env_catalog.store, env_catalog, access, runs, host, settings)
    lineage = LineageService(
        lineage_store, datasets, store, telemetry_store, functools.partial(environment_evidence, environments)
    )
    return _RunSide(
        store,
        usage,
        waiting,
        retries,
        datasets,
        lineage_store,
        telemetry_store,
        task_metrics,
        audit,
        refresher,
        harvester,
        env_catalog,
        runs,
        environments,
        lineage,
    )


def _run_fields(run: _RunSide, machine: _Machine, expired: ExpiredFiles) -> dict[str, Any]:
    """The run side's services, by their field names in ``Services``."""
    store, files = run.store, machine.files
    return {
        "audit": run.audit,
        "usage": run.usage,
        "waiting": run.waiting,
        "runs": run.runs,
        "logs": LogService(store, files, expired.note),
        "tasks": TaskService(store, run.lineage_store, machine.host, files, run.task_metrics),
        "refresher": run.refresher,
        "retries": run.retries,
        "datasets": run.datasets,
        "environments": run.environments,
        "lineage": run.lineage,
        "harvester": run.harvester,
        "submit_form": SubmitFormService(run.runs, run.usage),
        "telemetry": TelemetryService(run.telemetry_store, store, cluster_of=machine.clusters.name_of),
    }


def _site_and_ops(
    settings: Settings,
    db: Database,
    access: AccessStore,
    machine: _Machine,
    run: _RunSide,
    accounting: AccountingService,
    storage: StorageService,
) -> dict[str, Any]:
    """Sign-in, the site file and Slurm's associations, health, metrics and reports, by field name."""
    clusters, hop = machine.clusters, machine.hop
    slurm_sync = _slurm_sync(settings, access, machine.runners, clusters)
    return {
        "auth": AuthService(
            access, trusted_proxies=settings.trusted_proxies, trusted_user_header=settings.trusted_user_header
        ),
        "projects": ProjectService(access),
        "health": HealthService(db, machine.backend, hop, clusters, hop_of=machine.runners.hop),
        "submit_host": SubmitHostService(access, hop, clusters, machine.runners.hop),
        "site": SiteService(access, slurm_sync, accounting, RetentionStore(db)),
        "slurm_sync": slurm_sync,
        "metrics": MetricsService(machine.metrics, run.store, access, run.usage, settings, storage, clusters),
        "reports": ReportService(ReportStore(db), access),
        "closers": [
            *(c.close for c in (machine.runner, machine.backend) if isinstance(c, SshRunner | SlurmRest)),
            clusters.close,
        ],
    }


def _slurm_sync(
    settings: Settings, access: AccessStore, runners: ClusterRunners, clusters: SlurmClusters
) -> SlurmSync:
    """Quotas pushed to each cluster's associations (``sacctmgr ... cluster=NAME``, on the cluster's own
    submit host when it has one): one SlurmAccounts per cluster."""
    built: dict[Cluster, SlurmAccounts] = {}

    def accounts_for(cluster: Cluster) -> SlurmAccounts:
        if cluster not in built:
            built[cluster] = SlurmAccounts(
                runners.of(cluster),
                cluster=cluster.m_name,
                slurm_conf=cluster.slurm_conf,
                timeout_s=settings.slurm_query_timeout_s,
            )
        return built[cluster]

    one = SlurmAccounts(runners.runner, timeout_s=settings.slurm_query_timeout_s)
    return SlurmSync(access, one, accounts_for=accounts_for, clusters=clusters.listed)


def upgrade_database(settings: Settings) -> str:
    """Bring the gateway database's schema to the newest version (idempotent); returns its dialect."""
    db = Database(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        db.upgrade()
        return db.dialect
    finally:
        db.dispose()

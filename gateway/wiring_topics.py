"""The composition root's topic builders: the evaluation, release, hand-off, retention and accounting
services, the outputs harvest and the leader's periodic work, each from the parts ``gateway.wiring``
built before it (``build_services`` calls them in order)."""

from __future__ import annotations

import os
from typing import Any

from gateway import resources
from gateway.adapters.evidence_key import load_signer
from gateway.adapters.handoff import ModelRegistry
from gateway.adapters.prometheus import GatewayMetrics
from gateway.adapters.runhost import RunHost
from gateway.adapters.slurm.cached import CachedSlurm
from gateway.adapters.slurm.clusters import SlurmClusters, configured_cluster_name
from gateway.core.site.clusters import Cluster
from gateway.services.accounting.ledger import AccountingService, LedgerSource
from gateway.services.accounting.telemetry import TelemetryHarvester
from gateway.services.audit.log import AuditService
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.envs.registry import EnvironmentService
from gateway.services.envs.site_eval import SiteEvalEnvironment, builtin_lock
from gateway.services.eval.gates import GateService, NoDefaultBaseline
from gateway.services.eval.imports import EvalImportService
from gateway.services.eval.ingest import EvalIngest
from gateway.services.eval.reviews import ReviewService
from gateway.services.eval.runs import EvalJobSettings, EvalRunService
from gateway.services.eval.suites import EvalSuiteService
from gateway.services.eval.trace import EvalTraceService
from gateway.services.handoff.config import Endpoint, HandoffConfig
from gateway.services.handoff.deliveries import WebhookDeliveries
from gateway.services.handoff.mlflow_jobs import MlflowJobs
from gateway.services.handoff.outbox import HandoffService
from gateway.services.lineage.datasets import DatasetService
from gateway.services.lineage.outputs import OutputHarvester
from gateway.services.lineage.walk import LineageService
from gateway.services.ops.background import BackgroundWork
from gateway.services.releases.alias_policies import AliasPolicyService
from gateway.services.releases.evidence import EvidenceService
from gateway.services.releases.policy_gate import PolicyGate
from gateway.services.releases.promotions import PromotionService
from gateway.services.releases.registry import ReleaseService
from gateway.services.retention.holds import HoldService
from gateway.services.retention.notes import ExpiredFiles
from gateway.services.retention.storage import StorageService
from gateway.services.retention.sweep import RetentionSweeper
from gateway.services.runs.logs import JobFiles
from gateway.services.runs.refresh import Refresher
from gateway.services.runs.retry import RetryService
from gateway.services.runs.run_service import RunService
from gateway.settings import Settings
from gateway.store import Database, RunStore
from gateway.store.access.access import AccessStore
from gateway.store.accounting.accounting import AccountingStore
from gateway.store.accounting.telemetry import TelemetryStore
from gateway.store.audit.audit import AuditStore
from gateway.store.eval.evals import EvalStore
from gateway.store.eval.results import EvalResultStore
from gateway.store.eval.reviews import ReviewStore
from gateway.store.handoff.handoff import HandoffStore
from gateway.store.lineage.lineage import LineageStore
from gateway.store.releases.promotions import PromotionStore
from gateway.store.releases.releases import ReleaseStore
from gateway.store.retention.retention import RetentionStore


def handoff_config(settings: Settings) -> HandoffConfig:
    """The hand-off settings as plain values (docs/handoff.md)."""
    since = None
    if settings.mlflow_track_runs_since:
        from datetime import UTC, datetime

        since = datetime.fromisoformat(settings.mlflow_track_runs_since)
        since = since if since.tzinfo else since.replace(tzinfo=UTC)
    return HandoffConfig(
        public_url=settings.public_url or "",
        artifacts=settings.mlflow_artifacts,
        reference_uri=settings.mlflow_reference_uri or "",
        track_runs_since=since,
        endpoints=tuple(
            Endpoint(
                w.name,
                w.url,
                w.secret.get_secret_value(),
                tuple(w.events),
                tuple(w.projects) if w.projects is not None else None,
            )
            for w in settings.webhooks
        ),
        webhook_timeout_s=settings.webhook_timeout_s,
        max_attempts=settings.handoff_max_attempts,
        backoff_s=settings.handoff_backoff_s,
        backoff_cap_s=settings.handoff_backoff_cap_s,
    )


def build_handoff(
    settings: Settings,
    db: Database,
    store: RunStore,
    lineage: LineageStore,
    registry: ModelRegistry | None = None,
) -> HandoffService:
    """The hand-off outbox: the MLflow mirror (with ``mlflow_tracking_uri``) and the webhooks."""
    from gateway.adapters.webhook_http import HttpWebhookPoster

    config = handoff_config(settings)
    if registry is None and settings.mlflow_tracking_uri:
        from gateway.adapters.mlflow_registry import MlflowRegistry  # the optional extra gateway[mlflow]

        registry = MlflowRegistry(settings.mlflow_tracking_uri, timeout_s=settings.mlflow_timeout_s)
    release_store, promotion_store = ReleaseStore(db), PromotionStore(db)
    jobs = (
        MlflowJobs(registry, config, release_store, promotion_store, store, lineage)
        if registry is not None
        else None
    )
    deliveries = WebhookDeliveries(HttpWebhookPoster(), config, release_store, promotion_store)
    return HandoffService(
        HandoffStore(db), config, release_store, promotion_store, store, deliveries, jobs, registry
    )


def build_retention(
    settings: Settings, db: Database, store: RunStore, access: AccessStore, host: RunHost
) -> dict[str, Any]:
    """Holds, the sweep and storage (docs/retention.md), by their field names in ``Services``."""
    retention_store = RetentionStore(db)
    sweeper = RetentionSweeper(retention_store, access, host)
    storage = StorageService(
        retention_store, access, host, sweeper, next_sweep_in_s=settings.retention_interval_s
    )
    sweeper.measure = storage.measure_all
    return {
        "holds": HoldService(retention_store, store, access),
        "retention": sweeper,
        "storage": storage,
        "expired": ExpiredFiles(retention_store, store),
    }


def build_accounting(
    settings: Settings, db: Database, store: RunStore, cluster: CachedSlurm, clusters: SlurmClusters
) -> AccountingService:
    """The accounting ingest and pricing (docs/accounting.md): every cluster's sacct, through its cache."""

    def sources() -> list[LedgerSource]:
        listed = {c.name: c for c in clusters.listed()}
        first = clusters.first()
        return [
            LedgerSource(name, backend, default=name == first, slurm_name=_sacct_cluster(listed.get(name)))
            for name, backend in clusters.backends()
        ]

    return AccountingService(
        AccountingStore(db),
        store,
        cluster,
        window_s=settings.accounting_window_s,
        overlap_s=settings.accounting_overlap_s,
        lookback_days=settings.accounting_lookback_days,
        sources=sources,
    )


def _sacct_cluster(cluster: Cluster | None) -> str | None:
    """The name sacct prints as Cluster for ``cluster`` (None: the one unlisted cluster): its -M name, else
    the ClusterName of its slurm.conf when this host can read it; None: learned from its first read."""
    if cluster is not None and cluster.m_name:
        return cluster.m_name
    return configured_cluster_name(cluster.slurm_conf if cluster else os.environ.get("SLURM_CONF"))


def build_harvester(
    settings: Settings,
    lineage: LineageStore,
    telemetry: TelemetryStore,
    host: RunHost,
    files: JobFiles,
    clusters: SlurmClusters,
) -> OutputHarvester:
    """The outputs harvest, with each attempt's GPU telemetry (docs/telemetry.md), on its cluster."""
    gpu = TelemetryHarvester(
        telemetry, host, idle_threshold_pct=settings.gpu_idle_threshold_pct, cluster_of=clusters.name_of
    )
    return OutputHarvester(lineage, host, files, gpu)


def build_evals(
    settings: Settings,
    db: Database,
    datasets: DatasetService,
    access: AccessStore,
    runs: RunService,
    store: RunStore,
    lineage_store: LineageStore,
    lineage: LineageService,
    files: JobFiles,
    environments: EnvironmentService,
) -> dict[str, Any]:
    """The evaluation services, by their field names in ``Services``."""
    host = environments.host
    eval_store, results, review_store = EvalStore(db), EvalResultStore(db), ReviewStore(db)
    suites = EvalSuiteService(eval_store, datasets, access)
    suites.environments = runs.environments  # a suite's environment is checked when it is registered
    eval_dir = resources.chosen(settings.eval_dir, resources.EVAL)
    job = EvalJobSettings(
        python=settings.eval_python, eval_dir=str(eval_dir), environment=settings.eval_environment
    )
    site_env = SiteEvalEnvironment(environments, builtin_lock(settings.eval_dir))
    reviews = ReviewService(review_store, results, lineage_store, store)
    gates = GateService(eval_store, results, review_store, reviews, NoDefaultBaseline())
    return {
        "eval_suites": suites,
        "evals": EvalRunService(eval_store, suites, runs, store, lineage_store, job, site_env),
        "eval_ingest": EvalIngest(
            eval_store,
            results,
            store,
            lineage_store,
            host,
            files,
            max_bytes=settings.eval_results_max_bytes,
            environments=environments.catalog,
        ),
        "eval_imports": EvalImportService(
            suites, results, lineage_store, max_bytes=settings.eval_results_max_bytes
        ),
        "gates": gates,
        "reviews": reviews,
        "eval_trace": EvalTraceService(eval_store, gates, review_store, lineage, store),
    }


def build_releases(
    db: Database,
    evals: dict[str, Any],
    lineage: LineageService,
    store: RunStore,
    access: AccessStore,
    audit: AuditStore,
    accounting: AccountingService,
    settings: Settings,
    handoff: HandoffService,
) -> dict[str, Any]:
    """The model registry's services (releases, alias policies, promotions, evidence), by field name."""
    release_store = ReleaseStore(db)
    gates: GateService = evals["gates"]
    releases = ReleaseService(
        release_store, lineage, evals["eval_trace"], gates.store, gates.gates, store, handoff=handoff
    )
    promotion_store = PromotionStore(db)
    policy_gate = PolicyGate(gates.store, gates, promotion_store, release_store)
    promotions = PromotionService(promotion_store, releases, policy_gate, access, handoff=handoff)
    return {
        "releases": releases,
        "alias_policies": AliasPolicyService(promotion_store, releases),
        "promotions": promotions,
        "evidence": EvidenceService(
            lineage,
            evals["eval_trace"],
            releases,
            promotions,
            audit,
            access,
            accounting,
            signer=load_signer(settings.evidence_signing_key),
        ),
    }


def build_background(
    settings: Settings,
    db: Database,
    store: RunStore,
    refresher: Refresher,
    retries: RetryService,
    harvester: OutputHarvester,
    audit: AuditService,
    evals: dict[str, Any],
    metrics: GatewayMetrics,
    accounting: AccountingService,
    retention: RetentionSweeper,
    handoff: HandoffService,
    env_catalog: EnvCatalog,
) -> BackgroundWork:
    """The leader's periodic work: refresh, retries, harvests, eval ingest, audit anchors, accounting."""
    return BackgroundWork(
        db,
        store,
        refresher,
        retries,
        harvester,
        audit,
        lease_ttl_s=max(3 * settings.refresh_interval_s, 15.0),
        evals=evals["eval_ingest"],
        metrics=metrics,
        accounting=accounting,
        retention=retention,
        handoff=handoff,
        environments=env_catalog.builds,
    )

"""Services: what the API, the web pages, ``gw admin`` and the scheduler jobs all call, by topic.

``runs/`` (admission, submission, refresh, retries, logs, waits), ``eval/``, ``lineage/``,
``releases/``, ``accounting/`` (ledger, telemetry, reports, usage), ``site/`` (the site file,
projects, sign-in, Slurm associations), ``ops/`` (periodic work, health, metrics, the SSH hop),
and ``audit.py`` (the log), shared by several.

``gateway.wiring.build_services(settings)`` builds them once over the database, the Slurm
backend, the run host and the template environment; interfaces hold on to the returned
``Services`` and call its services. It also carries the ``Database`` (for ``close``) and the
``AccessStore`` (tests and benchmarks set up with it); no interface reads those
(``tests/unit/test_services_bag.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jinja2

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.services.accounting.ledger import AccountingService
from gateway.services.accounting.reports import ReportService
from gateway.services.accounting.telemetry import TelemetryService
from gateway.services.accounting.usage import UsageService
from gateway.services.audit.log import AuditService
from gateway.services.envs.registry import EnvironmentService
from gateway.services.eval.gates import GateService
from gateway.services.eval.imports import EvalImportService
from gateway.services.eval.ingest import EvalIngest
from gateway.services.eval.reviews import ReviewService
from gateway.services.eval.runs import EvalRunService
from gateway.services.eval.suites import EvalSuiteService
from gateway.services.eval.trace import EvalTraceService
from gateway.services.handoff.outbox import HandoffService
from gateway.services.lineage.datasets import DatasetService
from gateway.services.lineage.outputs import OutputHarvester
from gateway.services.lineage.tasks import TaskService
from gateway.services.lineage.walk import LineageService
from gateway.services.ops.background import BackgroundWork
from gateway.services.ops.health import HealthService
from gateway.services.ops.prometheus import MetricsService
from gateway.services.ops.ssh_submit_host import SubmitHostService
from gateway.services.releases.alias_policies import AliasPolicyService
from gateway.services.releases.evidence import EvidenceService
from gateway.services.releases.promotions import PromotionService
from gateway.services.releases.registry import ReleaseService
from gateway.services.retention.holds import HoldService
from gateway.services.retention.notes import ExpiredFiles
from gateway.services.retention.storage import StorageService
from gateway.services.retention.sweep import RetentionSweeper
from gateway.services.runs.logs import LogService
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
from gateway.store import Database
from gateway.store.access.access import AccessStore


@dataclass
class Services:
    settings: Settings
    db: Database  # for close(); tests read it, no interface does
    slurm: SlurmBackend  # the first (default) cluster's, cached
    clusters: SlurmClusters  # every cluster's backend by name, and their health (docs/clusters.md)
    templates: jinja2.Environment
    access: AccessStore  # read by benchmarks and tests only
    audit: AuditService  # the log: events, verify, checkpoint
    auth: AuthService
    projects: ProjectService
    health: HealthService
    site: SiteService
    slurm_sync: SlurmSync
    usage: UsageService
    waiting: WaitingService
    runs: RunService
    logs: LogService
    tasks: TaskService  # a sweep's array tasks as run-like records (docs/sweeps.md)
    refresher: Refresher
    retries: RetryService
    datasets: DatasetService
    environments: EnvironmentService  # training environments: versions, builds, diffs (docs/environments.md)
    lineage: LineageService
    harvester: OutputHarvester
    eval_suites: EvalSuiteService
    evals: EvalRunService
    eval_ingest: EvalIngest
    eval_imports: EvalImportService
    gates: GateService
    reviews: ReviewService
    eval_trace: EvalTraceService
    releases: ReleaseService
    alias_policies: AliasPolicyService
    promotions: PromotionService
    evidence: EvidenceService
    accounting: AccountingService  # sacct records into the ledger, priced; a run's cost
    background: BackgroundWork
    metrics: MetricsService  # GET /metrics: who may scrape, and the exposition
    submit_host: SubmitHostService  # the SSH hop to a remote submit host, if any
    submit_form: SubmitFormService  # what the web submit form offers, and its preview
    reports: ReportService  # usage, cost and efficiency reports over the accounting records
    holds: HoldService  # retention holds on runs, models, projects (docs/retention.md)
    retention: RetentionSweeper  # the sweep: what the policies allow, deleted and audited
    storage: StorageService  # run-directory bytes per project, user, run; the space limit's warning
    expired: ExpiredFiles  # what a sweep deleted of a run
    telemetry: TelemetryService | None = None  # GPU telemetry per attempt (docs/telemetry.md)
    handoff: HandoffService | None = None  # MLflow mirror and webhooks (docs/handoff.md)
    closers: list[Callable[[], None]] = field(default_factory=list)  # the SSH pool's close, if any

    def close(self) -> None:
        """Release the database's connections (and the submit host's SSH connections); the services
        are not used after this."""
        for close in self.closers:
            close()
        self.db.dispose()

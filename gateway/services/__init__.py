"""Services: what the API, the web pages, the CLI and the scheduler jobs all call.

``gateway.wiring.build_services(settings)`` builds them once over the
database, the Slurm backend, the run host and the template environment;
interfaces hold on to the returned ``Services``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jinja2

from gateway.adapters.slurm.protocol import SlurmBackend
from gateway.services.accounting import AccountingService
from gateway.services.alias_policies import AliasPolicyService
from gateway.services.audit import AuditService
from gateway.services.auth import AuthService
from gateway.services.background import BackgroundWork
from gateway.services.datasets import DatasetService
from gateway.services.eval_gates import GateService
from gateway.services.eval_ingest import EvalIngest
from gateway.services.eval_reviews import ReviewService
from gateway.services.eval_runs import EvalRunService
from gateway.services.eval_suites import EvalSuiteService
from gateway.services.eval_trace import EvalTraceService
from gateway.services.evidence import EvidenceService
from gateway.services.health import HealthService
from gateway.services.lineage import LineageService
from gateway.services.logs import LogService
from gateway.services.metrics import MetricsService
from gateway.services.outputs import OutputHarvester
from gateway.services.projects import ProjectService
from gateway.services.promotions import PromotionService
from gateway.services.refresh import Refresher
from gateway.services.releases import ReleaseService
from gateway.services.reports import ReportService
from gateway.services.retry import RetryService
from gateway.services.runs import RunService
from gateway.services.site_apply import SiteService
from gateway.services.slurm_sync import SlurmSync
from gateway.services.submit_form import SubmitFormService
from gateway.services.submit_host import SubmitHostService
from gateway.services.telemetry import TelemetryService
from gateway.services.usage import UsageService
from gateway.services.waiting import WaitingService
from gateway.settings import Settings
from gateway.store import Database
from gateway.store.access import AccessStore


@dataclass
class Services:
    settings: Settings
    db: Database  # for close(), and the scheduler's lease until it gets a service of its own
    slurm: SlurmBackend
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
    refresher: Refresher
    retries: RetryService
    datasets: DatasetService
    lineage: LineageService
    harvester: OutputHarvester
    eval_suites: EvalSuiteService
    evals: EvalRunService
    eval_ingest: EvalIngest
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
    telemetry: TelemetryService | None = None  # GPU telemetry per attempt (docs/telemetry.md)
    closers: list[Callable[[], None]] = field(default_factory=list)  # the SSH pool's close, if any

    def close(self) -> None:
        """Release the database's connections (and the submit host's SSH connections); the services
        are not used after this."""
        for close in self.closers:
            close()
        self.db.dispose()

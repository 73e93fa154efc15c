"""What ``gw serve`` does between requests: one service call per periodic job.

``cycle`` checkpoints the audit chain (``gateway/services/audit/log.py``), follows
jobs (the refresh), then submits the retries that came due,
then harvests the outputs of attempts that ended, then ingests the results
of eval runs that ended, in that order, so a retry sees the failure the
refresh just classified, a harvest sees the final state, and an ingest finds
the results files already registered as artifacts with their sha256.
Each step's failure is logged and the next step still runs.
``ingest_accounting`` reads the cluster's sacct records into the accounting
ledger on its own, slower clock (``accounting_interval_s``); ``sweep_retention`` runs the
retention sweep every ``retention_interval_s`` (docs/retention.md). Only the
process holding the ``scheduler`` lease (``lead``) does any of it, so
several ``gw serve`` on one database never work twice.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, field

from gateway.adapters.prometheus import GatewayMetrics
from gateway.core.accounting.records import IngestCounts
from gateway.errors import GatewayError
from gateway.services.accounting.ledger import AccountingService
from gateway.services.audit.log import AuditService
from gateway.services.envs.settle import BuildSettler
from gateway.services.eval.ingest import EvalIngest, IngestReport
from gateway.services.handoff.outbox import HandoffReport, HandoffService
from gateway.services.lineage.outputs import HarvestReport, OutputHarvester
from gateway.services.retention.sweep import RetentionSweeper, SweepReport
from gateway.services.runs.refresh import ReconcileReport, Refresher, RefreshReport
from gateway.services.runs.retry import RetryService
from gateway.store.db import Database
from gateway.store.lease import Lease
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)


@dataclass
class CycleReport:
    refresh: RefreshReport | None = None
    retried: list[str] = field(default_factory=list)
    harvest: HarvestReport | None = None
    evals: IngestReport | None = None
    problems: list[str] = field(default_factory=list)


class BackgroundWork:
    def __init__(
        self,
        db: Database,
        store: RunStore,
        refresher: Refresher,
        retries: RetryService,
        harvester: OutputHarvester,
        audit: AuditService,
        *,
        lease_ttl_s: float,
        evals: EvalIngest | None = None,
        metrics: GatewayMetrics | None = None,
        accounting: AccountingService | None = None,
        retention: RetentionSweeper | None = None,
        handoff: HandoffService | None = None,
        environments: BuildSettler | None = None,
    ) -> None:
        self.environments = environments  # the reconcile settles environment builds
        self.metrics = metrics or GatewayMetrics()  # the refresh cycle's time (GET /metrics)
        self.store = store
        self.audit = audit
        self.refresher = refresher
        self.retries = retries
        self.harvester = harvester
        self.evals = evals
        self.accounting = accounting
        self.retention = retention
        self.handoff = handoff
        holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease = Lease(db, "scheduler", holder, lease_ttl_s)
        self.leading = False

    def lead(self) -> bool:
        """Take or renew the scheduler lease; True while this process does the periodic work."""
        try:
            leading = self.lease.acquire()
        except GatewayError as exc:
            log.warning("cannot reach the database for the scheduler lease: %s", exc)
            leading = False
        if leading != self.leading:
            log.info("%s the scheduler lease (%s)", "took" if leading else "lost", self.lease.holder)
            self.leading = leading
        return leading

    def step_down(self) -> None:
        """Give the lease up (at shutdown), so another process takes over at once."""
        try:
            self.lease.release()
        except GatewayError as exc:
            log.warning("could not release the scheduler lease: %s", exc)

    def cycle(self) -> CycleReport:
        """Refresh, then due retries, output harvests, eval ingests (see the module docstring)."""
        report = CycleReport()
        if not self.lead():
            return report
        try:
            self.audit.checkpoint()  # anchors the audit chain outside the database (when it moved)
        except GatewayError as exc:  # the anchor file cannot be written, or the log is damaged: say so
            report.problems.append(f"audit checkpoint skipped: {exc}")
            log.warning("audit checkpoint skipped: %s", exc)
        started = time.monotonic()
        try:
            report.refresh = self.refresher.refresh()
        except GatewayError as exc:  # the database may be down for a moment; try next cycle
            self.metrics.refresh_cycle(time.monotonic() - started, ok=False)
            report.problems.append(f"refresh skipped: {exc}")
            log.warning("refresh cycle skipped: %s", exc)
            return report
        self.metrics.refresh_cycle(time.monotonic() - started, ok=True)
        try:
            report.retried = self.retries.process_due()
        except GatewayError as exc:
            report.problems.append(f"retries skipped: {exc}")
            log.warning("retries skipped: %s", exc)
        try:
            report.harvest = self.harvester.harvest_due()
        except GatewayError as exc:
            report.problems.append(f"output harvest skipped: {exc}")
            log.warning("output harvest skipped: %s", exc)
        if self.evals is not None:
            try:
                report.evals = self.evals.ingest_due()
            except GatewayError as exc:
                report.problems.append(f"eval ingest skipped: {exc}")
                log.warning("eval ingest skipped: %s", exc)
        if report.refresh.transitions or report.refresh.stale:
            log.info("refresh: %s", report.refresh)
        if report.retried:
            log.info("retried: %s", ", ".join(report.retried))
        if report.harvest and (report.harvest.artifacts or report.harvest.problems):
            log.info("outputs: %s", report.harvest)
        if report.evals and (report.evals.ingested or report.evals.refused or report.evals.failed):
            log.info("evals: %s", report.evals)
        return report

    def start_up(self) -> None:
        """At process start, lease or not: settle what a crash of this process left SUBMITTING.

        Safe beside a leader doing the same (a job id is recorded at most once).
        """
        try:
            report = self.refresher.reconcile()
        except GatewayError as exc:
            log.warning("start-up reconciliation skipped: %s", exc)
            return
        if report.adopted or report.never_submitted:
            log.info("start-up reconciliation: %s", report)

    def ingest_accounting(self) -> IngestCounts | None:
        """Ingest the cluster's sacct records into the accounting ledger (leader only); None when this
        process does not lead, has no accounting service, or the ingest failed (logged, tried next time).
        """
        if self.accounting is None or not self.lead():
            return None
        try:
            counts = self.accounting.ingest()
        except GatewayError as exc:
            log.warning("accounting ingest skipped: %s", exc)
            return None
        if counts.new or counts.updated:
            log.info("accounting: %s", counts)
        return counts

    def sweep_retention(self) -> SweepReport | None:
        """The retention sweep (leader only): deletions the policies allow, then the run directories
        measured; None when this process does not lead or the pass failed (logged, tried next time)."""
        if self.retention is None or not self.lead():
            return None
        try:
            report = self.retention.scheduled()
        except GatewayError as exc:
            log.warning("retention sweep skipped: %s", exc)
            return None
        if report.items or report.problems:
            log.info(
                "retention: %d deletions (%d bytes), %d problems",
                len(report.items),
                report.freed_bytes,
                len(report.problems),
            )
        return report

    def hand_off(self) -> HandoffReport | None:
        """Work the hand-off outbox: MLflow mirror jobs and webhook deliveries (leader only); None when
        this process does not lead or the database did not answer (logged, tried next time)."""
        if self.handoff is None or not self.lead():
            return None
        try:
            report = self.handoff.process_due()
        except GatewayError as exc:
            log.warning("hand-off skipped: %s", exc)
            return None
        if report.done or report.failed or report.dead:
            log.info("hand-off: %s", report)
        return report

    def reconcile(self) -> ReconcileReport | None:
        """Settle attempts a crash left SUBMITTING (leader only); drop expired idempotency keys."""
        if not self.lead():
            return None
        try:
            report = self.refresher.reconcile()
            self.store.forget_expired_keys()
        except GatewayError as exc:
            log.warning("reconcile skipped: %s", exc)
            return None
        if self.environments is not None:  # builds whose request died before their job was linked
            try:
                for version in self.environments.settle_building():
                    log.info("environment %s: %s", version.ref, version.failure or version.status)
            except GatewayError as exc:
                log.warning("environment builds not settled: %s", exc)
        return report

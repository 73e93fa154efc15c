"""Periodic jobs inside ``gw serve`` (APScheduler): each one is a single service call.

``BackgroundWork.cycle`` (refresh, due retries, output harvests) every
``refresh_interval_s``; ``BackgroundWork.reconcile`` every
``RECONCILE_INTERVAL_S``; ``BackgroundWork.ingest_accounting`` (sacct into
the accounting ledger) every ``accounting_interval_s``;
``BackgroundWork.sweep_retention`` (the retention sweep, docs/retention.md) every
``retention_interval_s``; ``BackgroundWork.hand_off`` (the MLflow mirror and webhook
outbox) every ``handoff_interval_s``. What runs, in which order and where (the scheduler
lease) is the service's to decide; this module only keeps time.
"""

from __future__ import annotations

from apscheduler.schedulers.background import BackgroundScheduler

from gateway.services import Services

RECONCILE_INTERVAL_S = 30


def start_scheduler(services: Services) -> BackgroundScheduler:
    """Start the periodic jobs; one run of each at a time, missed runs coalesced."""
    interval = services.settings.refresh_interval_s
    work = services.background
    scheduler = BackgroundScheduler(job_defaults={"coalesce": True, "max_instances": 1})
    scheduler.add_job(work.cycle, "interval", seconds=interval, id="refresh")
    scheduler.add_job(work.reconcile, "interval", seconds=RECONCILE_INTERVAL_S, id="reconcile")
    scheduler.add_job(
        work.ingest_accounting, "interval", seconds=services.settings.accounting_interval_s, id="accounting"
    )
    scheduler.add_job(
        work.sweep_retention, "interval", seconds=services.settings.retention_interval_s, id="retention"
    )
    scheduler.add_job(work.hand_off, "interval", seconds=services.settings.handoff_interval_s, id="handoff")
    scheduler.start()
    return scheduler

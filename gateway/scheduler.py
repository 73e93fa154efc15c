"""Periodic jobs inside ``gw serve``: the refresh cycle and crash reconciliation (APScheduler)."""

from __future__ import annotations

import logging

from apscheduler.schedulers.background import BackgroundScheduler

from gateway.errors import GatewayError
from gateway.services import Services

log = logging.getLogger(__name__)
RECONCILE_INTERVAL_S = 30


def _refresh(services: Services) -> None:
    try:
        report = services.refresher.refresh()
    except GatewayError as exc:  # the database may be down for a moment; try next cycle
        log.warning("refresh cycle skipped: %s", exc)
        return
    if report.transitions or report.stale:
        log.info("refresh: %s", report)


def _reconcile(services: Services) -> None:
    try:
        services.refresher.reconcile()
    except GatewayError as exc:
        log.warning("reconcile skipped: %s", exc)


def start_scheduler(services: Services) -> BackgroundScheduler:
    """Start the periodic jobs; one run of each at a time, missed runs coalesced."""
    scheduler = BackgroundScheduler(job_defaults={"coalesce": True, "max_instances": 1})
    scheduler.add_job(
        _refresh, "interval", seconds=services.settings.refresh_interval_s, args=[services], id="refresh"
    )
    scheduler.add_job(_reconcile, "interval", seconds=RECONCILE_INTERVAL_S, args=[services], id="reconcile")
    scheduler.start()
    return scheduler

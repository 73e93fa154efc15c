"""Periodic jobs inside ``gw serve``: the refresh cycle (then due retries and output harvests) and crash
reconciliation (APScheduler)."""

from __future__ import annotations

import logging
import os
import socket
import uuid

from apscheduler.schedulers.background import BackgroundScheduler

from gateway.errors import GatewayError
from gateway.services import Services
from gateway.store.lease import Lease

log = logging.getLogger(__name__)
RECONCILE_INTERVAL_S = 30


class Leader:
    """Whether this process runs the periodic jobs now: it holds the ``scheduler`` lease."""

    def __init__(self, services: Services, ttl_s: float) -> None:
        holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease = Lease(services.db, "scheduler", holder, ttl_s)
        self.leading = False

    def __call__(self) -> bool:
        try:
            leading = self.lease.acquire()
        except GatewayError as exc:
            log.warning("cannot reach the database for the scheduler lease: %s", exc)
            leading = False
        if leading != self.leading:
            log.info("%s the scheduler lease (%s)", "took" if leading else "lost", self.lease.holder)
            self.leading = leading
        return leading


def _refresh(services: Services, leader: Leader) -> None:
    if not leader():
        return
    try:
        report = services.refresher.refresh()
    except GatewayError as exc:  # the database may be down for a moment; try next cycle
        log.warning("refresh cycle skipped: %s", exc)
        return
    if report.transitions or report.stale:
        log.info("refresh: %s", report)
    try:
        retried = services.retries.process_due()
    except GatewayError as exc:
        log.warning("retries skipped: %s", exc)
        return
    if retried:
        log.info("retried: %s", ", ".join(retried))
    try:
        harvested = services.harvester.harvest_due()
    except GatewayError as exc:
        log.warning("output harvest skipped: %s", exc)
        return
    if harvested.artifacts or harvested.problems:
        log.info("outputs: %s", harvested)


def _reconcile(services: Services, leader: Leader) -> None:
    if not leader():
        return
    try:
        services.refresher.reconcile()
    except GatewayError as exc:
        log.warning("reconcile skipped: %s", exc)


def start_scheduler(services: Services) -> tuple[BackgroundScheduler, Leader]:
    """Start the periodic jobs; one run of each at a time, missed runs coalesced.

    Every process starts them; each run first takes or renews the scheduler
    lease, so with several ``gw serve`` on one database only one works at a time.
    """
    interval = services.settings.refresh_interval_s
    leader = Leader(services, ttl_s=max(3 * interval, 15.0))
    scheduler = BackgroundScheduler(job_defaults={"coalesce": True, "max_instances": 1})
    scheduler.add_job(_refresh, "interval", seconds=interval, args=[services, leader], id="refresh")
    scheduler.add_job(
        _reconcile, "interval", seconds=RECONCILE_INTERVAL_S, args=[services, leader], id="reconcile"
    )
    scheduler.start()
    return scheduler, leader

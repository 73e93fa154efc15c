"""The FastAPI application factory: settings and services are built here, not at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gateway import __version__
from gateway.api.errors import install_error_handlers
from gateway.api.routes import admin, datasets, health, lineage, projects, runs, tokens
from gateway.errors import GatewayError
from gateway.services import Services, build_services
from gateway.settings import Settings

log = logging.getLogger(__name__)

DESCRIPTION = """
Submit training runs to Slurm, follow them to their end, read their output.

Runs are typed specs (`RunSpec`) rendered into sbatch scripts; each Slurm job
is an *attempt* with its accounting and a timeline of state events. Errors
share one shape: `{"error": kind, "detail": message or field issues}`.
"""


def create_app(
    settings: Settings | None = None,
    *,
    services: Services | None = None,
    run_scheduler: bool = False,
) -> FastAPI:
    """Build the API. With ``run_scheduler`` the periodic refresh runs in-process (``gw serve``)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = services is None
        built = services or build_services(settings or Settings())
        app.state.services = built
        try:
            report = built.refresher.reconcile()
            if report.adopted or report.never_submitted:
                log.info("start-up reconciliation: %s", report)
        except GatewayError as exc:
            log.warning("start-up reconciliation skipped: %s", exc)
        scheduler = leader = None
        if run_scheduler:
            from gateway.scheduler import start_scheduler

            scheduler, leader = start_scheduler(built)
        app.state.leader = leader
        try:
            yield
        finally:
            if scheduler is not None:
                scheduler.shutdown(wait=True)
                leader.lease.release()
            if owned:
                built.close()

    app = FastAPI(
        title="the gateway",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(runs.router)
    app.include_router(lineage.router)
    app.include_router(datasets.router)
    app.include_router(projects.router)
    app.include_router(tokens.router)
    app.include_router(admin.router)
    return app

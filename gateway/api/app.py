"""The FastAPI application factory: settings and services are built here, not at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gateway import __version__
from gateway.api.blocking import FileReads
from gateway.api.body_limits import BodyLimits
from gateway.api.docs_pages import install_docs_pages
from gateway.api.errors import install_error_handlers
from gateway.api.responses import document_errors
from gateway.api.routes import (
    accounting,
    admin,
    aliases,
    datasets,
    environments,
    evals,
    evidence,
    handoff,
    health,
    lineage,
    metrics,
    projects,
    releases,
    reports,
    retention,
    run_files,
    runs,
    runs_submit,
    telemetry,
    tokens,
)
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services

log = logging.getLogger(__name__)

DESCRIPTION = """
Submit training runs to Slurm, follow them to their end, read their output.

Runs are typed specs (`RunSpec`) rendered into sbatch scripts; each Slurm job
is an *attempt* with its accounting and a timeline of state events. Errors
share one shape: `{"error": kind, "detail": message or field issues}`.

Request bodies are strict JSON: at most 4 MiB by default (413 above), nested
at most 64 levels, no NaN or Infinity, no duplicate keys (422, naming the field).
"""


def create_app(
    settings: Settings | None = None,
    *,
    services: Services | None = None,
    run_scheduler: bool = False,
    upgrade: bool = True,
) -> FastAPI:
    """Build the API. With ``run_scheduler`` the periodic refresh runs in-process (``gw serve``).

    ``upgrade``: services built here upgrade the database schema first (``gw serve`` has done it
    once before its workers start, and passes False).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = services is None
        built = services or build_services(settings or Settings(), upgrade=upgrade)
        app.state.services = built
        app.state.file_reads = FileReads(
            at_once=built.settings.file_reads_at_once, wait_s=built.settings.file_read_wait_s
        )
        built.background.start_up()
        scheduler = None
        if run_scheduler:
            from gateway.scheduler import start_scheduler

            scheduler = start_scheduler(built)
        try:
            yield
        finally:
            if scheduler is not None:  # bounded: a run stuck on Slurm does not hold the shutdown
                scheduler.stop(built.settings.scheduler_stop_grace_s)
                built.background.step_down()
            if owned:
                built.close()

    app = FastAPI(
        title="the gateway",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served from the package's assets, not a CDN (gateway.api.docs_pages)
        redoc_url=None,
    )
    install_docs_pages(app)
    install_error_handlers(app)
    app.add_middleware(BodyLimits)
    app.include_router(health.router)
    app.include_router(accounting.router)
    app.include_router(runs_submit.router)
    app.include_router(runs.router)
    app.include_router(run_files.router)
    app.include_router(lineage.router)
    app.include_router(telemetry.router)
    app.include_router(datasets.router)
    app.include_router(environments.router)
    app.include_router(environments.runs_router)
    app.include_router(evals.router)
    app.include_router(releases.router)
    app.include_router(aliases.router)
    app.include_router(handoff.router)
    app.include_router(evidence.router)
    app.include_router(projects.router)
    app.include_router(tokens.router)
    app.include_router(admin.router)
    app.include_router(metrics.router)
    app.include_router(reports.router)
    app.include_router(retention.router)
    _document_errors(app)
    return app


def _document_errors(app: FastAPI) -> None:
    """The error answers every operation may give, in the OpenAPI (``gateway.api.responses``)."""
    build = app.openapi

    def openapi() -> dict:
        return document_errors(build())  # built once and cached by FastAPI; the additions are idempotent

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI documents replacing it so

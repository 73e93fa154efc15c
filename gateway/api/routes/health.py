"""Liveness and dependency checks."""

from __future__ import annotations

import time

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from gateway.api.deps import ServicesDep
from gateway.api.schemas import CheckPublic, HealthPublic
from gateway.errors import GatewayError

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=HealthPublic,
    responses={503: {"model": HealthPublic, "description": "A dependency does not answer"}},
    summary="Database and Slurm reachability",
)
def healthz(services: ServicesDep) -> JSONResponse:
    """Checks the database (one query) and Slurm (one partition listing), with their latencies."""
    try:
        database = CheckPublic(ok=True, latency_ms=round(services.db.ping() * 1000, 2))
    except GatewayError as exc:
        database = CheckPublic(ok=False, latency_ms=None, error=str(exc))
    started = time.perf_counter()
    try:
        services.slurm.partitions()
        slurm = CheckPublic(ok=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))
    except GatewayError as exc:
        slurm = CheckPublic(ok=False, latency_ms=None, error=str(exc))
    healthy = database.ok and slurm.ok
    body = HealthPublic(status="ok" if healthy else "degraded", database=database, slurm=slurm)
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if healthy else 503)

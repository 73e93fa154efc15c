"""Liveness and dependency checks."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from gateway.api.deps import ServicesDep
from gateway.api.schemas import CheckPublic, HealthPublic

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=HealthPublic,
    responses={503: {"model": HealthPublic, "description": "A dependency does not answer"}},
    summary="Database and Slurm reachability",
)
def healthz(services: ServicesDep) -> JSONResponse:
    """Checks the database (one query) and Slurm (one partition listing; with several clusters, one
    each), with their latencies."""
    health = services.health.check()
    body = HealthPublic(
        status="degraded" if health.degraded else "ok",
        database=CheckPublic(**health.database.__dict__),
        slurm=CheckPublic(**health.slurm.__dict__),
        clusters={n: CheckPublic(**c.__dict__) for n, c in health.clusters.items()} or None,
    )
    answer = body.model_dump(mode="json")
    if body.clusters is None:
        del answer["clusters"]  # one cluster: the answer it always was
    return JSONResponse(answer, status_code=200 if health.ok else 503)

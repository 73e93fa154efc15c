"""GPU telemetry routes: a run's per-attempt GPU summaries and samples."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.routes.run_params import ERRORS, RunId
from gateway.api.schemas_telemetry import RunTelemetryPublic
from gateway.errors import NotFound

router = APIRouter(tags=["runs"])


@router.get(
    "/runs/{run_id}/telemetry",
    response_model=RunTelemetryPublic,
    responses={404: ERRORS[404], 422: ERRORS[422], 503: ERRORS[503]},
    summary="A run's GPU telemetry",
)
def run_telemetry(
    run_id: RunId,
    services: ServicesDep,
    principal: PrincipalDep,
    samples: Annotated[bool, Query(description="Include each GPU's thinned samples (for plots)")] = False,
) -> RunTelemetryPublic:
    """Per attempt that had GPUs: each GPU's mean and max utilisation, peak memory, energy and idle
    fraction, the attempt's allocated and idle GPU-hours; with ``samples`` the samples to plot."""
    if services.telemetry is None:
        raise NotFound("GPU telemetry is not set up in this gateway")
    return RunTelemetryPublic.model_validate(
        services.telemetry.for_run(run_id, principal=principal, samples=samples)
    )

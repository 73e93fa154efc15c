"""Accounting routes: a run's cost, and an ingest of the cluster's sacct records. One service call each."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.routes.run_params import RunId
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_accounting import IngestPublic, IngestRequest, RunCostPublic

router = APIRouter(tags=["accounting"])


@router.get(
    "/runs/{run_id}/cost",
    response_model=RunCostPublic,
    responses={404: {"model": ErrorPublic, "description": "No such run (or not one you may read)"}},
    summary="A run's cost",
)
def run_cost(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunCostPublic:
    """Every accounting record of the run's attempts (each Slurm requeue is one), with GPU-hours,
    core-hours and cost by the rate table version that priced it; failed attempts cost too."""
    return RunCostPublic.of(services.accounting.run_cost(principal, run_id))


@router.post(
    "/admin/accounting/ingest",
    response_model=IngestPublic,
    responses={
        403: {"model": ErrorPublic, "description": "Site admins only"},
        503: {"model": ErrorPublic, "description": "sacct or the database does not answer; retry"},
    },
    summary="Ingest the cluster's sacct records",
)
def ingest(
    services: ServicesDep, principal: PrincipalDep, body: Annotated[IngestRequest | None, Body()] = None
) -> IngestPublic:
    """Read sacct for the whole cluster (every user, each requeued attempt, all states) from `since`
    to now, in overlapping windows; a re-read changes nothing. Returns the counts."""
    since = body.since if body else None
    return IngestPublic.of(services.accounting.ingest_as(principal, since))

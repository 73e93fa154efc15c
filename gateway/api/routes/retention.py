"""Retention routes: holds, the sweep (admins), storage, what expired of a run (docs/retention.md)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.run_params import ERRORS, RunId
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_retention import (
    PROJECT_PATTERN,
    DeletionPublic,
    HoldCreate,
    HoldLift,
    HoldPublic,
    StoragePublic,
    SweepPublic,
)
from gateway.core.retention.plan import expired_note

router = APIRouter(prefix="/retention", tags=["retention"])
ProjectQuery = Annotated[str | None, Query(pattern=PROJECT_PATTERN, description="Only this project")]
HoldId = Annotated[str, Path(pattern=r"^hold-[0-9a-f]{1,32}$", description="A hold's id")]
RESPONSES: Responses = {
    403: {"model": ErrorPublic, "description": "Not allowed"},
    404: {"model": ErrorPublic, "description": "No such run, model, project or hold (or not yours)"},
    422: ERRORS[422],
    503: ERRORS[503],
}


LIFT_RESPONSES: Responses = {**RESPONSES, 409: {"model": ErrorPublic, "description": "Lifted already"}}


@router.get("/holds", response_model=list[HoldPublic], responses=RESPONSES, summary="List holds")
def list_holds(
    services: ServicesDep,
    principal: PrincipalDep,
    project: ProjectQuery = None,
    include_lifted: Annotated[bool, Query(description="Lifted holds too")] = False,
) -> list[HoldPublic]:
    """The holds of the caller's projects (or ``project``), newest first."""
    return [HoldPublic.of(h) for h in services.holds.list(principal, project, include_lifted=include_lifted)]


@router.post(
    "/holds",
    response_model=HoldPublic,
    status_code=status.HTTP_201_CREATED,
    responses=RESPONSES,
    summary="Put a hold",
)
def place_hold(body: HoldCreate, services: ServicesDep, principal: PrincipalDep) -> HoldPublic:
    """Hold a run, a model (PROJECT/NAME) or a project: nothing under it is deleted until the hold is
    lifted. Leads of its project and admins; audited."""
    return HoldPublic.of(services.holds.place(principal, body.target_type, body.target_id, body.reason))


@router.post(
    "/holds/{hold_id}/lift",
    response_model=HoldPublic,
    responses=LIFT_RESPONSES,
    summary="Lift a hold",
)
def lift_hold(hold_id: HoldId, body: HoldLift, services: ServicesDep, principal: PrincipalDep) -> HoldPublic:
    """Lift a hold (leads of its project and admins; audited); the next sweep may delete again."""
    return HoldPublic.of(services.holds.lift(principal, hold_id, body.reason))


@router.post("/sweep", response_model=SweepPublic, responses=RESPONSES, summary="Run a retention sweep")
def sweep(
    services: ServicesDep,
    principal: PrincipalDep,
    dry_run: Annotated[bool, Query(description="List what would be deleted; delete nothing")] = True,
    project: ProjectQuery = None,
    as_of: Annotated[
        datetime | None, Query(description="Dry runs only: plan as if it were then (ISO 8601, UTC)")
    ] = None,
) -> SweepPublic:
    """One pass of the sweep (site admins): each deletion the policies allow, measured, recorded,
    deleted as the files' owner and audited; ``dry_run`` (the default) only lists them."""
    return SweepPublic.of(services.retention.sweep(principal, dry_run=dry_run, project=project, as_of=as_of))


@router.get("/storage", response_model=StoragePublic, responses=RESPONSES, summary="Storage report")
def storage(
    services: ServicesDep,
    principal: PrincipalDep,
    by: Annotated[
        Literal["project", "user", "run"], Query(description="One row per project, user or run")
    ] = ("project"),
    project: ProjectQuery = None,
) -> StoragePublic:
    """Bytes of run directories per project, user or run (as last measured), each project against its
    space limit, growth, and what the next sweep would free."""
    return StoragePublic.of(services.storage.report(principal, by=by, project=project))


@router.get(
    "/runs/{run_id}",
    response_model=list[DeletionPublic],
    responses=RESPONSES,
    summary="What expired of a run",
)
def run_expired(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> list[DeletionPublic]:
    """The deletions recorded for the run: what, size, digest, rule, when; the run's record stays."""
    return [
        DeletionPublic(
            **{k: v for k, v in asdict(d).items() if k not in ("run_dir", "os_user", "sweep_id")},
            words=expired_note(d.done_at, d.rule) if d.state == "done" and d.done_at else None,
        )
        for d in services.expired.of_run(principal, run_id)
    ]

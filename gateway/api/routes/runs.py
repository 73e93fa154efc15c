"""Run routes for a run on record: list, show, cancel, rerun. Each is one service call."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Body, Query, Response, status
from pydantic import AfterValidator, BeforeValidator

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.routes.run_params import ERRORS, IdempotencyKey, RunId
from gateway.api.routes.runs_submit import submitted_response
from gateway.api.schemas import ErrorPublic, RerunRequest, RunPublic, RunsPublic
from gateway.core import names
from gateway.core.described import documented
from gateway.core.runs.paging import CURSOR_HELP, CURSOR_PATTERN, Cursor
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState

router = APIRouter(prefix="/runs", tags=["runs"])

CursorText = Annotated[str, documented(pattern=CURSOR_PATTERN)]


def _cursor_text(text: str | None) -> str | None:
    """A cursor (checked here, so a bad one is a 422 at the query, saying what a cursor is)."""
    if text is not None:
        Cursor.decode(text)
    return text


ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
SINCE_HELP = "Only runs created at or after this time (ISO 8601; without an offset it is UTC)."
UNTIL_HELP = "Only runs created before this time (ISO 8601; without an offset it is UTC)."


def _iso(value: object) -> object:
    """A query's time as ISO 8601 text only (pydantic would take ``0.5`` as seconds since 1970)."""
    if isinstance(value, str) and not ISO_DATE.match(value):
        raise ValueError("give an ISO 8601 date-time, e.g. 2026-11-30T04:00:00Z")
    return value


def _utc(when: datetime | None) -> datetime | None:
    """``when`` as an aware datetime (a naive one is UTC)."""
    if when is None:
        return None
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


@router.get(
    "",
    response_model=RunsPublic,
    responses={422: ERRORS[422], 404: {"model": ErrorPublic, "description": "No such cluster"}},
    summary="List runs",
)
def list_runs(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=f"^{names.NAME.pattern}$")] = None,
    state: RunState | None = None,
    submitter: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    tag: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    since: Annotated[datetime | None, BeforeValidator(_iso), Query(description=SINCE_HELP)] = None,
    until: Annotated[datetime | None, BeforeValidator(_iso), Query(description=UNTIL_HELP)] = None,
    cursor: Annotated[
        CursorText | None, AfterValidator(_cursor_text), Query(description=f"Where to go on: {CURSOR_HELP}")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cluster: Annotated[
        str | None,
        Query(
            pattern=f"^{names.NAME.pattern}$",
            description="Only runs with an attempt on this Slurm cluster (404 names the clusters when it is "
            "none of them; docs/clusters.md)",
        ),
    ] = None,
) -> RunsPublic:
    """Runs, newest first, filtered (``since`` <= created_at < ``until``); follow ``next_cursor`` for more."""
    after = Cursor.decode(cursor) if cursor else None
    where = RunFilter(
        project=project,
        state=state,
        submitter=submitter,
        tag=tag,
        since=_utc(since),
        until=_utc(until),
        cluster=cluster,
        cursor=after,
        limit=limit,
    )
    return RunsPublic.of(services.runs.list(principal=principal, where=where))


@router.get("/{run_id}", response_model=RunPublic, responses={404: ERRORS[404]}, summary="Show a run")
def get_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunPublic:
    """The spec as submitted, the rendered script, every attempt with its accounting and timeline,
    and, while it waits, why (in words and numbers; from what the gateway last learned, so watching a
    run costs Slurm nothing)."""
    return RunPublic.of_view(services.runs.show(run_id, principal=principal))


@router.post(
    "/{run_id}/cancel",
    response_model=RunPublic,
    responses={404: ERRORS[404], 409: {"model": ErrorPublic, "description": "Still submitting"}},
    summary="Cancel a run",
)
def cancel_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunPublic:
    """Ask Slurm to cancel the run's live attempt. A run that already ended comes back unchanged.
    Members cancel their own runs; leads any run of the project."""
    return RunPublic.of(services.runs.cancel(run_id, principal=principal))


@router.post(
    "/{run_id}/rerun",
    status_code=status.HTTP_201_CREATED,
    response_model=RunPublic,
    responses={
        403: {
            "model": ErrorPublic,
            "description": "Not allowed: another person's run needs a lead (it runs as its owner) or as_me",
        },
        404: ERRORS[404],
        409: ERRORS[409],
        422: ERRORS[422],
    },
    summary="Fix and rerun",
)
def rerun(
    run_id: RunId,
    body: Annotated[
        RerunRequest,
        Body(openapi_examples={"more memory": {"value": {"set": ["resources.mem_gb=4"]}}}),
    ],
    services: ServicesDep,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,  # type: ignore[assignment]  # a plain string in OpenAPI; absent: None
) -> Response:
    """A new run derived from this one, with the changes recorded as a diff and a link both ways.
    The original run keeps all its evidence. A rerun of another person's run runs as its owner
    (their OS user; ``requested_by`` names the caller; leads only, and only resources and scheduling
    may change), or with ``as_me`` under the caller's own identity (audited with the command)."""
    submitted = services.runs.rerun_keyed(
        run_id,
        principal=principal,
        changes=body.set,
        spec=body.spec,
        idempotency_key=idempotency_key,
        as_me=body.as_me,
    )
    return submitted_response(submitted)

"""Report routes: usage, cost and efficiency over the accounting records (docs/reports.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.evals import ERRORS
from gateway.api.schemas_report import ReportPublic
from gateway.core import names
from gateway.core.reports.periods import PERIOD_HELP, PERIOD_PATTERN

router = APIRouter(tags=["reports"])
TEXT = {"schema": {"type": "string"}}
RESPONSES: Responses = {
    200: {
        "description": "The report: JSON (ReportPublic), or CSV, a plain-text table, or one HTML page",
        "content": {"text/csv": TEXT, "text/plain": TEXT, "text/html": TEXT},
    },
    404: ERRORS[404],
    422: ERRORS[422],
}
Kind = Annotated[Literal["usage", "cost", "efficiency"], Path(description="Which report")]
By = Annotated[
    Literal["project", "user", "queue", "run", "release", "cluster"],
    Query(description="One row per value of this (cluster: the Slurm cluster the record ran on)"),
]
Period = Annotated[
    str | None,
    Query(pattern=PERIOD_PATTERN, max_length=22, description=f"{PERIOD_HELP}; default: this month"),
]
ProjectFilter = Annotated[
    str | None, Query(pattern=f"^{names.NAME.pattern}$", description="Only this project's records")
]
Format = Annotated[Literal["json", "csv", "table", "html"], Query(description="The answer's form")]
Charts = Annotated[bool, Query(description="JSON: include what the HTML page plots (the page always has it)")]


@router.get(
    "/reports/{kind}",
    response_model=ReportPublic,
    responses=RESPONSES,
    summary="A usage, cost or efficiency report",
)
def report(
    kind: Kind,
    services: ServicesDep,
    principal: PrincipalDep,
    by: By = "project",
    period: Period = None,
    project: ProjectFilter = None,
    format: Format = "json",  # noqa: A002 - the query parameter's name
    charts: Charts = False,
) -> ReportPublic | Response:
    """GPU-hours, CPU-hours, cost, waits, the failed share, GPU utilisation and idle GPU-hours, per
    project, user, queue, run, release or Slurm cluster, over a month, ISO week or range of days (UTC);
    the rate versions that priced it. Members see their projects' records, site admins every record."""
    built = services.reports.report(
        principal, kind, by=by, period=period, project=project, charts=charts or format == "html"
    )
    if format == "json":
        return ReportPublic.of(built)
    rendered = services.reports.render(built, format)
    return Response(rendered.text, media_type=rendered.media_type)

"""Projects (their queues and caps) and their usage."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_admin import ProjectPublic, UsageReportPublic
from gateway.core import names

router = APIRouter(prefix="/projects", tags=["projects"])
ProjectName = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$", description="A project name")]
NOT_FOUND: Responses = {404: {"model": ErrorPublic, "description": "No such project (or not yours)"}}
NO_USAGE: Responses = {
    404: {"model": ErrorPublic, "description": "No such project (or not yours), or no such cluster"}
}


@router.get("", response_model=list[ProjectPublic], summary="List projects")
def list_projects(services: ServicesDep, principal: PrincipalDep) -> list[ProjectPublic]:
    """The projects the caller belongs to (all of them for a site admin)."""
    return [ProjectPublic.of(p) for p in services.projects.visible(principal)]


@router.get("/{project}", response_model=ProjectPublic, responses=NOT_FOUND, summary="Show a project")
def get_project(project: ProjectName, services: ServicesDep, principal: PrincipalDep) -> ProjectPublic:
    """A project: its Slurm account, caps, members and queues."""
    return ProjectPublic.of(services.projects.get(principal, project))


@router.get(
    "/{project}/usage", response_model=UsageReportPublic, responses=NO_USAGE, summary="A project's usage"
)
def project_usage(
    project: ProjectName,
    services: ServicesDep,
    principal: PrincipalDep,
    cluster: Annotated[
        str | None,
        Query(
            pattern=f"^{names.NAME.pattern}$",
            description="On this Slurm cluster (each enforces the caps on its own associations; 404 "
            "names the clusters); default: the first (docs/clusters.md)",
        ),
    ] = None,
) -> UsageReportPublic:
    """GPUs in use now, GPU-hours this month (from Slurm accounting) and jobs in queue, against the caps,
    for the project and each of its users, on one cluster."""
    return UsageReportPublic.of(services.usage.project_usage(principal, project, cluster=cluster))

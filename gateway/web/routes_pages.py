"""Project pages (quota and usage against the caps) and the admin's queue page."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from gateway.core import names
from gateway.services.accounting.usage import ClusterUsage
from gateway.services.retention.storage import StorageReport
from gateway.web import svg
from gateway.web.deps import PagesDep, PrincipalDep, services_of

router = APIRouter()
Name = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
MIB = 1024 * 1024


@router.get("/projects")
def projects(request: Request, pages: PagesDep, principal: PrincipalDep) -> Response:
    """The caller's projects with their queues and caps."""
    found = services_of(request).projects.visible(principal)
    return pages.render(request, "projects.html", principal, projects=found)


@router.get("/projects/{project}")
def project_page(request: Request, project: Name, pages: PagesDep, principal: PrincipalDep) -> Response:
    """A project: caps, queues, members, usage now and this month on each cluster it has queues on
    (drawn against the caps; a cluster that does not answer shown by its error), what its priced
    accounting records this month cost, and its run directories' storage (against the space limit,
    over time, per user) with its retention holds."""
    services = services_of(request)
    found = services.projects.get(principal, project)
    usages = [_usage_block(u) for u in services.usage.usage_by_cluster(principal, project)]
    # this month's cost: the cost report (gw report cost --by project --project P) of the project
    cost = services.reports.report(principal, "cost", by="project", project=project)
    storage = services.storage.report(principal, by="user", project=project)
    holds = services.holds.list(principal, project)
    return pages.render(
        request,
        "project.html",
        principal,
        project=found,
        usages=usages,
        cost=cost,
        storage=storage,
        space=storage.projects[0] if storage.projects else None,
        storage_plots=_storage_plots(storage),
        holds=holds,
    )


def _usage_block(found: ClusterUsage) -> dict[str, Any]:
    """One cluster's usage for the page: its name, the usage (None with ``error``: Slurm did not
    answer, the page still shows the caps) and its bars drawn against the caps."""
    bars = []
    if found.usage is not None:
        for label, use in (
            ("GPU-hours this month", found.usage.gpu_hours),
            ("GPUs in use now", found.usage.gpus),
            ("Jobs in queue", found.usage.jobs_in_queue),
        ):
            bars.append(svg.use_bar(label, use.used, use.cap, use.unit))
    return {"cluster": found.cluster, "usage": found.usage, "error": found.error, "bars": bars}


def _storage_plots(storage: StorageReport) -> list[object]:
    """The space bar against the limit (MiB) and the total over time (hours since the first sample)."""
    plots: list[object] = []
    for space in storage.projects:
        if space.size_bytes is not None:
            limit = space.limit_bytes / MIB if space.limit_bytes is not None else None
            plots.append(svg.use_bar("Run directories (MiB)", space.size_bytes / MIB, limit, "MiB"))
    if storage.samples:
        first = storage.samples[0].at
        points = [[(s.at - first).total_seconds() / 3600, s.size_bytes / MIB] for s in storage.samples]
        plots.append(
            svg.line_plot({"run directories, MiB": points}, x_label="hours", empty="not measured yet")
        )
    return plots


@router.get("/queue")
def queue_page(
    request: Request, pages: PagesDep, principal: PrincipalDep, cluster: Annotated[str | None, Query()] = None
) -> Response:
    """The admin's queue: partitions, nodes and GPUs, running and pending jobs, per-project usage; each
    cluster's, named (``?cluster=``: that one's alone)."""
    view = services_of(request).usage.queue(principal, cluster=cluster)
    return pages.render(request, "queue.html", principal, view=view)

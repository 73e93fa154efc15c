"""Site administration: the queue view, the site file, Slurm sync, and the audit log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_admin import (
    AuditEventPublic,
    AuditPagePublic,
    AuditVerifyPublic,
    ChangesPublic,
    QueueViewPublic,
)
from gateway.core import names
from gateway.core.site.schema import SiteConfig

router = APIRouter(tags=["admin"])
FORBIDDEN: Responses = {403: {"model": ErrorPublic, "description": "Site admins only"}}


@router.get(
    "/queue",
    response_model=QueueViewPublic,
    responses={**FORBIDDEN, 404: {"model": ErrorPublic, "description": "No such cluster"}},
    summary="The admin's queue view",
)
def queue_view(
    services: ServicesDep,
    principal: PrincipalDep,
    cluster: Annotated[
        str | None,
        Query(
            pattern=f"^{names.NAME.pattern}$",
            description="Only this Slurm cluster's partitions and usage (404 names the clusters; "
            "docs/clusters.md)",
        ),
    ] = None,
) -> QueueViewPublic:
    """Per partition (of each cluster, with several): nodes with GPUs in use and free, running and pending
    jobs (gateway runs and others); per project: usage against its caps, on each cluster it has queues on
    (each entry's ``cluster``)."""
    return QueueViewPublic.of(services.usage.queue(principal, cluster=cluster))


@router.get("/admin/site", response_model=SiteConfig, responses=FORBIDDEN, summary="Export the site file")
def export_site(services: ServicesDep, principal: PrincipalDep) -> SiteConfig:
    """Users, projects, members, queues and caps, in the site file's format."""
    return services.site.export(principal)


@router.post(
    "/admin/site",
    response_model=ChangesPublic,
    responses={
        **FORBIDDEN,
        409: {
            "model": ErrorPublic,
            "description": "The apply would remove the caller or leave no admin; nothing was changed",
        },
    },
    summary="Apply a site file",
)
def apply_site(
    config: Annotated[SiteConfig, Body()],
    services: ServicesDep,
    principal: PrincipalDep,
    dry_run: Annotated[bool, Query(description="Only say what would change")] = False,
    sync_slurm: Annotated[bool, Query(description="Also push the caps to Slurm")] = True,
    prune: Annotated[
        bool, Query(description="Remove the users and projects the file leaves out (default: keep them)")
    ] = False,
) -> ChangesPublic:
    """Make the gateway match the site file (idempotently), then Slurm's associations.
    Users and projects the file leaves out are removed only with `prune` (never the caller, nor the
    last admin); without it they are listed in `kept`. Every change is audited."""
    return ChangesPublic.of(
        services.site.apply(principal, config, dry_run=dry_run, sync_slurm=sync_slurm, prune=prune)
    )


@router.post(
    "/admin/sync-slurm", response_model=ChangesPublic, responses=FORBIDDEN, summary="Push caps to Slurm"
)
def sync_slurm(
    services: ServicesDep,
    principal: PrincipalDep,
    dry_run: Annotated[bool, Query(description="Only say what would change")] = False,
) -> ChangesPublic:
    """Add, change and remove Slurm accounts and associations so Slurm holds jobs to the same caps."""
    return ChangesPublic(changes=[], slurm=services.slurm_sync.sync(principal, dry_run=dry_run))


@router.get(
    "/audit",
    response_model=AuditPagePublic,
    responses={
        403: {"model": ErrorPublic, "description": "Neither a site admin nor a project lead"},
        404: {"model": ErrorPublic, "description": "No such project (or not one you lead)"},
    },
    summary="Read the audit log",
)
def audit_log(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=f"^{names.NAME.pattern}$")] = None,
    actor: Annotated[str | None, Query(pattern=f"^{names.TAG.pattern}$")] = None,
    action: Annotated[str | None, Query(pattern=r"^[a-z_.]{1,64}$")] = None,
    target: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9._/:-]{1,128}$")] = None,
    after: Annotated[
        int | None, Query(ge=0, le=2**31 - 1, description="next_after of the previous page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> AuditPagePublic:
    """Audit events in order. Site admins see all; project leads see their projects' events."""
    page = services.audit.events(
        principal, project=project, actor=actor, action=action, target=target, after=after, limit=limit
    )
    return AuditPagePublic(items=[AuditEventPublic.of(e) for e in page.items], next_after=page.next_after)


@router.get(
    "/audit/verify", response_model=AuditVerifyPublic, responses=FORBIDDEN, summary="Verify the audit chain"
)
def audit_verify(services: ServicesDep, principal: PrincipalDep) -> AuditVerifyPublic:
    """Recompute the hash chain and check it against the checkpoints kept outside the database: names
    every edited or deleted event, a log cut at its end, and a missing or damaged anchor file."""
    return AuditVerifyPublic.of(services.audit.verify(principal))

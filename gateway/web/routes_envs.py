"""Training environments: the list, an environment's versions (with a diff of two), and a version's
page (its packages, lock file, the change from its parent and the runs that used it)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from gateway.core import names
from gateway.core.envs.diff import diff_lines
from gateway.services.envs.registry import EnvDiff
from gateway.web.deps import PagesDep, PrincipalDep, services_of

router = APIRouter()
Name = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
Selector = Annotated[str | None, Query(pattern=r"^(latest|v?\d{1,9}|sha256:[0-9a-f]{8,64})$")]


@router.get("/environments")
def environments(request: Request, pages: PagesDep, principal: PrincipalDep) -> Response:
    """Every environment of the caller's projects, with its newest version."""
    found = services_of(request).environments.catalog.list(principal=principal)
    return pages.render(request, "environments.html", principal, environments=found)


@router.get("/environments/{project}/{name}")
def environment_page(
    request: Request,
    project: Name,
    name: Name,
    pages: PagesDep,
    principal: PrincipalDep,
    old: Selector = None,
    new: Selector = None,
) -> Response:
    """An environment's versions (newest first); with ``old`` and ``new``, the packages that changed."""
    services = services_of(request)
    env = services.environments.catalog.get(project, name, principal=principal)
    versions = sorted(
        services.environments.catalog.versions(project, name, principal=principal), key=lambda v: -v.number
    )
    diff = None
    if old and new:
        found = services.environments.diff(
            f"{name}@{old}", f"{name}@{new}", project=project, principal=principal
        )
        diff = diff_context(found)
    return pages.render(
        request, "environment.html", principal, env=env, versions=versions, diff=diff, old=old, new=new
    )


@router.get("/environments/{project}/{name}/{number}")
def version_page(
    request: Request,
    project: Name,
    name: Name,
    number: Annotated[int, Path(ge=1, le=999_999_999)],
    pages: PagesDep,
    principal: PrincipalDep,
) -> Response:
    """One version: its status, digest, location, installed set, lock, the change from its parent."""
    services = services_of(request)
    version = services.environments.catalog.resolve(
        f"{project}/{name}@{number}", project=project, principal=principal
    )
    parent_lines = diff_lines(version.parent_diff) if version.parent_diff else []
    runs = services.environments.catalog.runs_using(version, limit=50)
    report = services.environments.scan(version.ref, project=project, principal=principal)
    return pages.render(
        request,
        "env_version.html",
        principal,
        version=version,
        parent_lines=parent_lines,
        runs=runs,
        report=report,
    )


def diff_context(found: EnvDiff) -> dict[str, Any]:
    """A dependency change record as the pages show it: both sides, one line per change, the count kept."""
    return {
        "old": found.old,
        "new": found.new,
        "lines": diff_lines(found.packages),
        "unchanged": found.packages["unchanged"],
        "image": found.image,
        "missing": None,  # why there is no record (the compare page's two runs)
    }

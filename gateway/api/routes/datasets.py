"""Dataset routes: register versions, list, show, compare versions, share. Each is one service call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_lineage import (
    DatasetDiffPublic,
    DatasetPublic,
    DatasetVersionCreate,
    DatasetVersionDetail,
    DatasetVersionPublic,
    DatasetVersionRegistered,
    FileEntryPublic,
)
from gateway.core import names
from gateway.core.spec.lineage import VERSION_SELECTOR, VERSION_SELECTOR_HELP
from gateway.services.lineage.datasets import Registration

router = APIRouter(prefix="/datasets", tags=["datasets"])

NAME_PATTERN = f"^{names.NAME.pattern}$"
Project = Annotated[str, Path(pattern=NAME_PATTERN, description="The owning project")]
Name = Annotated[str, Path(pattern=NAME_PATTERN, description="The dataset's name in its project")]
VERSION_PATTERN = f"^({VERSION_SELECTOR})$"
VERSION_HELP = VERSION_SELECTOR_HELP
Version = Annotated[str, Path(pattern=VERSION_PATTERN, description=VERSION_HELP)]
ERRORS: Responses = {
    403: {"model": ErrorPublic, "description": "Your role in the project does not allow it"},
    404: {"model": ErrorPublic, "description": "No such dataset or version (or not readable by you)"},
    422: {"model": ErrorPublic, "description": "Invalid request (field paths in detail)"},
}


@router.get("", response_model=list[DatasetPublic], summary="List datasets")
def list_datasets(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NAME_PATTERN, description="Only this project's")] = None,
) -> list[DatasetPublic]:
    """Datasets of the caller's projects and those shared with them, with their latest version."""
    return [DatasetPublic.of(d) for d in services.datasets.list(principal=principal, project=project)]


@router.get(
    "/{project}/{name}", response_model=DatasetPublic, responses={404: ERRORS[404]}, summary="Show a dataset"
)
def get_dataset(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> DatasetPublic:
    """A dataset: its owner, the projects it is shared with, and its latest version."""
    return DatasetPublic.of(services.datasets.get(project, name, principal=principal))


@router.post(
    "/{project}/{name}/versions",
    status_code=status.HTTP_201_CREATED,
    response_model=DatasetVersionRegistered,
    responses={
        200: {"model": DatasetVersionRegistered, "description": "Same content as an existing version"},
        **ERRORS,
    },
    summary="Register a dataset version",
)
def register_version(
    project: Project,
    name: Name,
    body: DatasetVersionCreate,
    response: Response,
    services: ServicesDep,
    principal: PrincipalDep,
) -> DatasetVersionRegistered:
    """Record a version from the manifest of its files; the gateway computes its digest. Registering
    content the dataset already has returns that version (200) and records nothing new."""
    registration = Registration(
        project=project,
        name=name,
        files=[f.model_dump() for f in body.files],
        **body.model_dump(exclude={"files"}),
    )
    version, created = services.datasets.register(registration, principal=principal)
    if not created:
        response.status_code = status.HTTP_200_OK
    return DatasetVersionRegistered(**DatasetVersionPublic.of(version).model_dump(), created=created)


@router.get(
    "/{project}/{name}/versions",
    response_model=list[DatasetVersionPublic],
    responses={404: ERRORS[404]},
    summary="List a dataset's versions",
)
def list_versions(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> list[DatasetVersionPublic]:
    """Every version, oldest first, each with its digest, size, source, parent and maker."""
    return [
        DatasetVersionPublic.of(v) for v in services.datasets.versions(project, name, principal=principal)
    ]


@router.get(
    "/{project}/{name}/versions/{version}",
    response_model=DatasetVersionDetail,
    responses={404: ERRORS[404]},
    summary="Show a dataset version",
)
def get_version(
    project: Project,
    name: Name,
    version: Version,
    services: ServicesDep,
    principal: PrincipalDep,
    files: Annotated[bool, Query(description="Include the manifest (every file)")] = False,
) -> DatasetVersionDetail:
    """One version; with ``files=true`` also its manifest (path, size and sha256 of every file)."""
    found = services.datasets.version(project, name, version, principal=principal)
    manifest = [FileEntryPublic.of(e) for e in services.datasets.files(found)] if files else None
    return DatasetVersionDetail(**DatasetVersionPublic.of(found).model_dump(), files=manifest)


@router.get(
    "/{project}/{name}/diff",
    response_model=DatasetDiffPublic,
    responses={404: ERRORS[404], 422: ERRORS[422]},
    summary="Compare two versions of a dataset",
)
def diff_versions(
    project: Project,
    name: Name,
    services: ServicesDep,
    principal: PrincipalDep,
    a: Annotated[str, Query(pattern=VERSION_PATTERN, description="The older version: " + VERSION_HELP)],
    b: Annotated[str, Query(pattern=VERSION_PATTERN, description="The newer version")] = "latest",
) -> DatasetDiffPublic:
    """Files added, removed and changed (by path) from version ``a`` to version ``b``."""
    old, new, diff = services.datasets.diff(project, name, a, b, principal=principal)
    return DatasetDiffPublic.of(old, new, diff)


@router.put(
    "/{project}/{name}/shares/{other}",
    response_model=DatasetPublic,
    responses=ERRORS,
    summary="Share a dataset with another project (read-only)",
)
def share_dataset(
    project: Project,
    name: Name,
    other: Annotated[str, Path(pattern=NAME_PATTERN, description="The project to share with")],
    services: ServicesDep,
    principal: PrincipalDep,
) -> DatasetPublic:
    """Members of ``other`` may then read the dataset and use its versions in their runs (a lead of the
    owning project may do this)."""
    return DatasetPublic.of(services.datasets.share(project, name, other, principal=principal, on=True))


@router.delete(
    "/{project}/{name}/shares/{other}",
    response_model=DatasetPublic,
    responses=ERRORS,
    summary="Stop sharing a dataset with a project",
)
def unshare_dataset(
    project: Project,
    name: Name,
    other: Annotated[str, Path(pattern=NAME_PATTERN, description="The project to stop sharing with")],
    services: ServicesDep,
    principal: PrincipalDep,
) -> DatasetPublic:
    """Members of ``other`` can no longer read the dataset or use it in new runs; runs that used it keep
    their record."""
    return DatasetPublic.of(services.datasets.share(project, name, other, principal=principal, on=False))

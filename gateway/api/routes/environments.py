"""Environment routes: register versions, list, show, compare, and a run's environment. Each is one
service call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_envs import (
    EnvDiffPublic,
    EnvironmentPublic,
    EnvVersionCreate,
    EnvVersionDetail,
    EnvVersionPublic,
    EnvVersionRegistered,
    RunEnvironmentPublic,
    ScanPublic,
)
from gateway.core import names
from gateway.core.spec.lineage import DATASET_REF_PATTERN, VERSION_SELECTOR, VERSION_SELECTOR_HELP
from gateway.services.envs.registry import EnvRegistration

router = APIRouter(prefix="/environments", tags=["environments"])
runs_router = APIRouter(prefix="/runs", tags=["environments"])

NAME_PATTERN = f"^{names.NAME.pattern}$"
Project = Annotated[str, Path(pattern=NAME_PATTERN, description="The owning project")]
Name = Annotated[str, Path(pattern=NAME_PATTERN, description="The environment's name in its project")]
Version = Annotated[str, Path(pattern=f"^({VERSION_SELECTOR})$", description=VERSION_SELECTOR_HELP)]
SIDE = f"^(?:{DATASET_REF_PATTERN}|{names.NAME.pattern})$"
ERRORS: Responses = {
    403: {"model": ErrorPublic, "description": "Your role in the project does not allow it"},
    404: {
        "model": ErrorPublic,
        "description": "No such environment, version or run (or not readable by you)",
    },
    409: {"model": ErrorPublic, "description": "The same content is a version whose build failed"},
    422: {"model": ErrorPublic, "description": "Invalid request (field paths in detail)"},
}


@router.get("", response_model=list[EnvironmentPublic], summary="List environments")
def list_environments(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NAME_PATTERN, description="Only this project's")] = None,
) -> list[EnvironmentPublic]:
    """Environments of the caller's projects, with their latest version."""
    return [
        EnvironmentPublic.of(e)
        for e in services.environments.catalog.list(principal=principal, project=project)
    ]


@router.get(
    "/diff",
    response_model=EnvDiffPublic,
    responses={404: ERRORS[404], 422: ERRORS[422]},
    summary="Compare two environment versions, or the environments of two runs",
)
def diff_environments(
    services: ServicesDep,
    principal: PrincipalDep,
    a: Annotated[str, Query(pattern=SIDE, description="[project/]name@version, or a run id")],
    b: Annotated[str, Query(pattern=SIDE, description="[project/]name@version, or a run id")],
    project: Annotated[
        str | None, Query(pattern=NAME_PATTERN, description="The project of a reference without one")
    ] = None,
) -> EnvDiffPublic:
    """Packages added, removed, upgraded and downgraded from ``a`` to ``b`` (installed sets once built,
    else what the locks pin; module lists as name/version)."""
    return EnvDiffPublic.of(services.environments.diff(a, b, project=project, principal=principal))


@router.get(
    "/{project}/{name}",
    response_model=EnvironmentPublic,
    responses={404: ERRORS[404]},
    summary="Show an environment",
)
def get_environment(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> EnvironmentPublic:
    """An environment and its latest version."""
    return EnvironmentPublic.of(services.environments.catalog.get(project, name, principal=principal))


@router.post(
    "/{project}/{name}/versions",
    status_code=status.HTTP_201_CREATED,
    response_model=EnvVersionRegistered,
    responses={
        200: {"model": EnvVersionRegistered, "description": "Same content as an existing version"},
        **ERRORS,
    },
    summary="Register an environment version",
)
def register_version(
    project: Project,
    name: Name,
    body: EnvVersionCreate,
    response: Response,
    services: ServicesDep,
    principal: PrincipalDep,
) -> EnvVersionRegistered:
    """Record a version; a python one is then built by a Slurm job (status ``building`` until it ends).
    Registering content the environment already has returns that version (200)."""
    req = EnvRegistration(project=project, name=name, **body.model_dump())
    version, created = services.environments.register(req, principal=principal)
    if not created:
        response.status_code = status.HTTP_200_OK
    return EnvVersionRegistered(**EnvVersionPublic.of(version).model_dump(), created=created)


@router.get(
    "/{project}/{name}/versions",
    response_model=list[EnvVersionPublic],
    responses={404: ERRORS[404]},
    summary="List an environment's versions",
)
def list_versions(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> list[EnvVersionPublic]:
    """Every version, oldest first (builds that ended are settled first)."""
    return [
        EnvVersionPublic.of(v)
        for v in services.environments.catalog.versions(project, name, principal=principal)
    ]


@router.get(
    "/{project}/{name}/versions/{version}",
    response_model=EnvVersionDetail,
    responses={404: ERRORS[404]},
    summary="Show an environment version with its packages",
)
def get_version(
    project: Project, name: Name, version: Version, services: ServicesDep, principal: PrincipalDep
) -> EnvVersionDetail:
    """One version, with its installed set and lock file."""
    found = services.environments.catalog.resolve(
        f"{project}/{name}@{version}", project=project, principal=principal
    )
    return EnvVersionDetail.of_detail(found)


@router.get(
    "/{project}/{name}/versions/{version}/advisories",
    response_model=ScanPublic,
    responses={404: ERRORS[404]},
    summary="Scan an environment version against the site's advisories",
)
def scan_version(
    project: Project, name: Name, version: Version, services: ServicesDep, principal: PrincipalDep
) -> ScanPublic:
    """The version's packages checked against the site's OSV directory: each known advisory with its
    severity and the versions that fix it."""
    return ScanPublic.of(
        services.environments.scan(f"{project}/{name}@{version}", project=project, principal=principal)
    )


@runs_router.get(
    "/{run_id}/environment",
    response_model=RunEnvironmentPublic,
    responses={404: ERRORS[404]},
    summary="A run's environment and what each of its jobs found",
)
def run_environment(
    run_id: Annotated[str, Path(pattern=NAME_PATTERN, description="A run id, e.g. r-3f2a9c0d1e2b4a5f")],
    services: ServicesDep,
    principal: PrincipalDep,
) -> RunEnvironmentPublic:
    """The version the run named (pinned at submission), and for each job that started what it found
    (the image id the runtime reported, the venv's installed set) with any drift as a warning."""
    return RunEnvironmentPublic.of(services.environments.of_run(run_id, principal=principal))

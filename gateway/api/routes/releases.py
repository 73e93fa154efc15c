"""Model registry routes: models, releases and their status events (aliases, policies and promotions
are in ``routes/aliases.py``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.evals import ERRORS, NAME_PATTERN
from gateway.api.schemas_release import (
    ModelCreate,
    ModelPublic,
    ReleaseCreate,
    ReleaseDetail,
    ReleasePublic,
    StatusChange,
    move_public,
    release_public,
)
from gateway.core.described import anchored
from gateway.core.releases.domain import RELEASE_NUMBER, VERSION_SELECTOR
from gateway.core.releases.views import release_dict

router = APIRouter(tags=["releases"])
Project = Annotated[str, Path(pattern=NAME_PATTERN, description="The model's project")]
Name = Annotated[str, Path(pattern=NAME_PATTERN, description="The model's name in its project")]
Version = Annotated[
    str, Path(pattern=anchored(VERSION_SELECTOR), description="A release number (from 1), or latest")
]
Number = Annotated[str, Path(pattern=anchored(RELEASE_NUMBER), description="A release number (from 1)")]
W: Responses = {k: ERRORS[k] for k in (403, 404, 409, 422)}


def _number(selector: str) -> int | None:
    return None if selector == "latest" else int(selector.removeprefix("v"))


@router.post(
    "/models",
    status_code=status.HTTP_201_CREATED,
    response_model=ModelPublic,
    responses=W,
    summary="Register a model",
)
def create_model(body: ModelCreate, services: ServicesDep, principal: PrincipalDep) -> ModelPublic:
    """A model of a project (members); 409 when the project has one of that name."""
    return ModelPublic.of(
        services.releases.register_model(
            body.project, body.name, description=body.description, principal=principal
        )
    )


@router.get("/models", response_model=list[ModelPublic], responses={404: ERRORS[404]}, summary="List models")
def list_models(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NAME_PATTERN, description="Only this project's")] = None,
) -> list[ModelPublic]:
    """Models of the projects you have a role in."""
    return [ModelPublic.of(m) for m in services.releases.models(principal=principal, project=project)]


@router.get(
    "/models/{project}/{name}",
    response_model=ModelPublic,
    responses={404: ERRORS[404]},
    summary="Show a model",
)
def get_model(project: Project, name: Name, services: ServicesDep, principal: PrincipalDep) -> ModelPublic:
    """One model."""
    return ModelPublic.of(services.releases.model(project, name, principal=principal))


@router.post(
    "/models/{project}/{name}/releases",
    status_code=status.HTTP_201_CREATED,
    response_model=ReleasePublic,
    responses=W,
    summary="Create a release",
)
def create_release(
    project: Project, name: Name, body: ReleaseCreate, services: ServicesDep, principal: PrincipalDep
) -> ReleasePublic:
    """The model's next release of an artifact (by sha256) of a succeeded run, with a snapshot of its
    evidence (run, attempts, data versions and digests, code, image, params, evaluations and gates)."""
    release = services.releases.create_release(
        project, name, body.artifact_sha256, run_id=body.run_id, notes=body.notes, principal=principal
    )
    return release_public(release)


@router.get(
    "/models/{project}/{name}/releases",
    response_model=list[ReleasePublic],
    responses={404: ERRORS[404]},
    summary="List a model's releases",
)
def list_releases(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> list[ReleasePublic]:
    """Every release of the model, oldest first."""
    return [release_public(r) for r in services.releases.releases(project, name, principal=principal)]


@router.get(
    "/models/{project}/{name}/releases/{version}",
    response_model=ReleaseDetail,
    responses={404: ERRORS[404]},
    summary="Show a release",
)
def get_release(
    project: Project, name: Name, version: Version, services: ServicesDep, principal: PrincipalDep
) -> ReleaseDetail:
    """One release with its evidence snapshot, status events and every alias move to or from it."""
    release = services.releases.release(project, name, _number(version), principal=principal)
    moves = services.promotions.moves_of([release.id])
    return ReleaseDetail.model_validate(
        release_dict(release)
        | {
            "snapshot": release.snapshot,
            "alias_events": [move_public(m) for m in moves],
            "overridden": any(m.override and m.to_release == release.id for m in moves),
        }
    )


@router.post(
    "/models/{project}/{name}/releases/{version}/status",
    response_model=ReleasePublic,
    responses=W,
    summary="Deprecate, withdraw or reactivate a release",
)
def set_status(
    project: Project,
    name: Name,
    version: Number,
    body: StatusChange,
    services: ServicesDep,
    principal: PrincipalDep,
) -> ReleasePublic:
    """Append a status event with its reason (leads); the release itself never changes."""
    release = services.releases.set_status(
        project, name, int(version.removeprefix("v")), body.status, reason=body.reason, principal=principal
    )
    return release_public(release)

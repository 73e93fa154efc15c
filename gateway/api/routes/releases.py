"""Model registry routes: models, releases, status events, aliases and their history, policies, promotions."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.evals import ERRORS, NAME_PATTERN, Sha256
from gateway.api.schemas_release import (
    AliasMove,
    AliasMovePublic,
    AliasPublic,
    ArtifactReleasesPublic,
    Decision,
    HistoryPublic,
    ModelCreate,
    ModelPublic,
    MoveCheckPublic,
    PolicyPublic,
    PolicySet,
    PromotionCreate,
    PromotionPublic,
    ReleaseCreate,
    ReleaseDetail,
    ReleasePublic,
    StatusChange,
    move_public,
    promotion_public,
    release_public,
)
from gateway.core.described import anchored
from gateway.core.releases.domain import (
    ALIAS,
    ALIAS_HELP,
    AT,
    MAX_RELEASE_NUMBER,
    RELEASE_NUMBER,
    VERSION_SELECTOR,
    parse_at,
)
from gateway.core.releases.views import release_dict
from gateway.errors import SpecError, SpecIssue

router = APIRouter(tags=["releases"])
Project = Annotated[str, Path(pattern=NAME_PATTERN, description="The model's project")]
Name = Annotated[str, Path(pattern=NAME_PATTERN, description="The model's name in its project")]
Version = Annotated[
    str, Path(pattern=anchored(VERSION_SELECTOR), description="A release number (from 1), or latest")
]
Number = Annotated[str, Path(pattern=anchored(RELEASE_NUMBER), description="A release number (from 1)")]
Alias = Annotated[str, Path(pattern=anchored(ALIAS), description=ALIAS_HELP)]
AtQuery = "ISO 8601 time: a real date, then optionally Thh:mm[:ss[.ffffff]] and Z or ±hh:mm (UTC when none)"
RequestId = Annotated[str, Path(pattern="^pr-[0-9a-f]{16}$", description="A promotion request id (pr-...)")]
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


@router.get(
    "/models/{project}/{name}/aliases/{alias}/check",
    response_model=MoveCheckPublic,
    responses=W,
    summary="What moving an alias would need",
)
def check_move(
    project: Project,
    name: Name,
    alias: Alias,
    services: ServicesDep,
    principal: PrincipalDep,
    version: Annotated[
        int, Query(ge=1, le=MAX_RELEASE_NUMBER, description="The release the alias would point at")
    ],
) -> MoveCheckPublic:
    """The checks of a move before it is made (those who may move aliases): the policy in force, the
    gateway's gate for it (decided on the policy's terms as at the move, so the same terms give the
    decision recorded before), the approvals that count, and every piece still missing. Nothing moves."""
    return MoveCheckPublic.of(services.promotions.preview(project, name, version, alias, principal=principal))


@router.get(
    "/models/{project}/{name}/aliases",
    response_model=list[AliasPublic],
    responses={404: ERRORS[404], 422: ERRORS[422]},
    summary="Where a model's aliases point",
)
def list_aliases(
    project: Project,
    name: Name,
    services: ServicesDep,
    principal: PrincipalDep,
    at: Annotated[str | None, Query(pattern=anchored(AT), description=f"{AtQuery}; default now")] = None,
) -> list[AliasPublic]:
    """Every alias of the model and the release it points at (at ``at``, or now)."""
    when = _at(at)
    return [
        AliasPublic.of(s) for s in services.promotions.aliases(project, name, principal=principal, at=when)
    ]


@router.post(
    "/models/{project}/{name}/aliases/{alias}",
    response_model=AliasMovePublic,
    responses=W,
    summary="Move an alias (promote)",
)
def move_alias(
    project: Project,
    name: Name,
    alias: Alias,
    body: AliasMove,
    services: ServicesDep,
    principal: PrincipalDep,
) -> AliasMovePublic:
    """Point the alias at a release, if its protection policy is met; 409 lists what is missing. An
    override (leads, admins, with a reason) stands in for a failed or missing gate only."""
    move = services.promotions.promote(
        project,
        name,
        body.version,
        alias,
        principal=principal,
        reason=body.reason,
        override=body.override,
        request_id=body.request_id,
    )
    return move_public(move)


@router.get(
    "/models/{project}/{name}/history",
    response_model=HistoryPublic,
    responses={404: ERRORS[404], 422: ERRORS[422]},
    summary="Alias history",
)
def history(
    project: Project,
    name: Name,
    services: ServicesDep,
    principal: PrincipalDep,
    alias: Annotated[str | None, Query(pattern=anchored(ALIAS), description="Only this alias")] = None,
    at: Annotated[
        str | None, Query(pattern=anchored(AT), description=f"Also where the aliases stood then: {AtQuery}")
    ] = None,
) -> HistoryPublic:
    """Every move of the model's aliases (or one alias's), oldest first; with ``at``, where they stood."""
    found = services.promotions.history(project, name, principal=principal, alias=alias, at=_at(at))
    return HistoryPublic(
        model=found["model"],
        alias=found["alias"],
        at=found["at"],
        events=[move_public(m) for m in found["events"]],
        at_time=[AliasPublic.of(s) for s in found["at_time"]] if found["at_time"] is not None else None,
    )


@router.get(
    "/models/{project}/{name}/policies",
    response_model=list[PolicyPublic],
    responses={404: ERRORS[404]},
    summary="A model's alias policies",
)
def list_policies(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> list[PolicyPublic]:
    """The project's default policies and the model's own (a model's own wins for its alias)."""
    return [PolicyPublic.of(p) for p in services.alias_policies.policies(project, name, principal=principal)]


@router.put(
    "/models/{project}/{name}/policies/{alias}",
    response_model=PolicyPublic,
    responses=W,
    summary="Protect a model's alias",
)
def set_policy(
    project: Project,
    name: Name,
    alias: Alias,
    body: PolicySet,
    services: ServicesDep,
    principal: PrincipalDep,
) -> PolicyPublic:
    """Who may move the alias, how many approvers, which suite's gate must pass (leads); audited."""
    return PolicyPublic.of(
        services.alias_policies.set_policy(
            project,
            name,
            alias,
            principal=principal,
            roles=body.roles,
            approvals=body.approvals,
            gate_suite=body.gate_suite,
            gate_version=body.gate_version,
            gate_baseline=body.gate_baseline,
            allow_imported_results=body.allow_imported_results,
            advisory_severity=body.advisory_severity,
        )
    )


@router.put(
    "/projects/{project}/alias-policies/{alias}",
    response_model=PolicyPublic,
    responses=W,
    summary="Protect an alias for every model of a project",
    tags=["projects"],
)
def set_project_policy(
    project: Project, alias: Alias, body: PolicySet, services: ServicesDep, principal: PrincipalDep
) -> PolicyPublic:
    """The project's default policy for the alias (a model's own policy wins); leads; audited."""
    return PolicyPublic.of(
        services.alias_policies.set_policy(
            project,
            None,
            alias,
            principal=principal,
            roles=body.roles,
            approvals=body.approvals,
            gate_suite=body.gate_suite,
            gate_version=body.gate_version,
            gate_baseline=body.gate_baseline,
            allow_imported_results=body.allow_imported_results,
            advisory_severity=body.advisory_severity,
        )
    )


@router.post(
    "/models/{project}/{name}/promotions",
    status_code=status.HTTP_201_CREATED,
    response_model=PromotionPublic,
    responses=W,
    summary="Request a promotion",
)
def request_promotion(
    project: Project, name: Name, body: PromotionCreate, services: ServicesDep, principal: PrincipalDep
) -> PromotionPublic:
    """Ask for an alias to point at a release (members); approvers decide it."""
    found = services.promotions.request(
        project, name, body.version, body.alias, reason=body.reason, principal=principal
    )
    return promotion_public(found)


@router.get(
    "/models/{project}/{name}/promotions",
    response_model=list[PromotionPublic],
    responses={404: ERRORS[404]},
    summary="A model's promotion requests",
)
def list_promotions(
    project: Project,
    name: Name,
    services: ServicesDep,
    principal: PrincipalDep,
    state: Annotated[
        str | None, Query(pattern="^(open|approved|rejected|promoted|cancelled)$", description="Only these")
    ] = None,
) -> list[PromotionPublic]:
    """The model's promotion requests with their decisions, newest first."""
    found = services.promotions.requests(project, name, principal=principal, status=state)
    return [promotion_public(q) for q in found]


@router.post(
    "/promotions/{request_id}/approve",
    response_model=PromotionPublic,
    responses=W,
    summary="Approve a promotion request",
)
def approve(
    request_id: RequestId, body: Decision, services: ServicesDep, principal: PrincipalDep
) -> PromotionPublic:
    """Approve (leads and reviewers; never the requester)."""
    return promotion_public(
        services.promotions.decide(request_id, "approve", note=body.note, principal=principal)
    )


@router.post(
    "/promotions/{request_id}/reject",
    response_model=PromotionPublic,
    responses=W,
    summary="Reject a promotion request",
)
def reject(
    request_id: RequestId, body: Decision, services: ServicesDep, principal: PrincipalDep
) -> PromotionPublic:
    """Reject (leads and reviewers; never the requester)."""
    return promotion_public(
        services.promotions.decide(request_id, "reject", note=body.note, principal=principal)
    )


@router.get(
    "/lineage/artifacts/{sha256}/releases",
    response_model=ArtifactReleasesPublic,
    responses={404: ERRORS[404]},
    summary="Releases of a file",
    tags=["lineage"],
)
def artifact_releases(
    sha256: Sha256, services: ServicesDep, principal: PrincipalDep
) -> ArtifactReleasesPublic:
    """Releases of an artifact with this content: each with the aliases pointing at it now, every alias
    move to or from it and its promotion requests (empty when it was never released)."""
    return ArtifactReleasesPublic.model_validate(
        services.promotions.artifact_releases(sha256, principal=principal)
    )


def _at(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_at(text)
    except ValueError as exc:
        raise SpecError([SpecIssue("at", str(exc), text)], what="request", location="query") from None

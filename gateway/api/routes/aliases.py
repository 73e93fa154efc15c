"""Model registry routes of aliases: where they point and their history, the checks of a move and the
move itself (promote), their protection policies, promotion requests and their decisions, and the
releases of a file."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.routes.evals import ERRORS, Sha256
from gateway.api.routes.releases import Name, Project, W
from gateway.api.schemas_release import (
    AliasMove,
    AliasMovePublic,
    AliasPublic,
    ArtifactReleasesPublic,
    Decision,
    HistoryPublic,
    MoveCheckPublic,
    PolicyPublic,
    PolicySet,
    PromotionCreate,
    PromotionPublic,
    move_public,
    promotion_public,
)
from gateway.core.access.values import Principal
from gateway.core.described import anchored
from gateway.core.releases.domain import ALIAS, ALIAS_HELP, AT, MAX_RELEASE_NUMBER, parse_at
from gateway.errors import SpecError, SpecIssue
from gateway.services import Services

router = APIRouter(tags=["releases"])
Alias = Annotated[str, Path(pattern=anchored(ALIAS), description=ALIAS_HELP)]
AtQuery = "ISO 8601 time: a real date, then optionally Thh:mm[:ss[.ffffff]] and Z or ±hh:mm (UTC when none)"
RequestId = Annotated[str, Path(pattern="^pr-[0-9a-f]{16}$", description="A promotion request id (pr-...)")]


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
    return _set_policy(services, project, name, alias, body, principal)


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
    return _set_policy(services, project, None, alias, body, principal)


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
    return _decide(services, request_id, "approve", body, principal)


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
    return _decide(services, request_id, "reject", body, principal)


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


def _decide(
    services: Services, request_id: str, decision: str, body: Decision, principal: Principal
) -> PromotionPublic:
    """``decision`` ("approve" or "reject") of promotion request ``request_id``, with the body's note;
    the request after it."""
    return promotion_public(
        services.promotions.decide(request_id, decision, note=body.note, principal=principal)
    )


def _set_policy(
    services: Services, project: str, model: str | None, alias: str, body: PolicySet, principal: Principal
) -> PolicyPublic:
    """``body`` as the policy of ``alias`` of one model (``model``), or of the project (None)."""
    return PolicyPublic.of(
        services.alias_policies.set_policy(
            project,
            model,
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


def _at(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_at(text)
    except ValueError as exc:
        raise SpecError([SpecIssue("at", str(exc), text)], what="request", location="query") from None

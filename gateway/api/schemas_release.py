"""API schemas of the model registry: models, releases, alias moves and history, policies, promotions."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.core.described import TEXT, Name, Sha256Hex, anchored, documented
from gateway.core.names import NAME

if TYPE_CHECKING:
    from gateway.services.releases.move_checks import MovePreview
from gateway.core.releases.domain import (
    ALIAS,
    MAX_RELEASE_NUMBER,
    NOTES_MAX,
    POLICY_ROLES,
    REASON_MAX,
    AliasPolicy,
    RegisteredModel,
)
from gateway.core.releases.views import move_dict, release_dict, request_dict
from gateway.services.releases.alias_history import AliasState
from gateway.services.releases.alias_policies import MAX_APPROVALS


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Free text the services take (services.releases.registry.text_issue): no NUL, at most so many characters.
Notes = Annotated[str, documented(pattern=TEXT, maxLength=NOTES_MAX)]
Reason = Annotated[str, documented(pattern=TEXT, maxLength=REASON_MAX)]
# A reason that must be given: not blank.
RequiredReason = Annotated[str, documented(pattern=r"^\s*[^\s\x00][^\x00]*$", maxLength=REASON_MAX)]
AliasName = Annotated[str, documented(pattern=anchored(ALIAS))]


class ModelCreate(_Body):
    project: Name = Field(description="The model's project")
    name: Name = Field(description="Its name in the project (letters, digits, . _ -)")
    description: Notes = ""


class ModelPublic(BaseModel):
    id: str
    project: str
    name: str
    ref: str = Field(description="project/name")
    description: str
    created_by: str
    created_at: datetime

    @classmethod
    def of(cls, m: RegisteredModel) -> ModelPublic:
        return cls(
            id=m.id,
            project=m.project,
            name=m.name,
            ref=m.ref,
            description=m.description,
            created_by=m.created_by,
            created_at=m.created_at,
        )


class ReleaseCreate(_Body):
    artifact_sha256: Sha256Hex = Field(description="The artifact's sha256 (64 hex digits)")
    run_id: str | None = Field(
        None, description="The run that wrote it, when several runs wrote that content"
    )
    notes: Notes = Field("", description="Why this release (free text)")


class StatusEventPublic(BaseModel):
    id: str
    release_id: str
    status: str
    reason: str
    actor: str
    at: datetime


class ReleasePublic(BaseModel):
    id: str
    ref: str = Field(description="project/name@version")
    project: str
    model: str
    version: int
    artifact_sha256: str
    artifact_path: str = Field(description="The artifact's path in its run's directory")
    run_id: str
    notes: str
    created_by: str
    created_at: datetime
    status: Literal["active", "deprecated", "withdrawn"]
    status_events: list[StatusEventPublic]


class AliasMovePublic(BaseModel):
    id: str
    model_id: str
    alias: str
    seq: int
    from_release: str | None
    to_release: str | None
    from_version: int | None
    to_version: int | None
    actor: str
    at: datetime
    reason: str
    request_id: str | None
    approvals: list[str] = Field(description="Users whose approvals allowed the move")
    gate_id: str | None = Field(
        description="The gate decision the gateway made for this move on the policy's terms (the one counted)"
    )
    override: bool = Field(description="A failed or missing gate was overridden (reason says why)")
    policy: dict[str, Any] | None = Field(description="The policy in force then")


class ReleaseDetail(ReleasePublic):
    snapshot: dict[str, Any] = Field(
        description="Evidence as it stood at release: the run's lineage record and the artifact's evaluations"
    )
    alias_events: list[AliasMovePublic] = Field(description="Moves of aliases to or from this release")
    overridden: bool = Field(description="Some alias was moved to it past a failed or missing gate")


class StatusChange(_Body):
    status: Literal["active", "deprecated", "withdrawn"]
    reason: RequiredReason = Field(description="Why (required)")


class AliasMove(_Body):
    version: int = Field(ge=1, le=MAX_RELEASE_NUMBER, description="The release the alias is to point at")
    reason: Reason = Field("", description="Why (required with override)")
    override: bool = Field(False, description="Stand in for a failed or missing gate (leads, admins; reason)")
    request_id: str | None = Field(None, description="The promotion request whose approvals count")


class AliasPublic(BaseModel):
    alias: str
    version: int | None
    release_id: str | None
    since: datetime | None
    move: AliasMovePublic | None

    @classmethod
    def of(cls, s: AliasState) -> AliasPublic:
        return cls(
            alias=s.alias,
            version=s.release.version if s.release else None,
            release_id=s.release.id if s.release else None,
            since=s.event.at if s.event else None,
            move=AliasMovePublic.model_validate(move_dict(s.event)) if s.event else None,
        )


class HistoryPublic(BaseModel):
    model: str
    alias: str | None
    at: datetime | None
    events: list[AliasMovePublic]
    at_time: list[AliasPublic] | None = Field(description="Where each alias stood at `at` (when asked)")


class PolicySet(_Body):
    roles: Annotated[list[str], documented(items={"enum": list(POLICY_ROLES)}, minItems=1)] = Field(
        ["member"], description="Least roles that may move the alias: member, lead, admin"
    )
    approvals: Annotated[int, documented(minimum=0, maximum=MAX_APPROVALS)] = Field(
        0, description="Distinct approvers needed besides the requester (0-10)"
    )
    gate_suite: str | None = Field(
        None,
        pattern=f"^{NAME.pattern}/{NAME.pattern}$",
        description="PROJECT/NAME of a suite whose gate, decided by the gateway at the move, must pass",
    )
    gate_version: Annotated[int, Field(ge=1, le=MAX_RELEASE_NUMBER)] | Literal["latest"] | None = Field(
        None,
        description="The suite version the gate is decided on: a number, or latest (the newest at each "
        "move); none: the suite's newest version now, pinned",
    )
    gate_baseline: AliasName | None = Field(
        None, description="The alias whose release is the baseline; none: the alias itself"
    )
    allow_imported_results: bool = Field(
        False,
        description="Whether the gate may count eval results imported from outside the gateway "
        "(POST .../imports); default: only results of the gateway's own eval runs count",
    )
    advisory_severity: Literal["LOW", "MODERATE", "HIGH", "CRITICAL"] | None = Field(
        None,
        description="The advisory rule: refuse a move while the release's training environment (the "
        "environment version its run used) has a known advisory of this severity or worse in the "
        "site's OSV directory; a lead's override stands in for it as for the gate. None: no such rule",
    )


class PolicyPublic(BaseModel):
    project: str
    alias: str
    scope: Literal["model", "project"]
    model_id: str | None
    roles: list[str]
    approvals: int
    gate_suite: str | None
    gate_version: int | Literal["latest"] | None = Field(
        description="The suite version the gate is decided on (latest: the newest at each move)"
    )
    gate_baseline: str | None = Field(description="The alias whose release is the gate's baseline")
    allow_imported_results: bool = Field(description="Whether the gate may count imported eval results")
    advisory_severity: str | None = Field(
        None, description="The advisory rule's least severity that refuses a move (null: no such rule)"
    )
    updated_by: str
    updated_at: datetime

    @classmethod
    def of(cls, p: AliasPolicy) -> PolicyPublic:
        return cls(
            project=p.project,
            alias=p.alias,
            scope="model" if p.model_id else "project",
            model_id=p.model_id,
            roles=list(p.roles),
            approvals=p.approvals,
            gate_suite=p.gate_suite,
            gate_version=(p.gate_version if p.gate_version is not None else "latest")
            if p.gate_suite
            else None,
            gate_baseline=p.baseline_alias if p.gate_suite else None,
            allow_imported_results=p.allow_imported_results,
            advisory_severity=p.advisory_severity,
            updated_by=p.updated_by,
            updated_at=p.updated_at,
        )


class NotCounted(BaseModel):
    user: str
    why: str


class AdvisoryFinding(BaseModel):
    advisory: str = Field(description="The OSV advisory id")
    severity: str
    package: str
    version: str = Field(description="The package's version in the environment")


class AdvisoryCheckPublic(BaseModel):
    """The release's training environment checked against the site's advisories (the advisory rule)."""

    environment: str | None = Field(description="PROJECT/NAME@VERSION its run used (null: none named)")
    findings: list[AdvisoryFinding] = Field(description="Every advisory that affects it, worst first")
    unchecked: str | None = Field(description="Why it could not be checked (null: it was)")


class MoveCheckPublic(BaseModel):
    """What moving an alias to a release would count and what it still misses; nothing is moved."""

    release: str = Field(description="PROJECT/NAME@VERSION")
    release_status: str
    alias: str
    policy: PolicyPublic | None = Field(description="The policy in force (null: the alias is not protected)")
    request_id: str | None = Field(description="The promotion request whose approvals would count")
    gate_id: str | None = Field(description="The gateway's gate for this move, decided on the policy's terms")
    gate_verdict: str | None
    gate_detail: str = Field(description="The gate in words, or why there is none")
    approvals: list[str] = Field(description="Approvers who count now")
    approvals_not_counted: list[NotCounted]
    missing: list[str] = Field(description="Every piece the move still misses, in words")
    gate_failed: bool = Field(
        description="Only a passing gate and the advisory rule miss: a lead may override them"
    )
    may_override: bool = Field(description="The caller may override them (with a reason)")
    already: bool = Field(description="The alias points at this release already")
    ok: bool = Field(description="The move would go ahead now")
    advisories: AdvisoryCheckPublic | None = Field(
        None, description="The training environment's advisories, when the policy has an advisory rule"
    )

    @classmethod
    def of(cls, preview: MovePreview) -> MoveCheckPublic:
        """From ``PromotionService.preview``'s ``MovePreview``."""
        return cls(
            release=preview.release.ref,
            release_status=preview.release.status,
            alias=preview.alias,
            policy=PolicyPublic.of(preview.policy) if preview.policy else None,
            request_id=preview.request.id if preview.request else None,
            gate_id=preview.gate_id,
            gate_verdict=preview.gate_verdict,
            gate_detail=preview.gate_detail,
            approvals=list(preview.approvers),
            approvals_not_counted=[NotCounted(**d) for d in preview.dropped],
            missing=list(preview.missing),
            gate_failed=preview.gate_failed,
            may_override=preview.may_override,
            already=preview.already,
            ok=preview.ok,
            advisories=AdvisoryCheckPublic(
                environment=preview.advisory.environment,
                findings=[
                    AdvisoryFinding(advisory=a, severity=sev, package=p, version=v)
                    for a, sev, p, v in preview.advisory.findings
                ],
                unchecked=preview.advisory.unchecked,
            )
            if preview.advisory is not None
            else None,
        )


class PromotionCreate(_Body):
    alias: AliasName
    version: int = Field(ge=1, le=MAX_RELEASE_NUMBER)
    reason: Reason = ""


class Decision(_Body):
    note: Reason = ""


class DecisionPublic(BaseModel):
    id: str
    request_id: str
    decision: str
    decider: str
    note: str
    at: datetime


class PromotionPublic(BaseModel):
    id: str
    model_id: str
    project: str
    model: str
    alias: str
    release_id: str
    version: int
    requested_by: str
    reason: str
    at: datetime
    status: str
    decisions: list[DecisionPublic]
    approvers: list[str]
    rejected_by: list[str]


class ArtifactReleasePublic(ReleasePublic):
    aliases: list[AliasPublic] = Field(description="Aliases that point at this release now")
    alias_events: list[AliasMovePublic]
    promotions: list[PromotionPublic]


class ArtifactReleasesPublic(BaseModel):
    sha256: str
    releases: list[ArtifactReleasePublic] = Field(
        description="The releases the caller may read (others are neither shown nor counted)"
    )


def release_public(r: Any) -> ReleasePublic:
    """``ReleasePublic`` of a release."""
    return ReleasePublic.model_validate(release_dict(r))


def promotion_public(q: Any) -> PromotionPublic:
    """``PromotionPublic`` of a promotion request."""
    return PromotionPublic.model_validate(request_dict(q))


def move_public(m: Any) -> AliasMovePublic:
    """``AliasMovePublic`` of an alias move."""
    return AliasMovePublic.model_validate(move_dict(m))

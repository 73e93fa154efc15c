"""What an alias move counts and misses: the request, the policy, the gateway's gate, the approvers
that still count, the training environment's advisories; the checks ``PromotionService.promote``
runs at the move and ``preview`` runs before it (``services.releases.promotions``).

Approvals are re-checked at each move: an approver who has since lost the role that may approve
(``release.approve``), left the project or was disabled no longer counts, and the move says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.eval.domain import GateRecord
from gateway.core.releases.domain import (
    AdvisoryCheck,
    AliasPolicy,
    MoveCheck,
    PromotionRequest,
    Release,
    missing_for_move,
)
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.services.releases.alias_history import AliasReads
from gateway.services.releases.policy_gate import AliasGate, PolicyGate
from gateway.services.releases.registry import alias_issues
from gateway.store.access.access import AccessStore


class AdvisorySource(Protocol):
    """What checks a run's training environment against the site's advisories (services.envs)."""

    def advisory_check(self, run_id: str) -> AdvisoryCheck:
        """Run ``run_id``'s environment version against the site's advisories."""
        ...


@dataclass(frozen=True)
class MoveAssessment:
    """What a move of an alias to a release by one caller would count and miss, now."""

    request: PromotionRequest | None
    policy: AliasPolicy | None
    decided: AliasGate | None  # the gateway's gate on the policy's terms (None: the policy asks none)
    approvers: list[str]  # the approvers that count now
    dropped: list[dict[str, str]]  # those that no longer do: user and why
    check: MoveCheck
    advisory: AdvisoryCheck | None  # the training environment's advisories (an advisory rule)

    @property
    def gate(self) -> GateRecord | None:
        """The gate decision the move counts (None: none asked for, or none could be decided)."""
        return self.decided.gate if self.decided is not None else None


@dataclass(frozen=True)
class MovePreview:
    """A move before it happens: what it would count (request, gate, approvers) and what it misses."""

    release: Release
    alias: str
    policy: AliasPolicy | None
    request: PromotionRequest | None
    gate_id: str | None
    gate_verdict: str | None
    gate_detail: str
    approvers: tuple[str, ...]
    dropped: tuple[dict[str, str], ...]
    missing: tuple[str, ...]
    gate_failed: bool  # only the gate and the advisory rule miss: a lead may override with a reason
    may_override: bool  # only those miss and the caller may override
    already: bool  # the alias points at this release already
    advisory: AdvisoryCheck | None = None  # the training environment's advisories (an advisory rule)

    @property
    def ok(self) -> bool:
        """Nothing is missing: the move would go ahead."""
        return not self.missing and not self.already


class MoveChecks(AliasReads):
    """The move checks of ``PromotionService`` (a base class: the service holds the stores)."""

    gate: PolicyGate
    access: AccessStore  # the approvers' roles as they are now, re-checked at each move
    environments: AdvisorySource | None  # the advisory rule's check (wiring)

    def preview(
        self, project: str, model: str, version: int, alias: str, *, principal: Principal
    ) -> MovePreview:
        """What moving ``alias`` to release ``version`` would count and what it misses, before anyone
        presses the button (the web page's promote form): the same checks as ``promote``, nothing moved.
        Needs ``release.promote`` (who may not move aliases sees no preview: Forbidden)."""
        release = self.releases.release(project, model, version, principal=principal)
        require(principal, "release.promote", project)
        issues = alias_issues(alias)
        if issues:
            raise SpecError(issues, what="alias move")
        current = self.store.alias_events(release.model_id, alias)
        found = self._assess(release, alias, None, principal)
        gate, check = found.gate, found.check
        return MovePreview(
            release=release,
            alias=alias,
            policy=found.policy,
            request=found.request,
            gate_id=gate.id if gate else None,
            gate_verdict=gate.verdict if gate else None,
            gate_detail=found.decided.detail if found.decided is not None else "",
            approvers=tuple(found.approvers),
            dropped=tuple(found.dropped),
            missing=check.missing,
            gate_failed=check.gate_failed,
            may_override=check.gate_failed and allowed(principal, "release.override", project),
            already=bool(current) and current[-1].to_release == release.id,
            advisory=found.advisory,
        )

    def _check(
        self, release: Release, alias: str, request_id: str | None, override: bool, principal: Principal
    ) -> MoveAssessment:
        """What the move counts and misses; raises when it may not go ahead (Conflict listing the
        missing pieces and the approvals not counted, Forbidden for an override below lead)."""
        found = self._assess(release, alias, request_id, principal)
        check, dropped = found.check, found.dropped
        if override and not check.gate_failed:
            if check.ok:
                raise SpecError(
                    [SpecIssue("override", "nothing to override: the gate passed (or none is asked for)")],
                    what="alias move",
                )
            raise Conflict(
                f"cannot move {alias} to {release.ref}: an override stands in for a failed or missing gate "
                "and the advisory rule only, and more is missing:\n"
                + "\n".join(f"  - {m}" for m in check.missing)
            )
        if override:
            require(principal, "release.override", release.project)
        elif not check.ok:
            raise Conflict(
                f"cannot move {alias} to {release.ref}; missing:\n"
                + "\n".join(f"  - {m}" for m in check.missing)
                + "".join(f"\n  (the approval by {d['user']} no longer counts: {d['why']})" for d in dropped)
                + (
                    "\n(a lead or admin may override the gate and the advisory rule with --override --reason)"
                    if check.gate_failed
                    else ""
                )
            )
        return found

    def _assess(
        self, release: Release, alias: str, request_id: str | None, principal: Principal
    ) -> MoveAssessment:
        """What a move of ``alias`` to ``release`` by ``principal`` would count and miss: the request, the
        policy, the gateway's gate (decided on the policy's terms: the same terms give the decision
        recorded before), the approvers that count now and those that no longer do, the check."""
        project = release.project
        request = self._request_for(release, alias, request_id, principal)
        policy = self.store.policy(project, release.model_id, alias)
        decided = (
            self.gate.decide(release, alias, policy, request, actor=principal)
            if policy and policy.gate_suite
            else None
        )
        gate = decided.gate if decided is not None else None
        approvers, dropped = self._approvers_now(request, project)
        advisory = (
            self.environments.advisory_check(release.run_id)
            if policy is not None and policy.advisory_severity and self.environments is not None
            else None
        )
        check = missing_for_move(
            policy,
            role=principal.role(project),
            is_admin=principal.is_admin,
            approvers=approvers,
            gate_verdict=gate.verdict if gate else None,
            release_status=release.status,
            gate_detail=decided.detail if decided is not None else "",
            advisories=advisory,
        )
        return MoveAssessment(request, policy, decided, approvers, dropped, check, advisory)

    def _approvers_now(
        self, request: PromotionRequest | None, project: str
    ) -> tuple[list[str], list[dict[str, str]]]:
        """The request's approvers who may still approve in ``project`` now (their role today, not the
        one they had when they approved), and each one who may not, with why."""
        if request is None:
            return [], []
        counted, dropped = [], []
        for user in request.approvers():
            why = self._why_not_approver(user, project)
            if why is None:
                counted.append(user)
            else:
                dropped.append({"user": user, "why": why})
        return counted, dropped

    def _why_not_approver(self, user: str, project: str) -> str | None:
        """Why ``user`` may not approve a move in ``project`` now; None when they may."""
        try:
            account = self.access.user(user)
            now = self.access.principal(user)
        except NotFound:
            return "the user no longer exists"
        if account.disabled:
            return "the user is disabled"
        if allowed(now, "release.approve", project):
            return None
        role = now.role(project)
        if role is None:
            return f"{user} is no longer a member of project {project}"
        return f"{user} is now {role} in project {project}, which may not approve"

    def _request_for(
        self, release: Release, alias: str, request_id: str | None, principal: Principal
    ) -> PromotionRequest | None:
        if request_id is not None:
            request = self.get_request(request_id, principal=principal)
            if request.release_id != release.id or request.alias != alias:
                raise SpecError(
                    [
                        SpecIssue(
                            "request",
                            f"{request_id} asks for {request.alias} -> version {request.version}, "
                            f"not {alias} -> version {release.version}",
                            request_id,
                        )
                    ],
                    what="alias move",
                )
            if request.status not in ("open", "approved"):
                raise Conflict(f"promotion request {request_id} is {request.status}")
            return request
        for request in self.store.requests([release.model_id]):  # newest first
            if (
                request.release_id == release.id
                and request.alias == alias
                and request.status in ("open", "approved")
            ):
                return request
        return None

"""Aliases, their protection policies, promotion requests and approvals, and alias history.

An alias (``prod``, ``candidate`` ...) points at one release of a model at a
time; every move is an append-only event naming who, when, why, the policy
then in force, the approvals and the gate decision that allowed it. Where an
alias stands at any time is its newest move at or before that time
(``history(at=...)``).

A policy (per model, or the project's default for an alias) says which roles
may move the alias, how many distinct approvers besides the requester are
needed, and which suite's gate must pass on the release's artifact: a gate
the gateway decides at the move on the policy's terms (``PolicyGate``), never
a person's. A move that misses any of it is refused (Conflict) with every
missing piece listed; the move and its audit event name the decision that
counted. Only a failed or missing gate can be overridden, by a lead or admin,
with ``override`` and a reason: the override is its own audit event
(``release.override``) and marks the move, so every view of the release
shows it. Approvals are promotion requests and decisions on record, and are
re-checked when the move happens: an approver who has since lost the role that
may approve (``release.approve``), left the project or was disabled no longer
counts, and the move says so (``approvals_not_counted`` in its audit event, and
the refusal names them).

A policy may also ask that the release's training environment (the environment version its run used)
has no known advisory of a least severity (``advisory_severity``, e.g. CRITICAL) in the site's OSV
directory: checked at each move, the refusal names each advisory id and package; an override stands
in for it as for the gate.
"""

from __future__ import annotations

from typing import Any

from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.releases.domain import DECISIONS, REASON_MAX, AliasEvent, PromotionRequest, Release
from gateway.errors import Conflict, Forbidden, SpecError, SpecIssue
from gateway.services.handoff.outbox import HandoffService
from gateway.services.releases.move_checks import MoveAssessment, MoveChecks
from gateway.services.releases.policy_gate import PolicyGate
from gateway.services.releases.registry import ReleaseService, alias_issues, text_issue
from gateway.store.access.access import AccessStore
from gateway.store.releases.promotions import NewMove, PromotionStore


class PromotionService(MoveChecks):
    """Promotion requests, their decisions and alias moves; the reads (``AliasReads``) and the move
    checks (``MoveChecks``, with ``preview``) come from its bases."""

    def __init__(
        self,
        store: PromotionStore,
        releases: ReleaseService,
        gate: PolicyGate,
        access: AccessStore,
        *,
        handoff: HandoffService | None = None,
    ) -> None:
        self.store = store
        self.releases = releases
        self.gate = gate
        self.access = access  # the approvers' roles as they are now, re-checked at each move
        self.handoff = handoff  # what a move hands off to MLflow and webhooks (None: nothing)
        self.environments = None  # the advisory rule's check (wiring sets it)

    # -- promotion requests -----------------------------------------------------------------------

    def request(
        self, project: str, model: str, version: int, alias: str, *, principal: Principal, reason: str = ""
    ) -> PromotionRequest:
        """Ask for ``alias`` to point at release ``version``; members. SpecError for a bad alias."""
        release = self.releases.release(project, model, version, principal=principal)
        require(principal, "release.request", project)
        issues = alias_issues(alias)
        if (issue := text_issue("reason", reason, REASON_MAX)) is not None:
            issues.append(issue)
        if issues:
            raise SpecError(issues, what="promotion request")
        if release.status == "withdrawn":
            raise Conflict(f"release {release.ref} is withdrawn; a withdrawn release cannot be promoted")
        return self.store.add_request(
            release.model_id,
            alias,
            release.id,
            principal.user,
            reason,
            audit=self._audit(
                principal, "release.request", project, {"release": release.ref, "alias": alias}
            ),
        )

    def decide(
        self, request_id: str, decision: str, *, principal: Principal, note: str = ""
    ) -> PromotionRequest:
        """Approve or reject a request (leads and reviewers; never the requester). Once enough distinct
        approvers (the alias's policy) approve, the request is ``approved``; a rejection rejects it."""
        request = self.get_request(request_id, principal=principal)
        require(principal, "release.approve", request.project)
        issues = []
        if decision not in DECISIONS:
            issues.append(SpecIssue("decision", f"one of {', '.join(DECISIONS)}", decision))
        if (issue := text_issue("note", note, REASON_MAX)) is not None:
            issues.append(issue)
        if issues:
            raise SpecError(issues, what="promotion decision")
        if principal.user == request.requested_by:
            raise Forbidden(
                f"{principal.user} requested {request_id}; an approval must come from someone else"
            )
        policy = self.store.policy(request.project, request.model_id, request.alias)
        needed = policy.approvals if policy else 0
        approvers = set(request.approvers()) | {principal.user}
        status = "rejected" if decision == "reject" else "approved" if len(approvers) >= needed else "open"
        return self.store.decide(
            request_id,
            decision,
            principal.user,
            note,
            status=status,
            audit=self._audit(
                principal,
                f"release.{decision}",
                request.project,
                {"request": request_id, "alias": request.alias, "version": request.version, "status": status},
                target_type="promotion_request",
            ),
        )

    # -- moving an alias --------------------------------------------------------------------------

    def promote(
        self,
        project: str,
        model: str,
        version: int,
        alias: str,
        *,
        principal: Principal,
        reason: str = "",
        override: bool = False,
        request_id: str | None = None,
    ) -> AliasEvent:
        """Point ``alias`` at release ``version`` if its policy is met (Conflict listing what is missing).

        The approvals counted are those of ``request_id``, or of the newest open or approved request
        for this release and alias. ``override`` (leads and admins, with a reason) stands in for a failed
        or missing gate only, and is audited as its own event.
        """
        release = self.releases.release(project, model, version, principal=principal)
        require(principal, "release.promote", project)
        issues = alias_issues(alias)
        if (issue := text_issue("reason", reason, REASON_MAX, required=override)) is not None:
            issues.append(issue)
        if issues:
            raise SpecError(issues, what="alias move")
        found = self._check(release, alias, request_id, override, principal)
        current = self.store.alias_events(release.model_id, alias)
        if current and current[-1].to_release == release.id:
            raise Conflict(f"{alias} points at {release.ref} already (since {current[-1].at.isoformat()})")
        after = _move_after(release, alias, current[-1] if current else None, found, override, reason)
        also = []
        if override:
            also.append(
                self._audit(
                    principal,
                    "release.override",
                    project,
                    after | {"missing": list(found.check.missing)},
                    target_type="release",
                    target_id=release.id,
                )
            )
        gate, policy, request = found.gate, found.policy, found.request
        return self.store.move_alias(
            NewMove(
                model_id=release.model_id,
                alias=alias,
                to_release=release.id,
                actor=principal.user,
                reason=reason,
                expected_seq=current[-1].seq if current else 0,
                request_id=request.id if request is not None else None,
                approvals=tuple(found.approvers),
                gate_id=gate.id if gate else None,
                override=override,
                policy=policy.as_dict() if policy else None,
            ),
            audit=self._audit(principal, "alias.move", project, after, target_type="alias_event"),
            also=also,
            # its MLflow alias and webhook events, in the move's own transaction (services/handoff)
            outbox=self.handoff.for_move(project, protected=policy is not None) if self.handoff else (),
        )

    @staticmethod
    def _audit(
        principal: Principal,
        action: str,
        project: str,
        after: dict[str, Any],
        *,
        target_type: str = "promotion_request",
        target_id: str = "",
    ) -> AuditEntry:
        return AuditEntry(
            actor=principal.user,
            action=action,
            target_type=target_type,
            target_id=target_id,
            project=project,
            source=principal.source,
            after=after,
        )


def _move_after(
    release: Release,
    alias: str,
    last: AliasEvent | None,
    found: MoveAssessment,
    override: bool,
    reason: str,
) -> dict[str, Any]:
    """The audit record of a move of ``alias`` from ``last`` (None: its first) to ``release``."""
    gate = found.gate
    after: dict[str, Any] = {
        "release": release.ref,
        "alias": alias,
        "from_version": last.to_version if last is not None else None,
        "to_version": release.version,
        "approvals": found.approvers,
        "approvals_not_counted": found.dropped,
        "gate": gate.id if gate else None,
        "gate_verdict": gate.verdict if gate else None,
        "gate_made_for": gate.made_for if gate else None,
        "override": override,
        "reason": reason,
    }
    advisory = found.advisory
    if advisory is not None:  # the policy's advisory rule: what the training environment had
        after["advisories"] = {
            "environment": advisory.environment,
            "findings": [list(f) for f in advisory.findings],
            "unchecked": advisory.unchecked,
        }
    return after

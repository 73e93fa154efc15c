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

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from gateway.core.access.policy import allowed, require
from gateway.core.audit.entry import AuditEntry
from gateway.core.domain import Principal
from gateway.core.eval.domain import GateRecord
from gateway.core.releases.domain import (
    DECISIONS,
    REASON_MAX,
    AdvisoryCheck,
    AliasEvent,
    AliasPolicy,
    MoveCheck,
    PromotionRequest,
    Release,
    alias_at,
    check_alias,
    missing_for_move,
)
from gateway.core.releases.views import move_dict, release_dict, request_dict
from gateway.errors import Conflict, Forbidden, NotFound, SpecError, SpecIssue
from gateway.services.handoff.outbox import HandoffService
from gateway.services.releases.policy_gate import AliasGate, PolicyGate
from gateway.services.releases.registry import ReleaseService, text_issue
from gateway.store.access import AccessStore
from gateway.store.promotions import NewMove, PromotionStore


class AdvisorySource(Protocol):
    """What checks a run's training environment against the site's advisories (services.envs)."""

    def advisory_check(self, run_id: str) -> AdvisoryCheck:
        """Run ``run_id``'s environment version against the site's advisories."""
        ...


@dataclass(frozen=True)
class AliasState:
    """Where an alias stands (at a time): the move that put it there, and the release it points at."""

    alias: str
    event: AliasEvent | None
    release: Release | None


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


class PromotionService:
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
        self.environments: AdvisorySource | None = None  # the advisory rule's check (wiring)

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

    def requests(
        self, project: str, model: str, *, principal: Principal, status: str | None = None
    ) -> list[PromotionRequest]:
        """A model's promotion requests (one status, if given), newest first."""
        return self.store.requests([self.releases.model(project, model, principal=principal).id], status)

    def get_request(self, request_id: str, *, principal: Principal) -> PromotionRequest:
        """One promotion request the caller may read, or NotFound."""
        found = self.store.request(request_id)
        if not allowed(principal, "release.read", found.project):
            raise NotFound(f"no promotion request {request_id!r}")
        return found

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
        request, policy, gate, approvers, dropped, check, advisory = self._check(
            release, alias, request_id, override, principal
        )
        current = self.store.alias_events(release.model_id, alias)
        expected = current[-1].seq if current else 0
        if current and current[-1].to_release == release.id:
            raise Conflict(f"{alias} points at {release.ref} already (since {current[-1].at.isoformat()})")
        after = {
            "release": release.ref,
            "alias": alias,
            "from_version": current[-1].to_version if current else None,
            "to_version": release.version,
            "approvals": approvers,
            "approvals_not_counted": dropped,
            "gate": gate.id if gate else None,
            "gate_verdict": gate.verdict if gate else None,
            "gate_made_for": gate.made_for if gate else None,
            "override": override,
            "reason": reason,
        }
        if advisory is not None:  # the policy's advisory rule: what the training environment had
            after["advisories"] = {
                "environment": advisory.environment,
                "findings": [list(f) for f in advisory.findings],
                "unchecked": advisory.unchecked,
            }
        also = []
        if override:
            also.append(
                self._audit(
                    principal,
                    "release.override",
                    project,
                    after | {"missing": list(check.missing)},
                    target_type="release",
                    target_id=release.id,
                )
            )
        return self.store.move_alias(
            NewMove(
                model_id=release.model_id,
                alias=alias,
                to_release=release.id,
                actor=principal.user,
                reason=reason,
                expected_seq=expected,
                request_id=request.id if request is not None else None,
                approvals=tuple(approvers),
                gate_id=gate.id if gate else None,
                override=override,
                policy=policy.as_dict() if policy else None,
            ),
            audit=self._audit(principal, "alias.move", project, after, target_type="alias_event"),
            also=also,
            # its MLflow alias and webhook events, in the move's own transaction (services/handoff)
            outbox=self.handoff.for_move(project, protected=policy is not None) if self.handoff else (),
        )

    def _check(
        self, release: Release, alias: str, request_id: str | None, override: bool, principal: Principal
    ) -> tuple[
        PromotionRequest | None,
        AliasPolicy | None,
        GateRecord | None,
        list[str],
        list[dict[str, str]],
        MoveCheck,
        AdvisoryCheck | None,
    ]:
        """The request, policy, gate, the approvers that count now and those that no longer do (with
        why), and what the move misses; raises when it may not go ahead (Conflict listing the missing
        pieces and the approvals not counted, Forbidden for an override below lead)."""
        request, policy, decided, approvers, dropped, check, advisory = self._assess(
            release, alias, request_id, principal
        )
        gate = decided.gate if decided is not None else None
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
        return request, policy, gate, approvers, dropped, check, advisory

    def _assess(
        self, release: Release, alias: str, request_id: str | None, principal: Principal
    ) -> tuple[
        PromotionRequest | None,
        AliasPolicy | None,
        AliasGate | None,
        list[str],
        list[dict[str, str]],
        MoveCheck,
        AdvisoryCheck | None,
    ]:
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
        return request, policy, decided, approvers, dropped, check, advisory

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
        request, policy, decided, approvers, dropped, check, advisory = self._assess(
            release, alias, None, principal
        )
        gate = decided.gate if decided is not None else None
        return MovePreview(
            release=release,
            alias=alias,
            policy=policy,
            request=request,
            gate_id=gate.id if gate else None,
            gate_verdict=gate.verdict if gate else None,
            gate_detail=decided.detail if decided is not None else "",
            approvers=tuple(approvers),
            dropped=tuple(dropped),
            missing=check.missing,
            gate_failed=check.gate_failed,
            may_override=check.gate_failed and allowed(principal, "release.override", project),
            already=bool(current) and current[-1].to_release == release.id,
            advisory=advisory,
        )

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

    # -- where aliases stand ----------------------------------------------------------------------

    def aliases(
        self, project: str, model: str, *, principal: Principal, at: datetime | None = None
    ) -> list[AliasState]:
        """Every alias of a model as it stood at ``at`` (None: now), by name."""
        found = self.releases.model(project, model, principal=principal)
        events = self.store.alias_events(found.id, until=at)
        by_alias: dict[str, list[AliasEvent]] = {}
        for event in events:
            by_alias.setdefault(event.alias, []).append(event)
        states = []
        for alias, moves in sorted(by_alias.items()):
            last = alias_at(moves, at) if at is not None else moves[-1]
            release = self.releases.store.release_by_id(last.to_release) if last and last.to_release else None
            states.append(AliasState(alias, last, release))
        return states

    def history(
        self,
        project: str,
        model: str,
        *,
        principal: Principal,
        alias: str | None = None,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A model's alias moves (one alias's, with ``alias``), oldest first; with ``at`` also where each
        alias stood then (``at_time``)."""
        if alias is not None and (issues := alias_issues(alias)):
            raise SpecError(issues, what="history query")
        found = self.releases.model(project, model, principal=principal)
        events = self.store.alias_events(found.id, alias)
        states = self.aliases(project, model, principal=principal, at=at) if at is not None else None
        if states is not None and alias is not None:
            states = [s for s in states if s.alias == alias] or [AliasState(alias, None, None)]
        return {"model": found.ref, "alias": alias, "at": at, "events": events, "at_time": states}

    def artifact_releases(self, sha256: str, *, principal: Principal) -> dict[str, Any]:
        """The releases of an artifact with this content the caller may read: each with the aliases that
        point at it now (and since when), every move to or from it, its promotion requests."""
        found = self.releases.releases_of_artifact(sha256, principal=principal)
        if not found and not self.releases.readable_artifact(sha256.lower(), principal):
            raise NotFound(f"no artifact with sha256 {sha256.lower()} that you may read")
        out = []
        for release in found:
            states = self.aliases(release.project, release.model, principal=principal)
            current = [s for s in states if s.release is not None and s.release.id == release.id]
            out.append(
                release_dict(release)
                | {
                    "aliases": [
                        {
                            "alias": s.alias,
                            "version": release.version,
                            "release_id": release.id,
                            "since": s.event.at if s.event else None,
                            "move": move_dict(s.event) if s.event else None,
                        }
                        for s in current
                    ],
                    "alias_events": [move_dict(m) for m in self.store.alias_events_of([release.id])],
                    "promotions": [request_dict(q) for q in self.store.requests_of([release.id])],
                }
            )
        return {"sha256": sha256.lower(), "releases": out}

    def moves_of(self, release_ids: Sequence[str]) -> list[AliasEvent]:
        """Alias moves to or from these releases (for traces and bundles)."""
        return self.store.alias_events_of(release_ids)

    def requests_of(self, release_ids: Sequence[str]) -> list[PromotionRequest]:
        """Promotion requests of these releases (for traces and bundles)."""
        return self.store.requests_of(release_ids)

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


def alias_issues(alias: str) -> list[SpecIssue]:
    """The issue of a bad alias name (empty when it is fine)."""
    try:
        check_alias(alias)
    except ValueError as exc:
        return [SpecIssue("alias", str(exc), alias)]
    return []

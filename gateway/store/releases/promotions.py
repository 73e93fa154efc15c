"""The model registry's alias moves, protection policies and promotion requests with their decisions.

Every write goes in one transaction with its audit event. An alias move gets
the next sequence number of its alias, and the unique (model, alias, seq)
key makes a racing second move fail rather than both land (the caller sees
Conflict and tries again on the new position).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.core.handoff.outbox import NewOutboxItem
from gateway.core.releases.domain import AliasEvent, AliasPolicy, PromotionDecision, PromotionRequest
from gateway.errors import Conflict, NotFound, StoreError
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.handoff.handoff import add_items
from gateway.store.models import utcnow
from gateway.store.releases.models import (
    AliasEventRow,
    AliasPolicyRow,
    ModelRow,
    PromotionDecisionRow,
    PromotionRequestRow,
    ReleaseRow,
)
from gateway.store.versioned import new_id

PROJECT_SCOPE = "*"  # alias_policies.scope of a project's default policy


@dataclass(frozen=True)
class NewMove:
    model_id: str
    alias: str
    to_release: str | None
    actor: str
    reason: str
    expected_seq: int  # the seq of the move this one follows (0: the alias's first)
    request_id: str | None = None
    approvals: tuple[str, ...] = ()
    gate_id: str | None = None
    override: bool = False
    policy: dict[str, Any] | None = None


class PromotionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- aliases ----------------------------------------------------------------------------------

    def alias_events(
        self, model_id: str, alias: str | None = None, *, until: datetime | None = None
    ) -> list[AliasEvent]:
        """Moves of a model's aliases (one alias, or all), by alias then seq; ``until``: at or before."""
        query = select(AliasEventRow).where(AliasEventRow.model_id == model_id)
        if alias is not None:
            query = query.where(AliasEventRow.alias == alias)
        if until is not None:
            query = query.where(AliasEventRow.at <= until)
        query = query.order_by(AliasEventRow.alias, AliasEventRow.seq)
        with self.db.session() as session:
            return [_move(r, session) for r in session.scalars(query)]

    def alias_events_of(self, release_ids: Sequence[str]) -> list[AliasEvent]:
        """Moves to or from any of these releases, in time order."""
        if not release_ids:
            return []
        ids = list(release_ids)
        query = (
            select(AliasEventRow)
            .where(AliasEventRow.to_release.in_(ids) | AliasEventRow.from_release.in_(ids))
            .order_by(AliasEventRow.at, AliasEventRow.seq)
        )
        with self.db.session() as session:
            return [_move(r, session) for r in session.scalars(query)]

    def alias_event(self, event_id: str) -> AliasEvent:
        """One alias move by id, or NotFound."""
        with self.db.session() as session:
            row = session.get(AliasEventRow, event_id)
            if row is None:
                raise NotFound(f"no alias move {event_id!r}")
            return _move(row, session)

    def move_alias(
        self,
        move: NewMove,
        *,
        audit: AuditEntry,
        also: Sequence[AuditEntry] = (),
        outbox: Sequence[NewOutboxItem] = (),
    ) -> AliasEvent:
        """Append a move of an alias; Conflict when the alias moved since ``move.expected_seq``. A
        promotion request named in the move is marked promoted in the same transaction, ``also``
        (an override's own event) is audited with it, pointing at the move, and the ``outbox`` items
        (its MLflow alias and webhook events) are added for it."""
        try:
            with self.db.session() as session:
                last = session.scalar(
                    select(AliasEventRow)
                    .where(AliasEventRow.model_id == move.model_id, AliasEventRow.alias == move.alias)
                    .order_by(AliasEventRow.seq.desc())
                    .limit(1)
                )
                seq = last.seq if last is not None else 0
                if seq != move.expected_seq:
                    raise Conflict(
                        f"alias {move.alias} moved meanwhile (to move {seq}); look again and retry"
                    )
                row = AliasEventRow(
                    id=new_id("am"),
                    model_id=move.model_id,
                    alias=move.alias,
                    seq=seq + 1,
                    from_release=last.to_release if last is not None else None,
                    to_release=move.to_release,
                    actor=move.actor,
                    at=utcnow(),
                    reason=move.reason,
                    request_id=move.request_id,
                    approvals=list(move.approvals),
                    gate_id=move.gate_id,
                    override=move.override,
                    policy=move.policy,
                )
                session.add(row)
                if move.request_id is not None:
                    request = session.get(PromotionRequestRow, move.request_id)
                    if request is not None:
                        request.status = "promoted"
                session.flush()
                append(session, replace(audit, target_id=row.id))
                for extra in also:
                    append(session, replace(extra, after=dict(extra.after or {}) | {"move": row.id}))
                add_items(session, [item.about(row.id) for item in outbox], row.at)
                return _move(row, session)
        except StoreError as exc:
            if "uq_alias_event_seq" in str(exc) or "UNIQUE" in str(exc).upper():
                raise Conflict(f"alias {move.alias} moved at the same time; look again and retry") from exc
            raise

    # -- policies ---------------------------------------------------------------------------------

    def set_policy(self, policy: AliasPolicy, *, audit: AuditEntry) -> AliasPolicy:
        """Create or replace a policy (``model_id`` None: the project default), audited with before/after."""
        scope = policy.model_id or PROJECT_SCOPE
        with self.db.session() as session:
            row = session.get(AliasPolicyRow, (policy.project, scope, policy.alias))
            before = _policy(row).as_dict() if row is not None else None
            if row is None:
                row = AliasPolicyRow(project=policy.project, scope=scope, alias=policy.alias)
                session.add(row)
            row.roles, row.approvals, row.gate_suite = list(policy.roles), policy.approvals, policy.gate_suite
            row.gate_version = str(policy.gate_version) if policy.gate_version is not None else None
            row.gate_baseline = policy.gate_baseline
            row.allow_imported_results = policy.allow_imported_results
            row.advisory_severity = policy.advisory_severity
            row.updated_by, row.updated_at = policy.updated_by, utcnow()
            session.flush()
            append(session, replace(audit, before=before, after=_policy(row).as_dict()))
            return _policy(row)

    def policy(self, project: str, model_id: str | None, alias: str) -> AliasPolicy | None:
        """The policy of one alias: the model's own, else the project default (``model_id`` None: only
        the default); None when the alias is unprotected."""
        with self.db.session() as session:
            scopes = [model_id, PROJECT_SCOPE] if model_id else [PROJECT_SCOPE]
            for scope in scopes:
                row = session.get(AliasPolicyRow, (project, scope, alias))
                if row is not None:
                    return _policy(row)
        return None

    def policies(self, project: str, model_id: str | None) -> list[AliasPolicy]:
        """The project's default policies and (with ``model_id``) the model's own, by alias."""
        scopes = [PROJECT_SCOPE] + ([model_id] if model_id else [])
        query = (
            select(AliasPolicyRow)
            .where(AliasPolicyRow.project == project, AliasPolicyRow.scope.in_(scopes))
            .order_by(AliasPolicyRow.alias, AliasPolicyRow.scope)
        )
        with self.db.session() as session:
            return [_policy(r) for r in session.scalars(query)]

    # -- promotion requests -----------------------------------------------------------------------

    def add_request(
        self, model_id: str, alias: str, release_id: str, by: str, reason: str, *, audit: AuditEntry
    ) -> PromotionRequest:
        """Open a promotion request with its audit event."""
        with self.db.session() as session:
            row = PromotionRequestRow(
                id=new_id("pr"),
                model_id=model_id,
                alias=alias,
                release_id=release_id,
                requested_by=by,
                reason=reason,
                at=utcnow(),
                status="open",
            )
            session.add(row)
            session.flush()
            append(session, replace(audit, target_id=row.id))
            return self._request(session, row)

    def request(self, request_id: str) -> PromotionRequest:
        """One promotion request with its decisions, or NotFound."""
        with self.db.session() as session:
            row = session.get(PromotionRequestRow, request_id)
            if row is None:
                raise NotFound(f"no promotion request {request_id!r}")
            return self._request(session, row)

    def requests(self, model_ids: Sequence[str], status: str | None = None) -> list[PromotionRequest]:
        """Requests of these models (optionally of one status), newest first."""
        if not model_ids:
            return []
        query = select(PromotionRequestRow).where(PromotionRequestRow.model_id.in_(list(model_ids)))
        if status is not None:
            query = query.where(PromotionRequestRow.status == status)
        query = query.order_by(PromotionRequestRow.at.desc())
        with self.db.session() as session:
            return [self._request(session, r) for r in session.scalars(query)]

    def requests_of(self, release_ids: Sequence[str]) -> list[PromotionRequest]:
        """Requests to promote any of these releases, oldest first."""
        if not release_ids:
            return []
        query = select(PromotionRequestRow).where(PromotionRequestRow.release_id.in_(list(release_ids)))
        with self.db.session() as session:
            return [
                self._request(session, r) for r in session.scalars(query.order_by(PromotionRequestRow.at))
            ]

    def decide(
        self, request_id: str, decision: str, decider: str, note: str, *, status: str, audit: AuditEntry
    ) -> PromotionRequest:
        """Record a decision on an open request and set its status, with the audit event; Conflict when
        it is no longer open."""
        with self.db.session() as session:
            row = session.get(PromotionRequestRow, request_id)
            if row is None:
                raise NotFound(f"no promotion request {request_id!r}")
            if row.status not in ("open", "approved"):
                raise Conflict(
                    f"promotion request {request_id} is {row.status}; a decision needs an open one"
                )
            session.add(
                PromotionDecisionRow(
                    id=new_id("pd"),
                    request_id=request_id,
                    decision=decision,
                    decider=decider,
                    note=note,
                    at=utcnow(),
                )
            )
            row.status = status
            session.flush()
            append(session, replace(audit, target_id=request_id))
            return self._request(session, row)

    def _request(self, session: Session, row: PromotionRequestRow) -> PromotionRequest:
        model = session.get_one(ModelRow, row.model_id)
        release = session.get_one(ReleaseRow, row.release_id)
        decisions = session.scalars(
            select(PromotionDecisionRow)
            .where(PromotionDecisionRow.request_id == row.id)
            .order_by(PromotionDecisionRow.at)
        ).all()
        return PromotionRequest(
            id=row.id,
            model_id=row.model_id,
            project=model.project,
            model=model.name,
            alias=row.alias,
            release_id=row.release_id,
            version=release.version,
            requested_by=row.requested_by,
            reason=row.reason,
            at=row.at,
            status=row.status,
            decisions=tuple(
                PromotionDecision(
                    id=d.id,
                    request_id=d.request_id,
                    decision=d.decision,  # type: ignore[arg-type]  # a str column; services write only approve or reject
                    decider=d.decider,
                    note=d.note,
                    at=d.at,
                )
                for d in decisions
            ),
        )


def _move(row: AliasEventRow, session: Session) -> AliasEvent:
    versions = {}
    for rid in {row.from_release, row.to_release} - {None}:
        release = session.get(ReleaseRow, rid)
        versions[rid] = release.version if release is not None else None
    return AliasEvent(
        id=row.id,
        model_id=row.model_id,
        alias=row.alias,
        seq=row.seq,
        from_release=row.from_release,
        to_release=row.to_release,
        from_version=versions.get(row.from_release),
        to_version=versions.get(row.to_release),
        actor=row.actor,
        at=row.at,
        reason=row.reason,
        request_id=row.request_id,
        approvals=tuple(row.approvals or ()),
        gate_id=row.gate_id,
        override=bool(row.override),
        policy=dict(row.policy) if row.policy else None,
    )


def _policy(row: AliasPolicyRow) -> AliasPolicy:
    return AliasPolicy(
        project=row.project,
        alias=row.alias,
        model_id=None if row.scope == PROJECT_SCOPE else row.scope,
        roles=tuple(row.roles or ()),
        approvals=row.approvals,
        gate_suite=row.gate_suite,
        updated_by=row.updated_by,
        updated_at=row.updated_at,
        gate_version=int(row.gate_version) if row.gate_version and row.gate_version.isdigit() else None,
        gate_baseline=row.gate_baseline,
        allow_imported_results=bool(row.allow_imported_results),
        advisory_severity=row.advisory_severity,
    )

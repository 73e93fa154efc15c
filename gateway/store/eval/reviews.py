"""Gate decisions and human reviews: records written once (a review may later point at its successor).

A gate decision is written with its audit event and never changed. A review
is appended; when the same reviewer reviews the same target again, the new
review names the one it supersedes and the old one is marked superseded by
it, in the same transaction (the only update any of these rows ever gets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import or_, select, update

from gateway.core.eval.domain import GateRecord, Review, SampleRef
from gateway.errors import Conflict, NotFound
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database, rows_matched
from gateway.store.eval.models import EvalReviewRow, GateDecisionRow
from gateway.store.models import utcnow
from gateway.store.versioned import new_id


@dataclass(frozen=True)
class NewGate:
    project: str
    suite_version_id: str
    candidate_id: str
    baseline_id: str | None
    baseline_source: str
    verdict: str
    decision: dict[str, Any]
    review_ids: tuple[str, ...]
    decided_by: str
    made_for: dict[str, Any] | None = None
    reviews_not_counted: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class NewReview:
    project: str
    target_type: str
    target_id: str
    verdict: str
    notes: str
    samples: tuple[SampleRef, ...]
    labels: dict[str, str]
    reviewer: str


class ReviewStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- gate decisions -----------------------------------------------------------------------

    def record_gate(self, new: NewGate, *, audit: AuditEntry) -> GateRecord:
        """Write a gate decision and its audit event in one transaction; returns the record."""
        row = GateDecisionRow(
            id=new_id("gd"),
            project=new.project,
            suite_version_id=new.suite_version_id,
            candidate_id=new.candidate_id,
            baseline_id=new.baseline_id,
            baseline_source=new.baseline_source,
            verdict=new.verdict,
            decision=new.decision,
            review_ids=list(new.review_ids),
            decided_by=new.decided_by,
            decided_at=utcnow(),
            made_for=new.made_for,
            reviews_not_counted=[dict(r) for r in new.reviews_not_counted],
        )
        with self.db.session() as session:
            session.add(row)
            session.flush()
            append(session, replace(audit, target_id=row.id))
            return _gate(row)

    def gate(self, gate_id: str) -> GateRecord:
        """One gate decision, or NotFound."""
        with self.db.session() as session:
            row = session.get(GateDecisionRow, gate_id)
            if row is None:
                raise NotFound(f"no gate decision {gate_id!r}")
            return _gate(row)

    def gates_of(self, result_ids: Sequence[str], limit: int = 500) -> list[GateRecord]:
        """Decisions where one of ``result_ids`` is the candidate or the baseline, newest first."""
        if not result_ids:
            return []
        ids = list(result_ids)
        query = (
            select(GateDecisionRow)
            .where(or_(GateDecisionRow.candidate_id.in_(ids), GateDecisionRow.baseline_id.in_(ids)))
            .order_by(GateDecisionRow.decided_at.desc(), GateDecisionRow.id.desc())
            .limit(limit)
        )
        with self.db.session() as session:
            return [_gate(row) for row in session.scalars(query)]

    # -- reviews ------------------------------------------------------------------------------

    def add_review(self, new: NewReview, *, audit: AuditEntry) -> Review:
        """Append a review; it supersedes the reviewer's current review of the same target, if any.

        Conflict when another review by the same reviewer of the same target was written meanwhile.
        """
        review_id = new_id("rv")
        with self.db.session() as session:
            previous = session.scalar(
                select(EvalReviewRow.id).where(
                    EvalReviewRow.target_type == new.target_type,
                    EvalReviewRow.target_id == new.target_id,
                    EvalReviewRow.reviewer == new.reviewer,
                    EvalReviewRow.superseded_by.is_(None),
                )
            )
            if previous is not None:
                moved = rows_matched(
                    session.execute(
                        update(EvalReviewRow)
                        .where(EvalReviewRow.id == previous, EvalReviewRow.superseded_by.is_(None))
                        .values(superseded_by=review_id)
                    )
                )
                if not moved:
                    raise Conflict(f"review {previous} was superseded meanwhile; send the review again")
            row = EvalReviewRow(
                id=review_id,
                project=new.project,
                target_type=new.target_type,
                target_id=new.target_id,
                verdict=new.verdict,
                notes=new.notes,
                samples=[[s.task, s.id] for s in new.samples],
                labels=dict(new.labels),
                reviewer=new.reviewer,
                created_at=utcnow(),
                supersedes=previous,
            )
            session.add(row)
            session.flush()
            after = dict(audit.after or {}) | {"supersedes": previous}
            append(session, replace(audit, target_id=review_id, after=after))
            return _review(row)

    def reviews(self, target_type: str, target_ids: Sequence[str]) -> list[Review]:
        """Every review (superseded ones too) of these targets, oldest first."""
        if not target_ids:
            return []
        query = (
            select(EvalReviewRow)
            .where(EvalReviewRow.target_type == target_type, EvalReviewRow.target_id.in_(list(target_ids)))
            .order_by(EvalReviewRow.created_at, EvalReviewRow.id)
        )
        with self.db.session() as session:
            return [_review(row) for row in session.scalars(query)]

    def review(self, review_id: str) -> Review:
        """One review, or NotFound."""
        with self.db.session() as session:
            row = session.get(EvalReviewRow, review_id)
            if row is None:
                raise NotFound(f"no review {review_id!r}")
            return _review(row)


def _gate(row: GateDecisionRow) -> GateRecord:
    return GateRecord(
        id=row.id,
        project=row.project,
        suite_version_id=row.suite_version_id,
        candidate_id=row.candidate_id,
        baseline_id=row.baseline_id,
        baseline_source=row.baseline_source,
        verdict=row.verdict,
        decision=dict(row.decision),
        review_ids=tuple(row.review_ids or ()),
        decided_by=row.decided_by,
        decided_at=row.decided_at,
        made_for=dict(row.made_for) if row.made_for else None,
        reviews_not_counted=tuple(dict(r) for r in row.reviews_not_counted or ()),
    )


def _review(row: EvalReviewRow) -> Review:
    return Review(
        id=row.id,
        project=row.project,
        target_type=row.target_type,  # type: ignore[arg-type]  # a str column; services write only the Literal's words
        target_id=row.target_id,
        verdict=row.verdict,  # type: ignore[arg-type]  # a str column; services write only the Literal's words
        notes=row.notes,
        samples=tuple(SampleRef(task, ident) for task, ident in row.samples or ()),
        labels=dict(row.labels or {}),
        reviewer=row.reviewer,
        created_at=row.created_at,
        supersedes=row.supersedes,
        superseded_by=row.superseded_by,
    )

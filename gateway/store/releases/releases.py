"""The model registry's records: models, releases and their status events.

Every write goes in one transaction with its audit event (``store.audit.audit.append``).
A release gets the next version of its model inside that transaction (the
unique (model, version) key turns a race into a Conflict). Alias moves,
policies and promotion requests are in ``store.releases.promotions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gateway.core.handoff.outbox import NewOutboxItem
from gateway.core.releases.domain import (
    RegisteredModel,
    Release,
    StatusEvent,
)
from gateway.errors import Conflict, NotFound, StoreError
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.handoff.handoff import add_items
from gateway.store.models import utcnow
from gateway.store.releases.models import ModelRow, ReleaseRow, ReleaseStatusRow
from gateway.store.versioned import new_id


@dataclass(frozen=True)
class NewRelease:
    model_id: str
    artifact_sha256: str
    artifact_path: str
    run_id: str
    notes: str
    snapshot: dict[str, Any]
    created_by: str


class ReleaseStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- models -----------------------------------------------------------------------------------

    def add_model(
        self, project: str, name: str, description: str, by: str, *, audit: AuditEntry
    ) -> RegisteredModel:
        """Register a model; Conflict when the project already has one of that name."""
        with self.db.session() as session:
            if session.scalar(select(ModelRow.id).where(ModelRow.project == project, ModelRow.name == name)):
                raise Conflict(f"model {project}/{name} exists already; see `gw model show {project}/{name}`")
            row = ModelRow(
                id=new_id("md"),
                project=project,
                name=name,
                description=description,
                created_by=by,
                created_at=utcnow(),
            )
            session.add(row)
            session.flush()
            append(session, replace(audit, target_id=row.id))
            return _model(row)

    def model(self, project: str, name: str) -> RegisteredModel:
        """The model ``project/name``, or NotFound."""
        with self.db.session() as session:
            row = session.scalar(select(ModelRow).where(ModelRow.project == project, ModelRow.name == name))
            if row is None:
                raise NotFound(f"no model {project}/{name}")
            return _model(row)

    def model_by_id(self, model_id: str) -> RegisteredModel:
        """The model with this id, or NotFound."""
        with self.db.session() as session:
            row = session.get(ModelRow, model_id)
            if row is None:
                raise NotFound(f"no model {model_id!r}")
            return _model(row)

    def models(self, projects: Sequence[str] | None) -> list[RegisteredModel]:
        """Models of ``projects`` (None: all), by project and name."""
        query = select(ModelRow).order_by(ModelRow.project, ModelRow.name)
        if projects is not None:
            query = query.where(ModelRow.project.in_(list(projects)))
        with self.db.session() as session:
            return [_model(r) for r in session.scalars(query)]

    # -- releases ---------------------------------------------------------------------------------

    def add_release(
        self, new: NewRelease, *, audit: AuditEntry, outbox: Sequence[NewOutboxItem] = ()
    ) -> Release:
        """Write the model's next release, its audit event and its ``outbox`` items (the MLflow version,
        webhook events) in one transaction.

        Conflict when another release of the model took that version meanwhile (send it again).
        """
        try:
            with self.db.session() as session:
                model = session.get(ModelRow, new.model_id)
                if model is None:
                    raise NotFound(f"no model {new.model_id!r}")
                last = session.scalar(
                    select(func.max(ReleaseRow.version)).where(ReleaseRow.model_id == new.model_id)
                )
                row = ReleaseRow(
                    id=new_id("rl"),
                    model_id=new.model_id,
                    version=(last or 0) + 1,
                    artifact_sha256=new.artifact_sha256,
                    artifact_path=new.artifact_path,
                    run_id=new.run_id,
                    notes=new.notes,
                    snapshot=new.snapshot,
                    created_by=new.created_by,
                    created_at=utcnow(),
                )
                session.add(row)
                session.flush()
                after = dict(audit.after or {}) | {
                    "version": row.version,
                    "release": f"{model.project}/{model.name}@{row.version}",
                }
                append(session, replace(audit, target_id=row.id, after=after))
                add_items(session, [item.about(row.id) for item in outbox], row.created_at)
                return _release(row, model, [])
        except StoreError as exc:
            if "uq_release_version" in str(exc) or "UNIQUE" in str(exc).upper():
                raise Conflict(
                    "another release of this model was created at the same time; send it again"
                ) from exc
            raise

    def release(self, model_id: str, version: int | None) -> Release:
        """Version ``version`` of a model (None: its newest), or NotFound."""
        query = select(ReleaseRow).where(ReleaseRow.model_id == model_id)
        query = (
            query.where(ReleaseRow.version == version)
            if version is not None
            else query.order_by(ReleaseRow.version.desc()).limit(1)
        )
        with self.db.session() as session:
            row = session.scalar(query)
            if row is None:
                raise NotFound(f"no release {version if version is not None else '(none yet)'} of that model")
            return self._full(session, row)

    def release_by_id(self, release_id: str) -> Release:
        """One release by id, or NotFound."""
        with self.db.session() as session:
            row = session.get(ReleaseRow, release_id)
            if row is None:
                raise NotFound(f"no release {release_id!r}")
            return self._full(session, row)

    def releases(self, model_id: str) -> list[Release]:
        """Every release of a model, oldest first."""
        with self.db.session() as session:
            rows = session.scalars(
                select(ReleaseRow).where(ReleaseRow.model_id == model_id).order_by(ReleaseRow.version)
            )
            return [self._full(session, r) for r in rows]

    def releases_by_sha256(self, sha256: str) -> list[Release]:
        """Every release of an artifact with this content, oldest first."""
        with self.db.session() as session:
            rows = session.scalars(
                select(ReleaseRow).where(ReleaseRow.artifact_sha256 == sha256).order_by(ReleaseRow.created_at)
            )
            return [self._full(session, r) for r in rows]

    def add_status(
        self, release_id: str, status: str, reason: str, actor: str, *, audit: AuditEntry
    ) -> StatusEvent:
        """Append a status event (deprecated, withdrawn, active) of a release with its audit event."""
        with self.db.session() as session:
            row = ReleaseStatusRow(
                id=new_id("rs"), release_id=release_id, status=status, reason=reason, actor=actor, at=utcnow()
            )
            session.add(row)
            session.flush()
            append(
                session,
                replace(audit, target_id=release_id, after=dict(audit.after or {}) | {"event": row.id}),
            )
            return _status(row)

    def _full(self, session: Session, row: ReleaseRow) -> Release:
        model = session.get_one(ModelRow, row.model_id)
        statuses = session.scalars(
            select(ReleaseStatusRow)
            .where(ReleaseStatusRow.release_id == row.id)
            .order_by(ReleaseStatusRow.at)
        ).all()
        return _release(row, model, statuses)


def _model(row: ModelRow) -> RegisteredModel:
    return RegisteredModel(
        id=row.id,
        project=row.project,
        name=row.name,
        description=row.description,
        created_by=row.created_by,
        created_at=row.created_at,
    )


def _status(row: ReleaseStatusRow) -> StatusEvent:
    return StatusEvent(
        id=row.id,
        release_id=row.release_id,
        status=row.status,  # type: ignore[arg-type]  # a str column; services write only these words
        reason=row.reason,
        actor=row.actor,
        at=row.at,
    )


def _release(row: ReleaseRow, model: ModelRow, statuses: Sequence[ReleaseStatusRow]) -> Release:
    events = tuple(_status(s) for s in statuses)
    return Release(
        id=row.id,
        model_id=row.model_id,
        project=model.project,
        model=model.name,
        version=row.version,
        artifact_sha256=row.artifact_sha256,
        artifact_path=row.artifact_path,
        run_id=row.run_id,
        notes=row.notes,
        snapshot=dict(row.snapshot or {}),
        created_by=row.created_by,
        created_at=row.created_at,
        status=events[-1].status if events else "active",
        status_events=events,
    )

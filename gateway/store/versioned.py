"""Reads and registrations of a versioned record: a parent row (a dataset, an environment, an eval
suite) and its numbered, immutable versions, each with a content digest.

The three stores read and register their versions the same way; ``VersionedRecords`` is that way,
written once: the parent by ``project/name``; every version oldest first, one by id, and one by
number, by a unique digest prefix or the latest; and ``register``, which finds or creates the
parent, returns the version that has the digest already, or numbers the next one and has the store
write it (its own row fields and audit event). Each store keeps its public methods and hands its
session (for a registration, its database) to these; ``VersionReads`` is the public ``versions``,
``version`` and ``find_version`` that the environment and dataset stores share. A version row
becomes the store's core value through ``value(session, row, parent)``. Errors are ``NotFound``
with the record's noun and ``project/name`` (a parent is a ``ProjectNamedRow``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gateway.core.audit.entry import AuditEntry
from gateway.errors import NotFound, StoreError
from gateway.store.db import Database
from gateway.store.models import ProjectNamedRow

ParentRow = TypeVar("ParentRow", bound=ProjectNamedRow)  # its project and name label every message
VersionRow = TypeVar("VersionRow")
Value = TypeVar("Value")


def new_id(prefix: str) -> str:
    """A fresh id: ``prefix``, ``-`` and 16 random hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def version_audit(
    audit: AuditEntry, target_type: str, version_id: str, project: str, after: dict[str, Any]
) -> AuditEntry:
    """``audit``'s actor, action and source, aimed at the version ``version_id`` just written (a
    ``target_type`` such as "dataset_version") of ``project``, with ``after`` saying what it holds."""
    return AuditEntry(
        actor=audit.actor,
        action=audit.action,
        target_type=target_type,
        target_id=version_id,
        project=project,
        source=audit.source,
        after=after,
    )


@dataclass(frozen=True)
class NewParent:
    """The parent row a first registration creates: its id's prefix and who described it how."""

    id_prefix: str  # "ds", "env", "es"
    description: str
    created_by: str


@dataclass(frozen=True)
class VersionedRecords(Generic[ParentRow, VersionRow, Value]):
    noun: str  # what the parent is called in messages: "dataset", "environment", "eval suite"
    parent: type[ParentRow]
    row: type[VersionRow]
    parent_key: str  # the version row's column naming its parent: "dataset_id"
    value: Callable[[Session, VersionRow, ParentRow], Value]
    digest_key: str = "digest"  # the version row's content digest column

    def _column(self, name: str) -> Any:
        return getattr(self.row, name)

    def named(self, session: Session, project: str, name: str) -> ParentRow:
        """The parent row ``project/name``, or NotFound."""
        parent = self._named(session, project, name)
        if parent is None:
            raise NotFound(f"no {self.noun} {project}/{name}")
        return parent

    def _named(self, session: Session, project: str, name: str) -> ParentRow | None:
        return session.scalar(
            select(self.parent).where(self.parent.project == project, self.parent.name == name)
        )

    def parent_of(self, session: Session, parent_id: str) -> ParentRow:
        """The parent row with id ``parent_id``, or NotFound."""
        parent = session.get(self.parent, parent_id)
        if parent is None:
            raise NotFound(f"no {self.noun} {parent_id!r}")
        return parent

    def all(self, session: Session, parent_id: str) -> list[Value]:
        """Every version of ``parent_id``, oldest first; NotFound for an unknown parent."""
        parent = self.parent_of(session, parent_id)
        of_parent = self._column(self.parent_key) == parent_id
        rows = session.scalars(select(self.row).where(of_parent).order_by(self._column("number")))
        return [self.value(session, row, parent) for row in rows]

    def by_id(self, session: Session, version_id: str) -> Value:
        """The version with id ``version_id``, or NotFound."""
        row = session.get(self.row, version_id)
        if row is None:
            raise NotFound(f"no {self.noun} version {version_id!r}")
        return self.value(session, row, session.get_one(self.parent, getattr(row, self.parent_key)))

    def find(
        self, session: Session, parent_id: str, *, number: int | None = None, digest_prefix: str | None = None
    ) -> Value:
        """Version ``number``, the one whose digest starts with ``digest_prefix`` (it must be the
        only one), or the latest when neither is given; NotFound saying which is missing."""
        parent = self.parent_of(session, parent_id)
        query = select(self.row).where(self._column(self.parent_key) == parent_id)
        if number is not None:
            query = query.where(self._column("number") == number)
        elif digest_prefix is not None:
            query = query.where(self._column(self.digest_key).startswith(digest_prefix))
        rows = list(session.scalars(query.order_by(self._column("number").desc()).limit(2)))
        label = f"{self.noun} {parent.project}/{parent.name}"
        if not rows:
            if number is not None:
                raise NotFound(f"{label} has no version {number}")
            if digest_prefix is not None:
                raise NotFound(f"{label} has no version sha256:{digest_prefix}")
            raise NotFound(f"{label} has no versions")
        if digest_prefix is not None and len(rows) > 1:
            raise NotFound(f"sha256:{digest_prefix} matches several versions of {label}; give more digits")
        return self.value(session, rows[0], parent)

    def register(
        self,
        db: Database,
        *,
        project: str,
        name: str,
        digest: str,
        parent: NewParent,
        write: Callable[[Session, ParentRow, int], Value],
        found: Callable[[Session, VersionRow, ParentRow], Value] | None = None,
    ) -> tuple[Value, bool]:
        """The version of ``project/name`` with ``digest``, and whether it was created now.

        Creates the parent from ``parent`` on its first version. A version with ``digest`` already
        there becomes ``found(session, row, parent)`` (``value`` when None) and nothing is numbered;
        otherwise ``write(session, parent, number)`` writes version ``number`` (the next one) with
        its audit event, in the same transaction. Two registrations racing for the same number (or
        the same new parent): the loser's transaction fails on the unique constraint (StoreError)
        and is tried once more; it then finds the winner's version, or takes the next number.
        """
        for attempt in range(2):
            try:
                return self._register_once(db, project, name, digest, parent, write, found or self.value)
            except StoreError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _register_once(
        self,
        db: Database,
        project: str,
        name: str,
        digest: str,
        new: NewParent,
        write: Callable[[Session, ParentRow, int], Value],
        found: Callable[[Session, VersionRow, ParentRow], Value],
    ) -> tuple[Value, bool]:
        with db.session() as session:
            parent = self._named(session, project, name)
            if parent is None:
                parent = self.parent()
                parent.id, parent.project, parent.name = new_id(new.id_prefix), project, name
                parent.description, parent.created_by = new.description, new.created_by
                session.add(parent)
                session.flush()
            else:
                row = session.scalar(
                    select(self.row).where(
                        self._column(self.parent_key) == parent.id, self._column(self.digest_key) == digest
                    )
                )
                if row is not None:
                    return found(session, row, parent), False
            of_parent = self._column(self.parent_key) == parent.id
            number = (session.scalar(select(func.max(self._column("number"))).where(of_parent)) or 0) + 1
            return write(session, parent, number), True


class VersionReads(Generic[Value]):
    """A store's public reads of its versions, each in one session of ``self.db`` through the store's
    ``records``: every version of a parent, one by id, and one by number or digest prefix."""

    db: Database
    records: VersionedRecords[Any, Any, Value]

    def versions(self, parent_id: str) -> list[Value]:
        """Every version of the parent ``parent_id``, oldest first; NotFound for an unknown id."""
        with self.db.session() as session:
            return self.records.all(session, parent_id)

    def version(self, version_id: str) -> Value:
        """The version with id ``version_id``, or NotFound."""
        with self.db.session() as session:
            return self.records.by_id(session, version_id)

    def find_version(
        self, parent_id: str, *, number: int | None = None, digest_prefix: str | None = None
    ) -> Value:
        """By number, by digest prefix (it must be unique), or the latest when neither is given."""
        with self.db.session() as session:
            return self.records.find(session, parent_id, number=number, digest_prefix=digest_prefix)

"""Users, tokens, projects (members, queues, quotas) and site options.

Writes take an optional ``AuditEntry`` and chain it in the same transaction,
so an action and its audit record are written together or not at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gateway.domain import Member, Principal, Project, Queue, Quota, Token, User
from gateway.errors import NotFound
from gateway.store.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.models import (
    MembershipRow,
    ProjectRow,
    QueueRow,
    SiteOptionRow,
    TokenRow,
    UserRow,
    utcnow,
)


class AccessStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- users and tokens -------------------------------------------------------------

    def users(self) -> list[User]:
        with self.db.session() as session:
            return [_user(r) for r in session.scalars(select(UserRow).order_by(UserRow.name))]

    def user(self, name: str) -> User:
        with self.db.session() as session:
            row = session.get(UserRow, name)
            if row is None:
                raise NotFound(f"no user {name!r}")
            return _user(row)

    def put_user(self, user: User, audit: AuditEntry | None = None) -> None:
        with self.db.session() as session:
            row = session.get(UserRow, user.name) or UserRow(name=user.name)
            row.os_user, row.is_admin, row.disabled = user.os_user, user.is_admin, user.disabled
            session.add(row)
            _audit(session, audit)

    def delete_user(self, name: str, audit: AuditEntry | None = None) -> None:
        with self.db.session() as session:
            session.execute(delete(TokenRow).where(TokenRow.user_name == name))
            session.execute(delete(MembershipRow).where(MembershipRow.user_name == name))
            session.execute(delete(UserRow).where(UserRow.name == name))
            _audit(session, audit)

    def add_token(
        self,
        *,
        user: str,
        name: str,
        prefix: str,
        token_sha256: str,
        expires_at: datetime | None,
        audit: AuditEntry | None = None,
    ) -> Token:
        with self.db.session() as session:
            if session.get(UserRow, user) is None:
                raise NotFound(f"no user {user!r}")
            row = TokenRow(
                user_name=user,
                name=name,
                prefix=prefix,
                token_sha256=token_sha256,
                created_at=utcnow(),
                expires_at=expires_at,
            )
            session.add(row)
            session.flush()
            _audit(session, audit)
            return _token(row)

    def token_owner(self, token_sha256: str) -> tuple[Token, User, dict[str, str]] | None:
        """The token with this digest, its user and the user's roles by project; None when unknown.

        One read: this runs on every API request.
        """
        with self.db.session() as session:
            row = session.scalar(select(TokenRow).where(TokenRow.token_sha256 == token_sha256))
            if row is None:
                return None
            user = session.get(UserRow, row.user_name)
            return _token(row), _user(user), _roles(session, row.user_name)

    def touch_token(self, token_id: int) -> None:
        """Mark a token used now (after it was accepted)."""
        with self.db.session() as session:
            row = session.get(TokenRow, token_id)
            if row is not None:
                row.last_used_at = utcnow()

    def tokens(self, user: str | None = None) -> list[Token]:
        query = select(TokenRow).order_by(TokenRow.id)
        if user:
            query = query.where(TokenRow.user_name == user)
        with self.db.session() as session:
            return [_token(r) for r in session.scalars(query)]

    def revoke_token(self, token_id: int, audit: AuditEntry | None = None) -> Token:
        with self.db.session() as session:
            row = session.get(TokenRow, token_id)
            if row is None:
                raise NotFound(f"no token {token_id}")
            if row.revoked_at is None:
                row.revoked_at = utcnow()
                _audit(session, audit)
            return _token(row)

    # -- projects -------------------------------------------------------------------

    def projects(self) -> list[Project]:
        with self.db.session() as session:
            names = list(session.scalars(select(ProjectRow.name).order_by(ProjectRow.name)))
            return [_project(session, n) for n in names]

    def project(self, name: str) -> Project:
        with self.db.session() as session:
            return _project(session, name)

    def put_project(self, project: Project, audit: AuditEntry | None = None) -> None:
        """Create or replace a project with exactly these members and queues."""
        with self.db.session() as session:
            row = session.get(ProjectRow, project.name) or ProjectRow(name=project.name)
            row.description = project.description
            row.slurm_account = project.slurm_account
            row.gpu_cap = project.quota.gpus
            row.gpu_hours_per_month = project.quota.gpu_hours_per_month
            row.max_queued_jobs = project.quota.jobs_in_queue
            session.add(row)
            session.flush()
            session.execute(delete(MembershipRow).where(MembershipRow.project == project.name))
            session.execute(delete(QueueRow).where(QueueRow.project == project.name))
            for member in project.members:
                session.add(
                    MembershipRow(
                        project=project.name,
                        user_name=member.user,
                        role=member.role,
                        gpu_cap=member.quota.gpus,
                        gpu_hours_per_month=member.quota.gpu_hours_per_month,
                        max_queued_jobs=member.quota.jobs_in_queue,
                    )
                )
            for queue in project.queues:
                session.add(
                    QueueRow(
                        project=project.name,
                        name=queue.name,
                        partition=queue.partition,
                        qos=queue.qos,
                        gpu_types=list(queue.gpu_types),
                        max_walltime_min=queue.max_walltime_min,
                        retry=queue.retry,
                    )
                )
            _audit(session, audit)

    def delete_project(self, name: str, audit: AuditEntry | None = None) -> None:
        with self.db.session() as session:
            session.execute(delete(MembershipRow).where(MembershipRow.project == name))
            session.execute(delete(QueueRow).where(QueueRow.project == name))
            session.execute(delete(ProjectRow).where(ProjectRow.name == name))
            _audit(session, audit)

    def principal(self, user: str, *, source: str | None = None) -> Principal:
        with self.db.session() as session:
            row = session.get(UserRow, user)
            if row is None:
                raise NotFound(f"no user {user!r}")
            return Principal(
                user=row.name,
                is_admin=row.is_admin,
                roles=_roles(session, user),
                os_user=row.os_user,
                source=source,
            )

    # -- site options -----------------------------------------------------------------

    def option(self, key: str, default: Any = None) -> Any:
        with self.db.session() as session:
            row = session.get(SiteOptionRow, key)
            return default if row is None else row.value

    def set_option(self, key: str, value: Any, audit: AuditEntry | None = None) -> None:
        with self.db.session() as session:
            row = session.get(SiteOptionRow, key) or SiteOptionRow(key=key)
            row.value = value
            session.add(row)
            _audit(session, audit)


def _roles(session: Session, user: str) -> dict[str, str]:
    rows = session.execute(
        select(MembershipRow.project, MembershipRow.role).where(MembershipRow.user_name == user)
    )
    return {project: role for project, role in rows}


def _audit(session: Session, entry: AuditEntry | None) -> None:
    if entry is not None:
        session.flush()
        append(session, entry)


def _user(row: UserRow) -> User:
    return User(name=row.name, os_user=row.os_user, is_admin=bool(row.is_admin), disabled=bool(row.disabled))


def _token(row: TokenRow) -> Token:
    return Token(
        id=row.id,
        user=row.user_name,
        name=row.name,
        prefix=row.prefix,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )


def _project(session: Session, name: str) -> Project:
    row = session.get(ProjectRow, name)
    if row is None:
        raise NotFound(f"no project {name!r}")
    members = session.scalars(
        select(MembershipRow).where(MembershipRow.project == name).order_by(MembershipRow.user_name)
    )
    queues = session.scalars(select(QueueRow).where(QueueRow.project == name).order_by(QueueRow.name))
    return Project(
        name=row.name,
        description=row.description or "",
        slurm_account=row.slurm_account,
        quota=Quota(row.gpu_cap, row.gpu_hours_per_month, row.max_queued_jobs),
        members=[
            Member(m.user_name, m.role, Quota(m.gpu_cap, m.gpu_hours_per_month, m.max_queued_jobs))
            for m in members
        ],
        queues=[
            Queue(q.name, q.partition, q.qos, list(q.gpu_types or []), q.max_walltime_min, q.retry)
            for q in queues
        ],
    )

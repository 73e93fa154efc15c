"""Users, tokens, projects (members, queues, quotas) and site options.

Writes take an optional ``AuditEntry`` and chain it in the same transaction,
so an action and its audit record are written together or not at all.
The reads on every request (a token's owner, a project, a site option, a
principal) go through ``AccessCache``; every write of what they read sets a
new access generation in its transaction, so no process uses a stale value.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gateway.core.access.values import Principal, Token, User
from gateway.core.projects import Member, Project, Queue, Quota
from gateway.errors import NotFound
from gateway.store.access.cache import GENERATION_KEY, AccessCache, bump_generation
from gateway.store.audit.audit import AuditEntry, append
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
    """Users, tokens, projects and site options in the database; rows become domain values here."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.cache = AccessCache(db)
        self._token_digests: dict[int, str] = {}  # token id -> its digest, to forget it once touched

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose cached reads see the access data as of one moment (``AccessCache.snapshot``)."""
        return self.cache.snapshot()

    # -- users and tokens -------------------------------------------------------------

    def users(self) -> list[User]:
        """Every user, by name."""
        with self.db.session() as session:
            return [_user(r) for r in session.scalars(select(UserRow).order_by(UserRow.name))]

    def user(self, name: str) -> User:
        """The user ``name``, or NotFound (cached while the access generation holds)."""
        return self.cache.get(("user", name), lambda: self._load_user(name))

    def _load_user(self, name: str) -> User:
        with self.db.session() as session:
            row = session.get(UserRow, name)
            if row is None:
                raise NotFound(f"no user {name!r}")
            return _user(row)

    def put_user(self, user: User, audit: AuditEntry | None = None) -> None:
        """Create or update ``user`` (OS user, admin, disabled), with ``audit``."""
        with self.db.session() as session:
            row = session.get(UserRow, user.name) or UserRow(name=user.name)
            row.os_user, row.is_admin, row.disabled = user.os_user, user.is_admin, user.disabled
            session.add(row)
            _changed(session, audit)

    def delete_user(self, name: str, audit: AuditEntry | None = None) -> None:
        """Delete user ``name`` with their tokens and memberships, with ``audit``; no user is no error."""
        with self.db.session() as session:
            session.execute(delete(TokenRow).where(TokenRow.user_name == name))
            session.execute(delete(MembershipRow).where(MembershipRow.user_name == name))
            session.execute(delete(UserRow).where(UserRow.name == name))
            _changed(session, audit)

    def add_token(
        self,
        *,
        user: str,
        name: str,
        prefix: str,
        token_sha256: str,
        expires_at: datetime | None,
        scope: str = "api",
        audit: AuditEntry | None = None,
    ) -> Token:
        """Record a new token of ``user`` (its digest and prefix, never the secret), with ``audit``.

        Returns it; NotFound when there is no such user.
        """
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
                scope=scope,
            )
            session.add(row)
            session.flush()
            _audit(session, audit)
            return _token(row)

    def token_owner(self, token_sha256: str) -> tuple[Token, User, dict[str, str]] | None:
        """The token with this digest, its user and the user's roles by project; None when unknown.

        This runs on every API request: cached while the access generation holds (a revoke sets a
        new one), so one read of the generation instead of three.
        """
        return self.cache.get(("token", token_sha256), lambda: self._load_token_owner(token_sha256))

    def _load_token_owner(self, token_sha256: str) -> tuple[Token, User, dict[str, str]] | None:
        with self.db.session() as session:
            row = session.scalar(select(TokenRow).where(TokenRow.token_sha256 == token_sha256))
            if row is None:
                return None
            user = session.get_one(UserRow, row.user_name)
            self._token_digests[row.id] = token_sha256
            return _token(row), _user(user), _roles(session, row.user_name)

    def token_by_id(self, token_id: int) -> tuple[Token, User, dict[str, str]] | None:
        """The token with this id, its user and the user's roles by project; None when unknown.

        One read: a web session names its token by id, and this runs on every page.
        """
        with self.db.session() as session:
            row = session.get(TokenRow, token_id)
            if row is None:
                return None
            user = session.get_one(UserRow, row.user_name)
            return _token(row), _user(user), _roles(session, row.user_name)

    def touch_token(self, token_id: int) -> None:
        """Mark a token used now (after it was accepted)."""
        with self.db.session() as session:
            row = session.get(TokenRow, token_id)
            if row is not None:
                row.last_used_at = utcnow()
        digest = self._token_digests.pop(token_id, None)
        if digest is not None:  # its last use changed: the next request reads it afresh
            self.cache.forget(("token", digest))

    def tokens(self, user: str | None = None) -> list[Token]:
        """Every token (``user``'s only, when given), oldest first, revoked and expired ones too."""
        query = select(TokenRow).order_by(TokenRow.id)
        if user:
            query = query.where(TokenRow.user_name == user)
        with self.db.session() as session:
            return [_token(r) for r in session.scalars(query)]

    def revoke_token(self, token_id: int, audit: AuditEntry | None = None) -> Token:
        """Mark token ``token_id`` revoked now (and write ``audit``) unless it already is; the token.

        NotFound when there is no such token.
        """
        with self.db.session() as session:
            row = session.get(TokenRow, token_id)
            if row is None:
                raise NotFound(f"no token {token_id}")
            if row.revoked_at is None:
                row.revoked_at = utcnow()
                _changed(session, audit)
            return _token(row)

    # -- projects -------------------------------------------------------------------

    def projects(self) -> list[Project]:
        """Every project, by name, with its members and queues."""
        with self.db.session() as session:
            names = list(session.scalars(select(ProjectRow.name).order_by(ProjectRow.name)))
            return [_project(session, n) for n in names]

    def project(self, name: str) -> Project:
        """The project ``name`` with its members (by user) and queues (by name), or NotFound.

        Cached while the access generation holds (``gw admin apply`` sets a new one).
        """
        return self.cache.get(("project", name), lambda: self._load_project(name))

    def _load_project(self, name: str) -> Project:
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
                        whole_node_mem=queue.whole_node_mem,
                        cluster=queue.cluster,
                    )
                )
            _changed(session, audit)

    def delete_project(self, name: str, audit: AuditEntry | None = None) -> None:
        """Delete project ``name`` with its memberships and queues, with ``audit``; none is no error."""
        with self.db.session() as session:
            session.execute(delete(MembershipRow).where(MembershipRow.project == name))
            session.execute(delete(QueueRow).where(QueueRow.project == name))
            session.execute(delete(ProjectRow).where(ProjectRow.name == name))
            _changed(session, audit)

    def principal(self, user: str, *, source: str | None = None) -> Principal:
        """``user`` as a caller, with their roles by project; ``source`` says where the call came from.

        NotFound when there is no such user. Cached while the access generation holds.
        """
        found = self.cache.get(("principal", user), lambda: self._load_principal(user))
        return found if found.source == source else replace(found, source=source)

    def _load_principal(self, user: str, source: str | None = None) -> Principal:
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
        """The site option ``key`` (a JSON value), or ``default`` when it is not set.

        Cached (all options, one read) while the access generation holds.
        """
        return self.cache.get("options", self._load_options).get(key, default)

    def _load_options(self) -> dict[str, Any]:
        with self.db.session() as session:
            rows = session.scalars(select(SiteOptionRow).where(SiteOptionRow.key != GENERATION_KEY))
            return {row.key: row.value for row in rows}

    def set_option(self, key: str, value: Any, audit: AuditEntry | None = None) -> None:
        """Set the site option ``key`` to ``value`` (JSON-ready), with ``audit``."""
        with self.db.session() as session:
            row = session.get(SiteOptionRow, key) or SiteOptionRow(key=key)
            row.value = value
            session.add(row)
            _changed(session, audit)


def _roles(session: Session, user: str) -> dict[str, str]:
    rows = session.execute(
        select(MembershipRow.project, MembershipRow.role).where(MembershipRow.user_name == user)
    )
    return {project: role for project, role in rows}


def _changed(session: Session, entry: AuditEntry | None) -> None:
    """A write of what the cache holds: a new access generation, and ``entry`` audited."""
    bump_generation(session)
    _audit(session, entry)


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
        scope=row.scope,
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
            Queue(
                q.name,
                q.partition,
                q.qos,
                list(q.gpu_types or []),
                q.max_walltime_min,
                q.retry,
                bool(q.whole_node_mem),
                q.cluster,
            )
            for q in queues
        ],
    )

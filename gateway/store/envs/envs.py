"""Reading and writing environments, their versions and what jobs found at their start.

A version is written once, with its audit event; registering content the environment already has
returns that version and writes nothing. A python version's build outcome is written once per
build: the status moves from ``building``, and back only for another build (``restart_build``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gateway.core.envs.record import Environment, EnvVersion
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database, rows_matched
from gateway.store.envs.models import EnvironmentRow, EnvObservationRow, EnvVersionRow
from gateway.store.models import utcnow
from gateway.store.versioned import NewParent, VersionedRecords, VersionReads, new_id, version_audit


@dataclass(frozen=True)
class NewEnvVersion:
    kind: str
    digest: str
    content: dict[str, Any]
    status: str
    registered_by: str
    description: str = ""
    location: str | None = None
    packages: dict[str, str] | None = None
    packages_sha256: str | None = None
    parent_id: str | None = None
    parent_diff: dict[str, Any] | None = None


@dataclass(frozen=True)
class Observation:
    """What one job of a run found at its start, and its drift from the named version (None: none)."""

    run_id: str
    job_id: str
    version_id: str
    observed: dict[str, Any]
    drift: dict[str, Any] | None


ENV_VERSIONS: VersionedRecords[EnvironmentRow, EnvVersionRow, EnvVersion] = VersionedRecords(
    "environment", EnvironmentRow, EnvVersionRow, "environment_id", lambda _, row, env: to_version(row, env)
)


class EnvStore(VersionReads[EnvVersion]):
    records = ENV_VERSIONS  # what versions, version and find_version (VersionReads) read

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- writes -----------------------------------------------------------------------------

    def register(
        self, *, project: str, name: str, version: NewEnvVersion, audit: AuditEntry
    ) -> tuple[EnvVersion, bool]:
        """The version with ``version.digest`` of ``project/name``, and whether it was created now.

        Creates the environment on its first version; a race for the same number is tried once more.
        """

        def write(session: Session, env: EnvironmentRow, number: int) -> EnvVersion:
            row = EnvVersionRow(
                id=new_id("ev"),
                environment_id=env.id,
                number=number,
                kind=version.kind,
                digest=version.digest,
                content=version.content,
                status=version.status,
                location=version.location,
                packages=version.packages or {},
                packages_sha256=version.packages_sha256,
                description=version.description,
                registered_by=version.registered_by,
                registered_at=utcnow(),
                parent_id=version.parent_id,
                parent_diff=version.parent_diff,
                build_requested_at=utcnow() if version.status == "building" else None,
            )
            session.add(row)
            session.flush()
            append(session, _registered(audit, row, env))
            return to_version(row, env)

        first = NewParent("env", version.description, version.registered_by)
        return ENV_VERSIONS.register(
            self.db, project=project, name=name, digest=version.digest, parent=first, write=write
        )

    def set_build_run(self, version_id: str, run_id: str) -> None:
        """Name the run that builds a python version (written once, right after it was submitted)."""
        with self.db.session() as session:
            session.execute(
                update(EnvVersionRow)
                .where(EnvVersionRow.id == version_id, EnvVersionRow.build_run_id.is_(None))
                .values(build_run_id=run_id)
            )

    def finish_build(
        self,
        version_id: str,
        *,
        status: str,
        packages: dict[str, str] | None = None,
        packages_sha256: str | None = None,
        failure: str | None = None,
        parent_diff: dict[str, Any] | None = None,
        audit: AuditEntry,
    ) -> bool:
        """Move a building version to ``ready`` (with its installed set) or ``failed``; False when it
        was not building any more (another reader finished it first)."""
        with self.db.session() as session:
            values: dict[str, Any] = {"status": status, "failure": failure}
            if packages is not None:
                values.update(packages=packages, packages_sha256=packages_sha256)
            if parent_diff is not None:
                values["parent_diff"] = parent_diff
            done = session.execute(
                update(EnvVersionRow)
                .where(EnvVersionRow.id == version_id, EnvVersionRow.status == "building")
                .values(**values)
            )
            if not rows_matched(done):
                return False
            append(session, audit)
            return True

    def restart_build(self, version_id: str, *, attempts: int, location: str, audit: AuditEntry) -> bool:
        """Move a failed version whose build was tried ``attempts`` times back to ``building`` for one
        more build at ``location`` (a build never reuses a directory): the failure is kept in
        ``build_failures``, the run link cleared. False when another request restarted it first."""
        with self.db.session() as session:
            row = session.get(EnvVersionRow, version_id)
            if row is None or row.status != "failed" or (row.build_attempts or 1) != attempts:
                return False
            kept = [
                *(row.build_failures or []),
                {"attempt": attempts, "failure": row.failure, "build_run_id": row.build_run_id},
            ]
            done = session.execute(
                update(EnvVersionRow)
                .where(
                    EnvVersionRow.id == version_id,
                    EnvVersionRow.status == "failed",
                    EnvVersionRow.build_attempts == attempts,
                )
                .values(
                    status="building",
                    failure=None,
                    build_run_id=None,
                    location=location,
                    build_attempts=attempts + 1,
                    build_requested_at=utcnow(),
                    build_failures=kept,
                )
            )
            if not rows_matched(done):
                return False
            append(session, audit)
            return True

    def observe(self, observation: Observation) -> bool:
        """Record what a job found; False when that job's observation is on record already."""
        with self.db.session() as session:
            exists = session.scalar(
                select(EnvObservationRow.id).where(
                    EnvObservationRow.run_id == observation.run_id,
                    EnvObservationRow.job_id == observation.job_id,
                )
            )
            if exists is not None:
                return False
            session.add(
                EnvObservationRow(
                    run_id=observation.run_id,
                    job_id=observation.job_id,
                    version_id=observation.version_id,
                    observed=observation.observed,
                    drift=observation.drift,
                )
            )
            return True

    # -- reads ------------------------------------------------------------------------------

    def environment(self, project: str, name: str) -> Environment:
        """``project/name`` with its latest version, or NotFound."""
        with self.db.session() as session:
            return _environment(session, ENV_VERSIONS.named(session, project, name))

    def environments(self, projects: Sequence[str] | None) -> list[Environment]:
        """Environments of ``projects`` (None: all), by project and name."""
        with self.db.session() as session:
            query = select(EnvironmentRow).order_by(EnvironmentRow.project, EnvironmentRow.name)
            if projects is not None:
                query = query.where(EnvironmentRow.project.in_(projects))
            return [_environment(session, row) for row in session.scalars(query)]

    def building(self, limit: int = 200) -> list[EnvVersion]:
        """Versions whose build has not settled (``building``), oldest first, at most ``limit``."""
        with self.db.session() as session:
            rows = session.execute(
                select(EnvVersionRow, EnvironmentRow)
                .join(EnvironmentRow, EnvironmentRow.id == EnvVersionRow.environment_id)
                .where(EnvVersionRow.status == "building")
                .order_by(EnvVersionRow.registered_at)
                .limit(limit)
            )
            return [to_version(row, env) for row, env in rows]

    def observations(self, run_id: str) -> list[Observation]:
        """What each job of the run found at its start, in the order they were recorded."""
        with self.db.session() as session:
            rows = session.scalars(
                select(EnvObservationRow)
                .where(EnvObservationRow.run_id == run_id)
                .order_by(EnvObservationRow.id)
            )
            return [Observation(r.run_id, r.job_id, r.version_id, r.observed, r.drift) for r in rows]

    def runs_using(self, version_id: str, limit: int = 200) -> list[str]:
        """Ids of runs whose jobs were observed in the version (newest first)."""
        with self.db.session() as session:
            rows = session.scalars(
                select(EnvObservationRow.run_id)
                .where(EnvObservationRow.version_id == version_id)
                .order_by(EnvObservationRow.id.desc())
                .limit(limit)
            )
            return list(dict.fromkeys(rows))


def _registered(audit: AuditEntry, row: EnvVersionRow, env: EnvironmentRow) -> AuditEntry:
    """``audit`` aimed at the version just written, with what it holds."""
    after: dict[str, Any] = {
        "environment": f"{env.project}/{env.name}",
        "version": row.number,
        "kind": row.kind,
        "digest": row.digest,
    }
    if row.parent_id:
        after.update(parent_id=row.parent_id, parent_diff=row.parent_diff)
    return version_audit(audit, "environment_version", row.id, env.project, after)


def _environment(session: Session, row: EnvironmentRow) -> Environment:
    latest = session.scalar(
        select(EnvVersionRow)
        .where(EnvVersionRow.environment_id == row.id)
        .order_by(EnvVersionRow.number.desc())
        .limit(1)
    )
    return Environment(
        id=row.id,
        project=row.project,
        name=row.name,
        description=row.description,
        created_by=row.created_by,
        created_at=row.created_at,
        latest=to_version(latest, row) if latest else None,
        version_count=latest.number if latest else 0,
    )


def to_version(row: EnvVersionRow, env: EnvironmentRow) -> EnvVersion:
    """A version row of ``env`` as the core's ``EnvVersion``."""
    return EnvVersion(
        id=row.id,
        environment_id=row.environment_id,
        project=env.project,
        name=env.name,
        number=row.number,
        kind=row.kind,
        digest=row.digest,
        content=dict(row.content),
        status=row.status,
        registered_by=row.registered_by,
        registered_at=row.registered_at,
        description=row.description,
        location=row.location,
        packages=dict(row.packages or {}),
        packages_sha256=row.packages_sha256,
        build_run_id=row.build_run_id,
        failure=row.failure,
        parent_id=row.parent_id,
        parent_diff=row.parent_diff,
        build_attempts=row.build_attempts or 1,
        build_requested_at=row.build_requested_at,
        build_failures=list(row.build_failures or []),
    )

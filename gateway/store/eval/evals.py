"""Reading and writing eval suites, their immutable versions, and eval runs.

A suite version is written once, with the dataset versions it resolved to,
in one transaction (with its audit event); registering content whose hash
the suite already has returns that version and writes nothing. An eval run
links a gateway run to the suite version and the artifact it scores; its
status moves once, from pending to where it ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from gateway.core.eval.domain import EvalRun, EvalSuite, SuiteDataset, SuiteVersionRecord
from gateway.core.eval.suite import SuiteVersion
from gateway.errors import NotFound
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database, rows_matched
from gateway.store.eval.models import (
    EvalResultRow,
    EvalRunRow,
    EvalSuiteDatasetRow,
    EvalSuiteRow,
    EvalSuiteVersionRow,
)
from gateway.store.lineage.lineage import TERMINAL_STATES
from gateway.store.lineage.models import DatasetRow, DatasetVersionRow
from gateway.store.models import RunRow, utcnow
from gateway.store.versioned import NewParent, VersionedRecords, new_id, version_audit


@dataclass(frozen=True)
class ResolvedDataset:
    """A suite's dataset reference and the exact version it resolved to, as a registration writes it."""

    ref: str
    version_id: str
    digest: str


@dataclass(frozen=True)
class NewEvalRun:
    run_id: str
    project: str
    suite_version_id: str
    artifact_sha256: str
    artifact_path: str
    artifact_run_id: str | None
    submitted_by: str


class EvalStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- suite versions -----------------------------------------------------------------------

    def register_version(
        self,
        suite: SuiteVersion,
        *,
        content_hash: str,
        datasets: Sequence[ResolvedDataset],
        registered_by: str,
        audit: AuditEntry,
    ) -> tuple[SuiteVersionRecord, bool]:
        """The version of ``suite`` with ``content_hash``, and whether it was created now.

        Creates the suite on its first version. Two registrations racing for
        the same number: the loser's transaction fails on the unique number
        and is tried once more (it then finds the winner's version, or takes
        the next number).
        """

        def write(session: Session, row: EvalSuiteRow, number: int) -> SuiteVersionRecord:
            version = EvalSuiteVersionRow(
                id=new_id("esv"),
                suite_id=row.id,
                number=number,
                content_hash=content_hash,
                definition=suite.model_dump(mode="json"),
                prompt_sha256=suite.prompt_sha256,
                registered_by=registered_by,
                registered_at=utcnow(),
            )
            session.add(version)
            session.flush()
            for position, item in enumerate(datasets):
                session.add(
                    EvalSuiteDatasetRow(
                        suite_version_id=version.id,
                        position=position,
                        ref=item.ref,
                        dataset_version_id=item.version_id,
                        digest=item.digest,
                    )
                )
            session.flush()
            append(session, _registered(audit, version, row, datasets))
            return _version(session, version)

        first = NewParent("es", suite.description, registered_by)
        return SUITE_VERSIONS.register(
            self.db, project=suite.project, name=suite.name, digest=content_hash, parent=first, write=write
        )

    def suites(self, projects: Sequence[str] | None) -> list[EvalSuite]:
        """Suites of ``projects`` (None: all), by project and name, with their version count."""
        query = (
            select(EvalSuiteRow, func.count(EvalSuiteVersionRow.id), func.max(EvalSuiteVersionRow.number))
            .outerjoin(EvalSuiteVersionRow, EvalSuiteVersionRow.suite_id == EvalSuiteRow.id)
            .group_by(EvalSuiteRow.id)
            .order_by(EvalSuiteRow.project, EvalSuiteRow.name)
        )
        if projects is not None:
            query = query.where(EvalSuiteRow.project.in_(list(projects)))
        with self.db.session() as session:
            return [_suite(row, count, latest) for row, count, latest in session.execute(query).all()]

    def suite(self, project: str, name: str) -> EvalSuite:
        """A suite with its version count and latest number, or NotFound."""
        with self.db.session() as session:
            row = SUITE_VERSIONS.named(session, project, name)
            count, latest = session.execute(
                select(func.count(EvalSuiteVersionRow.id), func.max(EvalSuiteVersionRow.number)).where(
                    EvalSuiteVersionRow.suite_id == row.id
                )
            ).one()
            return _suite(row, count, latest)

    def version_by_hash(self, suite_id: str, content_hash: str) -> SuiteVersionRecord | None:
        """The suite's version with this content hash, or None."""
        with self.db.session() as session:
            row = session.scalar(
                select(EvalSuiteVersionRow).where(
                    EvalSuiteVersionRow.suite_id == suite_id, EvalSuiteVersionRow.content_hash == content_hash
                )
            )
            return _version(session, row) if row is not None else None

    def set_settings(
        self, suite_id: str, *, versions_by: str, count_self_reviews: bool, audit: AuditEntry
    ) -> EvalSuite:
        """Change a suite's settings, audited with before and after; returns the suite."""
        with self.db.session() as session:
            row = session.get(EvalSuiteRow, suite_id)
            if row is None:
                raise NotFound(f"no eval suite {suite_id!r}")
            before = {"versions_by": row.versions_by, "count_self_reviews": bool(row.count_self_reviews)}
            row.versions_by, row.count_self_reviews = versions_by, count_self_reviews
            session.flush()
            after = {"versions_by": versions_by, "count_self_reviews": count_self_reviews}
            append(session, replace(audit, target_id=row.id, before=before, after=after))
            project, name = row.project, row.name
        return self.suite(project, name)

    def versions(self, suite_id: str) -> list[SuiteVersionRecord]:
        """Every version of a suite, oldest first; NotFound for an unknown suite id."""
        with self.db.session() as session:
            return SUITE_VERSIONS.all(session, suite_id)

    def version(self, suite_id: str, number: int | None) -> SuiteVersionRecord:
        """Version ``number`` of the suite (None: the latest); NotFound when there is none."""
        with self.db.session() as session:
            return SUITE_VERSIONS.find(session, suite_id, number=number)

    def version_by_id(self, version_id: str) -> SuiteVersionRecord:
        """One suite version, or NotFound."""
        with self.db.session() as session:
            return SUITE_VERSIONS.by_id(session, version_id)

    # -- eval runs --------------------------------------------------------------------------------

    def create_eval_run(self, new: NewEvalRun, *, audit: AuditEntry) -> tuple[EvalRun, bool]:
        """Link run ``new.run_id`` as an eval run (with ``audit``); its existing link if it has one."""
        with self.db.session() as session:
            found = session.scalar(select(EvalRunRow).where(EvalRunRow.run_id == new.run_id))
            if found is not None:
                return _eval_run(session, found), False
            row = EvalRunRow(
                id=new_id("ev"),
                run_id=new.run_id,
                project=new.project,
                suite_version_id=new.suite_version_id,
                artifact_sha256=new.artifact_sha256,
                artifact_path=new.artifact_path,
                artifact_run_id=new.artifact_run_id,
                submitted_by=new.submitted_by,
                created_at=utcnow(),
                status="pending",
            )
            session.add(row)
            session.flush()
            append(
                session,
                AuditEntry(
                    actor=audit.actor,
                    action=audit.action,
                    target_type="eval_run",
                    target_id=row.id,
                    project=new.project,
                    source=audit.source,
                    after=(audit.after or {})
                    | {"run_id": new.run_id, "artifact_sha256": new.artifact_sha256},
                ),
            )
            return _eval_run(session, row), True

    def eval_run(self, eval_run_id: str) -> EvalRun:
        """One eval run, or NotFound."""
        with self.db.session() as session:
            row = session.get(EvalRunRow, eval_run_id)
            if row is None:
                raise NotFound(f"no eval run {eval_run_id!r}")
            return _eval_run(session, row)

    def eval_runs(
        self,
        projects: Sequence[str] | None,
        *,
        artifact_sha256: str | None = None,
        suite_version_id: str | None = None,
        limit: int = 200,
    ) -> list[EvalRun]:
        """Eval runs of ``projects`` (None: all), newest first."""
        query = select(EvalRunRow).order_by(EvalRunRow.created_at.desc(), EvalRunRow.id.desc()).limit(limit)
        if projects is not None:
            query = query.where(EvalRunRow.project.in_(list(projects)))
        if artifact_sha256 is not None:
            query = query.where(EvalRunRow.artifact_sha256 == artifact_sha256)
        if suite_version_id is not None:
            query = query.where(EvalRunRow.suite_version_id == suite_version_id)
        with self.db.session() as session:
            return [_eval_run(session, row) for row in session.scalars(query)]

    def pending(self, limit: int = 50) -> list[EvalRun]:
        """Eval runs not settled yet whose runs have ended, oldest first (the ingest's work list).

        Runs still live are left out here, so they never hold back the ones that ended after them.
        """
        query = (
            select(EvalRunRow)
            .join(RunRow, RunRow.id == EvalRunRow.run_id)
            .where(EvalRunRow.status == "pending", RunRow.state.in_(TERMINAL_STATES))
            .order_by(EvalRunRow.created_at)
        )
        with self.db.session() as session:
            return [_eval_run(session, row) for row in session.scalars(query.limit(limit))]

    def settle(self, eval_run_id: str, status: str, note: str | None, *, audit: AuditEntry) -> bool:
        """Move a pending eval run to ``status`` (failed, refused) with ``note``; False if not pending."""
        with self.db.session() as session:
            changed = rows_matched(
                session.execute(
                    update(EvalRunRow)
                    .where(EvalRunRow.id == eval_run_id, EvalRunRow.status == "pending")
                    .values(status=status, note=note, ended_at=utcnow())
                )
            )
            if changed:
                append(session, audit)
            return bool(changed)


def _registered(
    audit: AuditEntry, version: EvalSuiteVersionRow, suite: EvalSuiteRow, datasets: Sequence[ResolvedDataset]
) -> AuditEntry:
    """``audit`` aimed at the suite version just written, with what it holds."""
    after = {
        "suite": f"{suite.project}/{suite.name}",
        "version": version.number,
        "content_hash": version.content_hash,
        "datasets": [{"ref": d.ref, "digest": d.digest} for d in datasets],
    }
    return version_audit(audit, "eval_suite_version", version.id, suite.project, after)


def _suite(row: EvalSuiteRow, count: int, latest: int | None) -> EvalSuite:
    return EvalSuite(
        id=row.id,
        project=row.project,
        name=row.name,
        description=row.description,
        created_by=row.created_by,
        created_at=row.created_at,
        version_count=int(count or 0),
        latest_number=latest,
        versions_by=row.versions_by or "lead",
        count_self_reviews=bool(row.count_self_reviews),
    )


def _version(session: Session, row: EvalSuiteVersionRow) -> SuiteVersionRecord:
    datasets = session.execute(
        select(EvalSuiteDatasetRow, DatasetVersionRow.number, DatasetRow.project, DatasetRow.name)
        .join(DatasetVersionRow, DatasetVersionRow.id == EvalSuiteDatasetRow.dataset_version_id)
        .join(DatasetRow, DatasetRow.id == DatasetVersionRow.dataset_id)
        .where(EvalSuiteDatasetRow.suite_version_id == row.id)
        .order_by(EvalSuiteDatasetRow.position)
    ).all()
    return SuiteVersionRecord(
        id=row.id,
        suite_id=row.suite_id,
        number=row.number,
        content_hash=row.content_hash,
        suite=SuiteVersion.model_validate(row.definition),
        datasets=tuple(
            SuiteDataset(d.position, d.ref, d.dataset_version_id, project, name, number, d.digest)
            for d, number, project, name in datasets
        ),
        registered_by=row.registered_by,
        registered_at=row.registered_at,
    )


SUITE_VERSIONS: VersionedRecords[EvalSuiteRow, EvalSuiteVersionRow, SuiteVersionRecord] = VersionedRecords(
    "eval suite",
    EvalSuiteRow,
    EvalSuiteVersionRow,
    "suite_id",
    lambda session, row, _: _version(session, row),
    digest_key="content_hash",
)


def _eval_run(session: Session, row: EvalRunRow) -> EvalRun:
    suite_ref = session.execute(
        select(EvalSuiteRow.project, EvalSuiteRow.name, EvalSuiteVersionRow.number)
        .join(EvalSuiteVersionRow, EvalSuiteVersionRow.suite_id == EvalSuiteRow.id)
        .where(EvalSuiteVersionRow.id == row.suite_version_id)
    ).one()
    result_id = session.scalar(select(EvalResultRow.id).where(EvalResultRow.eval_run_id == row.id))
    return EvalRun(
        id=row.id,
        run_id=row.run_id,
        project=row.project,
        suite_version_id=row.suite_version_id,
        suite_ref=f"{suite_ref[0]}/{suite_ref[1]}@{suite_ref[2]}",
        artifact_sha256=row.artifact_sha256,
        artifact_path=row.artifact_path,
        artifact_run_id=row.artifact_run_id,
        submitted_by=row.submitted_by,
        created_at=row.created_at,
        status=row.status,  # type: ignore[arg-type]  # a str column; services write only the Literal's words
        note=row.note,
        result_id=result_id,
        ended_at=row.ended_at,
    )

"""Retention in the database: holds, what a release needs, deletions (intent, then done), sizes.

A deletion is written as an ``intent`` (with the size and digest measured
before anything is removed) and committed before the run host deletes; it
becomes ``done`` together with its audit event, in one transaction, so a
crash leaves either an intent the next pass finishes or reports, or a done
deletion with its event: never a deletion without a record.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import delete, func, select

from gateway.core.audit.entry import AuditEntry
from gateway.core.retention.plan import WHOLE_DIR
from gateway.core.retention.values import DeletionRecord, Departure, Hold, RunStorage, StorageSample
from gateway.core.runs.values import Run
from gateway.core.slurm.states import TERMINAL
from gateway.errors import NotFound
from gateway.store.audit.audit import append
from gateway.store.db import Database
from gateway.store.eval.models import EvalRunRow
from gateway.store.lineage.models import ArtifactRow, DatasetVersionRow, RunInputRow
from gateway.store.models import RunRow, utcnow
from gateway.store.releases.models import ModelRow, ReleaseRow
from gateway.store.retention.models import DeletionRow, DepartureRow, HoldRow, RunStorageRow, StorageSampleRow
from gateway.store.rows import load_run

ENDED = [s.value for s in TERMINAL]


class RetentionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- holds ---------------------------------------------------------------------------------

    def add_hold(
        self, target_type: str, target_id: str, project: str, reason: str, by: str, audit: AuditEntry
    ) -> Hold:
        """A new hold, with its audit event."""
        with self.db.session() as session:
            row = HoldRow(
                id=f"hold-{uuid.uuid4().hex[:12]}",
                target_type=target_type,
                target_id=target_id,
                project=project,
                reason=reason,
                created_by=by,
                created_at=utcnow(),
            )
            session.add(row)
            session.flush()
            append(session, _with_target(audit, row.id))
            return _hold(row)

    def hold(self, hold_id: str) -> Hold:
        """One hold; NotFound when there is none."""
        with self.db.session() as session:
            row = session.get(HoldRow, hold_id)
            if row is None:
                raise NotFound(f"no hold {hold_id!r}")
            return _hold(row)

    def lift_hold(self, hold_id: str, by: str, reason: str, audit: AuditEntry) -> Hold:
        """Lift an active hold (with its audit event); NotFound when there is none."""
        with self.db.session() as session:
            row = session.get(HoldRow, hold_id, with_for_update=True)
            if row is None:
                raise NotFound(f"no hold {hold_id!r}")
            row.lifted_at, row.lifted_by, row.lift_reason = utcnow(), by, reason
            append(session, audit)
            return _hold(row)

    def holds(self, projects: list[str] | None, *, active: bool = True) -> list[Hold]:
        """Holds of ``projects`` (None: all), newest first; only active ones unless told."""
        with self.db.session() as session:
            query = select(HoldRow).order_by(HoldRow.created_at.desc())
            if projects is not None:
                query = query.where(HoldRow.project.in_(projects))
            if active:
                query = query.where(HoldRow.lifted_at.is_(None))
            return [_hold(r) for r in session.scalars(query)]

    def model_project(self, project: str, name: str) -> str | None:
        """The id of model ``project/name``; None when there is none."""
        with self.db.session() as session:
            return session.scalar(
                select(ModelRow.id).where(ModelRow.project == project, ModelRow.name == name)
            )

    # -- what a sweep looks at ---------------------------------------------------------------------

    def ended_runs(self, projects: list[str] | None) -> list[Run]:
        """The ended runs of ``projects`` (None: all) whose directory is not deleted yet, oldest first."""
        with self.db.session() as session:
            gone = select(DeletionRow.run_id).where(
                DeletionRow.rel_path == WHOLE_DIR, DeletionRow.state == "done"
            )
            query = select(RunRow.id).where(RunRow.state.in_(ENDED), RunRow.id.not_in(gone))
            if projects is not None:
                query = query.where(RunRow.project.in_(projects))
            ids = list(session.scalars(query.order_by(RunRow.created_at)))
            return [load_run(session, run_id) for run_id in ids]

    def runs_of(self, projects: list[str] | None) -> list[tuple[str, str, str, str, str | None]]:
        """(id, project, submitter, run_dir, os_user) of every run of ``projects`` whose directory is kept."""
        with self.db.session() as session:
            gone = select(DeletionRow.run_id).where(
                DeletionRow.rel_path == WHOLE_DIR, DeletionRow.state == "done"
            )
            query = select(RunRow.id, RunRow.project, RunRow.submitter, RunRow.run_dir, RunRow.os_user).where(
                RunRow.id.not_in(gone)
            )
            if projects is not None:
                query = query.where(RunRow.project.in_(projects))
            return [tuple(r) for r in session.execute(query)]  # type: ignore[misc]  # five columns

    def unreleased_outputs(self, run_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
        """Each run's harvested outputs (path, sha256) whose content no release points at."""
        found: dict[str, list[tuple[str, str]]] = {}
        with self.db.session() as session:
            released = select(ReleaseRow.artifact_sha256)
            for chunk in _chunks(run_ids):
                rows = session.execute(
                    select(ArtifactRow.run_id, ArtifactRow.path, ArtifactRow.sha256)
                    .where(ArtifactRow.run_id.in_(chunk), ArtifactRow.sha256.not_in(released))
                    .order_by(ArtifactRow.id)
                )
                for run_id, path, sha in rows:
                    found.setdefault(run_id, []).append((path, sha))
        return found

    def needed_by_releases(self) -> dict[str, str]:
        """run id -> why a release needs it: the run a release points at, an eval run of a released
        artifact (the evidence its gates and promotions refer to), a run that made a dataset version
        a release's run read."""
        needed: dict[str, str] = {}
        with self.db.session() as session:
            releases = session.execute(
                select(
                    ReleaseRow.id,
                    ReleaseRow.run_id,
                    ReleaseRow.artifact_sha256,
                    ModelRow.project,
                    ModelRow.name,
                    ReleaseRow.version,
                ).join(ModelRow, ModelRow.id == ReleaseRow.model_id)
            ).all()
            for release_id, run_id, _sha, project, name, version in releases:
                needed.setdefault(
                    run_id, f"release {project}/{name} v{version} ({release_id}) was made from it"
                )
            shas = {
                sha: f"{project}/{name} v{version}" for _id, _run, sha, project, name, version in releases
            }
            if shas:
                for eval_run, sha in session.execute(
                    select(EvalRunRow.run_id, EvalRunRow.artifact_sha256).where(
                        EvalRunRow.artifact_sha256.in_(list(shas)), EvalRunRow.run_id.is_not(None)
                    )
                ):
                    if eval_run is not None:
                        needed.setdefault(
                            eval_run, f"it evaluated the artifact of release {shas[sha]} (evidence)"
                        )
            release_runs = [r[1] for r in releases]
            if release_runs:
                for maker, reader in session.execute(
                    select(DatasetVersionRow.made_by_run_id, RunInputRow.run_id)
                    .join(RunInputRow, RunInputRow.version_id == DatasetVersionRow.id)
                    .where(
                        RunInputRow.run_id.in_(release_runs), DatasetVersionRow.made_by_run_id.is_not(None)
                    )
                ):
                    if maker is not None:
                        needed.setdefault(maker, f"it made a dataset version that release run {reader} read")
        return needed

    def held_runs(self, holds: list[Hold]) -> dict[str, str]:
        """run id -> the words of the hold that keeps it (run holds; model holds: the model's release
        runs and the eval runs of their artifacts). Project holds are matched by the caller."""
        held: dict[str, str] = {}
        with self.db.session() as session:
            for hold in holds:
                if hold.target_type == "run":
                    held.setdefault(hold.target_id, hold.words())
                elif hold.target_type == "model":
                    project, _, name = hold.target_id.partition("/")
                    rows = session.execute(
                        select(ReleaseRow.run_id, ReleaseRow.artifact_sha256)
                        .join(ModelRow, ModelRow.id == ReleaseRow.model_id)
                        .where(ModelRow.project == project, ModelRow.name == name)
                    ).all()
                    for run_id, _sha in rows:
                        held.setdefault(run_id, hold.words())
                    shas = [sha for _run, sha in rows]
                    if shas:
                        for (eval_run,) in session.execute(
                            select(EvalRunRow.run_id).where(
                                EvalRunRow.artifact_sha256.in_(shas), EvalRunRow.run_id.is_not(None)
                            )
                        ):
                            if eval_run is not None:
                                held.setdefault(eval_run, hold.words())
        return held

    # -- deletions ---------------------------------------------------------------------------------

    def record_intent(self, values: dict[str, object]) -> DeletionRecord:
        """Write a deletion's intent (committed before anything is deleted)."""
        with self.db.session() as session:
            row = DeletionRow(**values, state="intent")
            session.add(row)
            session.flush()
            return _deletion(row)

    def pending(self, projects: list[str] | None = None) -> list[DeletionRecord]:
        """Intents no pass finished (a sweep that died), oldest first."""
        with self.db.session() as session:
            query = select(DeletionRow).where(DeletionRow.state == "intent").order_by(DeletionRow.id)
            if projects is not None:
                query = query.where(DeletionRow.project.in_(projects))
            return [_deletion(r) for r in session.scalars(query)]

    def settle(self, deletion_id: int, state: str, note: str | None, audit: AuditEntry, at: datetime) -> bool:
        """Mark an intent ``done`` or ``failed`` with its audit event, in one transaction; False when
        another pass settled it first."""
        with self.db.session() as session:
            row = session.get(DeletionRow, deletion_id, with_for_update=True)
            if row is None or row.state != "intent":
                return False
            row.state, row.note, row.done_at = state, note, at
            append(session, audit)
            return True

    def deletions(
        self, run_ids: Iterable[str] | None = None, *, states: tuple[str, ...] = ("done",)
    ) -> list[DeletionRecord]:
        """Deletions of ``run_ids`` (None: all) in ``states``, oldest first."""
        with self.db.session() as session:
            query = select(DeletionRow).where(DeletionRow.state.in_(states)).order_by(DeletionRow.id)
            if run_ids is not None:
                query = query.where(DeletionRow.run_id.in_(list(run_ids)))
            return [_deletion(r) for r in session.scalars(query)]

    # -- sizes -------------------------------------------------------------------------------------

    def put_storage(self, rows: list[RunStorage], samples: list[StorageSample], gone: list[str]) -> None:
        """Cache measured sizes (replacing older ones), drop the rows of deleted run directories, and
        append one sample per project."""
        with self.db.session() as session:
            if gone:
                session.execute(delete(RunStorageRow).where(RunStorageRow.run_id.in_(gone)))
            for item in rows:
                session.merge(RunStorageRow(**item.__dict__))
            for sample in samples:
                session.add(StorageSampleRow(**sample.__dict__))

    def storage(self, projects: list[str] | None) -> list[RunStorage]:
        """The cached size of each kept run directory of ``projects`` (None: all), largest first."""
        with self.db.session() as session:
            query = select(RunStorageRow).order_by(RunStorageRow.size_bytes.desc(), RunStorageRow.run_id)
            if projects is not None:
                query = query.where(RunStorageRow.project.in_(projects))
            return [_storage(r) for r in session.scalars(query)]

    def project_totals(self, project: str) -> tuple[int, int] | None:
        """A project's cached (bytes, freeable bytes), in one query; None: never measured."""
        with self.db.session() as session:
            total, freeable, count = session.execute(
                select(
                    func.sum(RunStorageRow.size_bytes), func.sum(RunStorageRow.freeable_bytes), func.count()
                ).where(RunStorageRow.project == project)
            ).one()
            return (int(total or 0), int(freeable or 0)) if count else None

    def samples(self, projects: list[str] | None, since: datetime | None = None) -> list[StorageSample]:
        """The projects' totals over time, oldest first."""
        with self.db.session() as session:
            query = select(StorageSampleRow).order_by(StorageSampleRow.at, StorageSampleRow.id)
            if projects is not None:
                query = query.where(StorageSampleRow.project.in_(projects))
            if since is not None:
                query = query.where(StorageSampleRow.at >= since)
            return [StorageSample(r.project, r.at, r.size_bytes, r.runs) for r in session.scalars(query)]

    # -- departures --------------------------------------------------------------------------------

    def departures(self) -> list[Departure]:
        """Every recorded departure, oldest first."""
        with self.db.session() as session:
            return [
                Departure(r.project, r.user_name, r.left_at, r.action, r.steward)
                for r in session.scalars(select(DepartureRow).order_by(DepartureRow.left_at))
            ]

    def put_departure(self, departure: Departure, audit: AuditEntry) -> None:
        """Record that a user left a project and what became of their runs' files (audited)."""
        with self.db.session() as session:
            session.merge(
                DepartureRow(
                    project=departure.project,
                    user_name=departure.user,
                    left_at=departure.left_at,
                    action=departure.action,
                    steward=departure.steward,
                )
            )
            append(session, audit)

    def drop_departure(self, project: str, user: str, audit: AuditEntry) -> None:
        """A user back in a project: their runs' files are theirs again (audited)."""
        with self.db.session() as session:
            session.execute(
                delete(DepartureRow).where(DepartureRow.project == project, DepartureRow.user_name == user)
            )
            append(session, audit)


def _chunks(items: list[str], size: int = 500) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _with_target(entry: AuditEntry, target_id: str) -> AuditEntry:
    from dataclasses import replace

    return replace(entry, target_id=target_id)


def _hold(row: HoldRow) -> Hold:
    return Hold(
        row.id,
        row.target_type,
        row.target_id,
        row.project,
        row.reason,
        row.created_by,
        row.created_at,
        row.lifted_at,
        row.lifted_by,
        row.lift_reason,
    )


def _deletion(row: DeletionRow) -> DeletionRecord:
    return DeletionRecord(
        id=row.id,
        run_id=row.run_id,
        project=row.project,
        rule=row.rule,
        rel_path=row.rel_path,
        kind=row.kind,
        run_dir=row.run_dir,
        os_user=row.os_user,
        size_bytes=row.size_bytes,
        files=row.files,
        sha256=row.sha256,
        state=row.state,
        sweep_id=row.sweep_id,
        planned_at=row.planned_at,
        done_at=row.done_at,
        note=row.note,
    )


def _storage(row: RunStorageRow) -> RunStorage:
    return RunStorage(
        row.run_id,
        row.project,
        row.submitter,
        row.run_dir,
        row.size_bytes,
        row.files,
        row.freeable_bytes,
        row.measured_at,
        row.error,
    )

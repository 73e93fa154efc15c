"""Reading and writing datasets, their versions (with manifests) and shares.

A version is written once, with its manifest, in one transaction (and its
audit event); registering content whose digest the dataset already has
returns that version and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from gateway.core.lineage.manifest import FileEntry
from gateway.core.lineage.values import Dataset, DatasetVersion
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.lineage.models import DatasetFileRow, DatasetRow, DatasetShareRow, DatasetVersionRow
from gateway.store.models import utcnow
from gateway.store.versioned import NewParent, VersionedRecords, VersionReads, new_id, version_audit

INSERT_FILE = insert(DatasetFileRow.__table__)
FILE_BATCH = 5000


@dataclass(frozen=True)
class NewVersion:
    """What a registration says of a version besides its content (the manifest and its digest)."""

    kind: str  # directory | file
    path: str | None
    source_uri: str
    description: str
    license: str
    registered_by: str
    parent_id: str | None = None
    made_by_run_id: str | None = None
    made_by_command: str | None = None


DATASET_VERSIONS: VersionedRecords[DatasetRow, DatasetVersionRow, DatasetVersion] = VersionedRecords(
    "dataset", DatasetRow, DatasetVersionRow, "dataset_id", lambda _, row, dataset: to_version(row, dataset)
)


class DatasetStore(VersionReads[DatasetVersion]):
    records = DATASET_VERSIONS  # what versions, version and find_version (VersionReads) read

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- writes -----------------------------------------------------------------------------

    def register(
        self,
        *,
        project: str,
        name: str,
        entries: Sequence[FileEntry],
        digest: str,
        version: NewVersion,
        audit: AuditEntry,
    ) -> tuple[DatasetVersion, bool]:
        """The version with ``digest`` of dataset ``project/name``, and whether it was created now.

        Creates the dataset on its first version. Two registrations racing
        for the same number: the loser's transaction fails on the unique
        number and is tried once more. Content the dataset has, now read from
        another path, moves its version there (audited).
        """

        def write(session: Session, dataset: DatasetRow, number: int) -> DatasetVersion:
            row = DatasetVersionRow(
                id=new_id("dv"),
                dataset_id=dataset.id,
                number=number,
                digest=digest,
                file_count=len(entries),
                total_bytes=sum(e.size for e in entries),
                registered_at=utcnow(),
                **asdict(version),
            )
            session.add(row)
            session.flush()
            _insert_files(session, row.id, entries)
            append(session, _with_target(audit, row, dataset))
            return to_version(row, dataset)

        def found(session: Session, row: DatasetVersionRow, dataset: DatasetRow) -> DatasetVersion:
            if version.path and version.path != row.path:
                _relocate(session, row, version, audit)
            return to_version(row, dataset)

        first = NewParent("ds", version.description, version.registered_by)
        return DATASET_VERSIONS.register(
            self.db, project=project, name=name, digest=digest, parent=first, write=write, found=found
        )

    def share(self, dataset_id: str, project: str, *, by: str, audit: AuditEntry) -> None:
        """Let ``project`` read the dataset (and write ``audit``); sharing twice changes nothing."""
        with self.db.session() as session:
            if session.get(DatasetShareRow, (dataset_id, project)) is None:
                session.add(DatasetShareRow(dataset_id=dataset_id, project=project, shared_by=by))
                session.flush()
                append(session, audit)

    def unshare(self, dataset_id: str, project: str, *, audit: AuditEntry) -> None:
        """Stop ``project`` reading the dataset (and write ``audit``); not shared changes nothing."""
        with self.db.session() as session:
            row = session.get(DatasetShareRow, (dataset_id, project))
            if row is not None:
                session.delete(row)
                session.flush()
                append(session, audit)

    # -- reads ------------------------------------------------------------------------------

    def dataset(self, project: str, name: str) -> Dataset:
        """The dataset ``project/name`` with its shares and latest version, or NotFound."""
        with self.db.session() as session:
            return _dataset(session, DATASET_VERSIONS.named(session, project, name))

    def datasets(self, projects: Sequence[str] | None) -> list[Dataset]:
        """Datasets owned by, or shared with, ``projects`` (None: all), by project and name."""
        with self.db.session() as session:
            query = select(DatasetRow).order_by(DatasetRow.project, DatasetRow.name)
            if projects is not None:
                shared = select(DatasetShareRow.dataset_id).where(DatasetShareRow.project.in_(projects))
                query = query.where(DatasetRow.project.in_(projects) | DatasetRow.id.in_(shared))
            return [_dataset(session, row) for row in session.scalars(query)]

    def files(self, version_id: str) -> list[FileEntry]:
        """The version's manifest, in the order it was registered (by path); empty for an unknown id."""
        with self.db.session() as session:
            rows = session.execute(
                select(DatasetFileRow.path, DatasetFileRow.size, DatasetFileRow.sha256)
                .where(DatasetFileRow.version_id == version_id)
                .order_by(DatasetFileRow.id)
            )
            return [FileEntry(path, size, sha) for path, size, sha in rows]

    def versions_with_file(self, sha256: str, limit: int = 100) -> list[tuple[DatasetVersion, str]]:
        """Dataset versions holding a file with this content, and its path in each."""
        with self.db.session() as session:
            rows = session.execute(
                select(DatasetVersionRow, DatasetFileRow.path)
                .join(DatasetFileRow, DatasetFileRow.version_id == DatasetVersionRow.id)
                .where(DatasetFileRow.sha256 == sha256)
                .limit(limit)
            ).all()
            return [(to_version(v, session.get_one(DatasetRow, v.dataset_id)), path) for v, path in rows]

    def children(self, version_id: str) -> list[DatasetVersion]:
        """Versions that name this one as their parent."""
        with self.db.session() as session:
            rows = session.scalars(select(DatasetVersionRow).where(DatasetVersionRow.parent_id == version_id))
            return [to_version(r, session.get_one(DatasetRow, r.dataset_id)) for r in rows]


def _insert_files(session: Session, version_id: str, entries: Sequence[FileEntry]) -> None:
    """The version's manifest, as plain inserts of ``FILE_BATCH`` rows each."""
    connection = session.connection()
    for start in range(0, len(entries), FILE_BATCH):
        connection.execute(
            INSERT_FILE,
            [
                {"version_id": version_id, "path": e.path, "size": e.size, "sha256": e.sha256}
                for e in entries[start : start + FILE_BATCH]
            ],
        )


def _relocate(session: Session, found: DatasetVersionRow, version: NewVersion, audit: AuditEntry) -> None:
    """The same content, now read from another place: the version moves there (audited); runs keep
    the path they read in run_inputs."""
    before = {"path": found.path, "source_uri": found.source_uri}
    found.path, found.source_uri = version.path, version.source_uri
    session.flush()
    append(
        session,
        AuditEntry(
            actor=audit.actor,
            action="dataset.relocate",
            target_type="dataset_version",
            target_id=found.id,
            project=audit.project,
            source=audit.source,
            before=before,
            after={"path": found.path, "source_uri": found.source_uri},
        ),
    )


def _with_target(audit: AuditEntry, row: DatasetVersionRow, dataset: DatasetRow) -> AuditEntry:
    after = {
        "dataset": f"{dataset.project}/{dataset.name}",
        "version": row.number,
        "digest": row.digest,
        "files": row.file_count,
        "bytes": row.total_bytes,
        "source_uri": row.source_uri,
        **({"parent_id": row.parent_id} if row.parent_id else {}),
        **({"made_by_run_id": row.made_by_run_id} if row.made_by_run_id else {}),
    }
    return version_audit(audit, "dataset_version", row.id, dataset.project, after)


def _dataset(session: Session, row: DatasetRow) -> Dataset:
    shares = session.scalars(
        select(DatasetShareRow.project)
        .where(DatasetShareRow.dataset_id == row.id)
        .order_by(DatasetShareRow.project)
    )
    latest = session.scalar(
        select(DatasetVersionRow)
        .where(DatasetVersionRow.dataset_id == row.id)
        .order_by(DatasetVersionRow.number.desc())
        .limit(1)
    )
    return Dataset(
        id=row.id,
        project=row.project,
        name=row.name,
        description=row.description,
        created_by=row.created_by,
        created_at=row.created_at,
        shared_with=list(shares),
        latest=to_version(latest, row) if latest else None,
        version_count=latest.number if latest else 0,
    )


def to_version(row: DatasetVersionRow, dataset: DatasetRow) -> DatasetVersion:
    """A version row of ``dataset`` as the domain's ``DatasetVersion``."""
    return DatasetVersion(
        id=row.id,
        dataset_id=row.dataset_id,
        project=dataset.project,
        name=dataset.name,
        number=row.number,
        digest=row.digest,
        kind=row.kind,
        path=row.path,
        source_uri=row.source_uri,
        file_count=row.file_count,
        total_bytes=row.total_bytes,
        description=row.description,
        license=row.license,
        registered_by=row.registered_by,
        registered_at=row.registered_at,
        parent_id=row.parent_id,
        made_by_run_id=row.made_by_run_id,
        made_by_command=row.made_by_command,
    )

"""The accounting ledger: sacct records with their links and prices, and the rate table versions.

``save`` is the idempotent write of an ingest: a record is found by its
identity (cluster, JobIDRaw, Submit), inserted when new, updated in place
when anything about it changed (state, end, elapsed, steps, link, price),
and left alone (``updated_at`` included) when nothing did. Rows become
``gateway.core.accounting.records`` values before they leave.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, or_, select, update
from sqlalchemy.orm import Session

from gateway.core.accounting.cost import RateTable, RateVersion, table_sha256, table_to_json
from gateway.core.accounting.records import (
    GatewayAttempt,
    LedgerRecord,
    Price,
    RecordKey,
)
from gateway.store.accounting.models import AccountingRecordRow, AccountingStepRow, RateVersionRow
from gateway.store.accounting.rows import (
    Entry,
    columns,
    price_columns,
    step_columns,
    to_ledger,
    to_rate_version,
    to_step,
)
from gateway.store.audit.audit import AuditEntry, append
from gateway.store.db import Database
from gateway.store.models import AttemptRow, ProjectRow, RunRow, utcnow

CHUNK = 2000  # ids per IN (...) list


@dataclass(frozen=True)
class SaveCounts:
    new: int
    updated: int
    linked: int  # records that gained a link to a gateway attempt


@dataclass(frozen=True)
class RecordFilter:
    """Which records to list: any field left None does not narrow."""

    run_id: str | None = None
    project: str | None = None
    user: str | None = None
    account: str | None = None
    started_from: datetime | None = None  # start_time >= (UTC)
    started_before: datetime | None = None  # start_time <
    job_ids: Sequence[str] | None = None  # job_id_raw in


class AccountingStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- records ----------------------------------------------------------------------------------

    def save(self, entries: Sequence[Entry], *, now: datetime | None = None) -> SaveCounts:
        """Insert new records, update changed ones in place, leave the rest; one transaction.

        Entries with the same identity: the last one wins. Returns the counts.
        """
        now = now or utcnow()
        latest: dict[RecordKey, Entry] = {e.record.key: e for e in entries}
        new = updated = linked = 0
        with self.db.session() as session:
            for chunk in _chunks(list(latest.values()), CHUNK):
                existing = _existing(session, chunk)
                steps_now = _steps_of(session, [row["id"] for row in existing.values()])
                fresh, changes = [], []
                for entry in chunk:
                    values = columns(entry)
                    row = existing.get(entry.record.key)
                    if row is None:
                        fresh.append(entry)
                        linked += entry.link.attempt_id is not None
                        continue
                    steps = sorted((step_columns(s) for s in entry.record.steps), key=lambda s: s["step"])
                    differs = any(row[k] != v for k, v in values.items())
                    if differs or steps != steps_now.get(row["id"], []):
                        changes.append((row["id"], values, steps))
                        linked += row["attempt_id"] is None and entry.link.attempt_id is not None
                new += len(fresh)
                updated += len(changes)
                _insert(session, fresh, now)
                _update(session, changes, now)
        return SaveCounts(new, updated, linked)

    def records(
        self, where: RecordFilter = RecordFilter(), *, limit: int | None = None
    ) -> list[LedgerRecord]:
        """Records matching ``where``, by start time then id (steps included)."""
        query = select(AccountingRecordRow)
        for column, value in (
            (AccountingRecordRow.run_id, where.run_id),
            (AccountingRecordRow.project, where.project),
            (AccountingRecordRow.user_name, where.user),
            (AccountingRecordRow.account, where.account),
        ):
            if value is not None:
                query = query.where(column == value)
        if where.started_from is not None:
            query = query.where(AccountingRecordRow.start_time >= where.started_from)
        if where.started_before is not None:
            query = query.where(AccountingRecordRow.start_time < where.started_before)
        if where.job_ids is not None:
            query = query.where(AccountingRecordRow.job_id_raw.in_(list(where.job_ids)))
        query = query.order_by(AccountingRecordRow.submit_time, AccountingRecordRow.id)
        if limit is not None:
            query = query.limit(limit)
        with self.db.session() as session:
            rows = list(session.scalars(query))
            steps = _step_rows(session, [r.id for r in rows])
            return [to_ledger(r, steps.get(r.id, [])) for r in rows]

    def count(self) -> int:
        """How many records the ledger holds."""
        with self.db.session() as session:
            return session.scalar(select(func.count()).select_from(AccountingRecordRow)) or 0

    def oldest_live_submit(self, cluster: str | None = None) -> datetime | None:
        """The earliest submit time among records not yet ended (where the next ingest must look back
        to), of ``cluster`` (sacct's Cluster) or of every cluster."""
        query = select(func.min(AccountingRecordRow.submit_time)).where(AccountingRecordRow.ended.is_(False))
        if cluster is not None:
            query = query.where(AccountingRecordRow.cluster == cluster)
        with self.db.session() as session:
            return session.scalar(query)

    def newest_submit(self, cluster: str | None = None) -> datetime | None:
        """The latest submit time the ledger holds, of ``cluster`` or of every cluster; None when none."""
        query = select(func.max(AccountingRecordRow.submit_time))
        if cluster is not None:
            query = query.where(AccountingRecordRow.cluster == cluster)
        with self.db.session() as session:
            return session.scalar(query)

    def priced_with(self, version: int | None, *, after_id: int = 0, limit: int = 5000) -> list[LedgerRecord]:
        """Records not priced by rate table ``version`` (or not priced at all), id > ``after_id``, by id."""
        query = select(AccountingRecordRow).where(AccountingRecordRow.id > after_id)
        if version is not None:
            query = query.where(
                (AccountingRecordRow.rate_version.is_(None)) | (AccountingRecordRow.rate_version != version)
            )
        query = query.order_by(AccountingRecordRow.id).limit(limit)
        with self.db.session() as session:
            return [to_ledger(r, []) for r in session.scalars(query)]

    def set_prices(self, prices: Sequence[tuple[int, Price]]) -> int:
        """Store each (record id, price); returns how many were written."""
        if not prices:
            return 0
        with self.db.session() as session:
            session.execute(update(AccountingRecordRow), [{"id": i, **price_columns(p)} for i, p in prices])
        return len(prices)

    def siblings(
        self, cluster: str, job_ids: Sequence[str]
    ) -> dict[tuple[str, str], list[tuple[datetime, str | None]]]:
        """Stored records of ``cluster`` (sacct's Cluster) of the jobs shown as ``job_ids`` ("123",
        "123_4"): (submit time, comment) each, by (cluster, job id)."""
        found: dict[tuple[str, str], list[tuple[datetime, str | None]]] = {}
        with self.db.session() as session:
            for chunk in _chunks(sorted(set(job_ids)), CHUNK):
                query = select(
                    AccountingRecordRow.job_id, AccountingRecordRow.submit_time, AccountingRecordRow.comment
                ).where(AccountingRecordRow.job_id.in_(chunk), AccountingRecordRow.cluster == cluster)
                for job_id, submit, comment in session.execute(query):
                    found.setdefault((cluster, job_id), []).append((submit, comment))
        return found

    def gateway_attempts(
        self, job_ids: Sequence[str], *, cluster: str, default: bool = False
    ) -> list[GatewayAttempt]:
        """The gateway attempts on ``cluster`` (the gateway's name; with ``default`` also those recorded
        without a cluster, from before clusters existed) whose Slurm job id is one of ``job_ids``,
        with their run's project. Job ids repeat across clusters: another cluster's are not listed."""
        on_cluster = AttemptRow.cluster == cluster
        if default:
            on_cluster = or_(on_cluster, AttemptRow.cluster.is_(None))
        result = []
        with self.db.session() as session:
            for chunk in _chunks(sorted(set(job_ids)), CHUNK):
                query = (
                    select(AttemptRow, RunRow.project)
                    .join(RunRow, RunRow.id == AttemptRow.run_id)
                    .where(AttemptRow.job_id.in_(chunk), on_cluster)
                )
                for row, project in session.execute(query):
                    assert row.job_id is not None  # the query matched job ids
                    result.append(
                        GatewayAttempt(
                            row.id,
                            row.run_id,
                            row.number,
                            row.tag,
                            row.job_id,
                            row.slurm_record,
                            row.submit_time,
                            project,
                            row.cluster or cluster,
                        )
                    )
        return result

    def projects_by_account(self) -> dict[str, str]:
        """Slurm account -> the project that uses it."""
        with self.db.session() as session:
            rows = session.execute(select(ProjectRow.slurm_account, ProjectRow.name))
            return {account: name for account, name in rows}

    # -- rate tables ------------------------------------------------------------------------------

    def add_rate_version(self, table: RateTable, by: str, *, audit: AuditEntry | None = None) -> RateVersion:
        """Store ``table`` as the next version (its ``version`` field is ignored); returns it.

        Its sha256 is the table's own (``table_sha256``), never one a caller gives: an apply of the
        exported table compares with it, and a digest of something else made it plan a new version.
        """
        with self.db.session() as session:
            number = (session.scalar(select(func.max(RateVersionRow.version))) or 0) + 1
            row = RateVersionRow(
                version=number,
                currency=table.currency,
                rates=table_to_json(table),
                sha256=table_sha256(table),
                applied_by=by,
            )
            session.add(row)
            session.flush()
            if audit is not None:
                append(session, audit)
            return to_rate_version(row)

    def rate_versions(self) -> list[RateVersion]:
        """Every rate table version, oldest first."""
        with self.db.session() as session:
            return [
                to_rate_version(r)
                for r in session.scalars(select(RateVersionRow).order_by(RateVersionRow.version))
            ]

    def current_rates(self) -> RateVersion | None:
        """The newest rate table version; None before any was applied."""
        with self.db.session() as session:
            row = session.scalar(select(RateVersionRow).order_by(RateVersionRow.version.desc()).limit(1))
            return to_rate_version(row) if row else None


def _chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _existing(session: Session, chunk: list[Entry]) -> dict[RecordKey, Any]:
    """The stored rows (column mappings, no ORM objects: 100,000 of them per ingest) of ``chunk``'s jobs."""
    raws = sorted({e.record.job_id_raw for e in chunk})
    table = AccountingRecordRow.__table__
    rows = session.connection().execute(select(table).where(table.c.job_id_raw.in_(raws))).mappings()
    return {RecordKey(r["cluster"], r["job_id_raw"], r["submit_time"]): r for r in rows}


def _steps_of(session: Session, ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    return {i: [step_columns(to_step(r)) for r in rows] for i, rows in _step_rows(session, ids).items()}


def _step_rows(session: Session, ids: list[int]) -> dict[int, list[AccountingStepRow]]:
    result: dict[int, list[AccountingStepRow]] = {}
    for chunk in _chunks(ids, CHUNK):
        query = select(AccountingStepRow).where(AccountingStepRow.record_id.in_(chunk))
        for row in session.scalars(query.order_by(AccountingStepRow.record_id, AccountingStepRow.step)):
            result.setdefault(row.record_id, []).append(row)
    return result


def _insert(session: Session, fresh: list[Entry], now: datetime) -> None:
    if not fresh:
        return
    # Core statements on the tables, a plain executemany (not the ORM's bulk path, nor RETURNING):
    # several times faster on 100,000 rows; the steps' record ids are read back by identity.
    records, steps_table = AccountingRecordRow.__table__, AccountingStepRow.__table__
    connection = session.connection()
    values = [{**columns(e), "first_seen_at": now, "updated_at": now} for e in fresh]
    connection.execute(insert(records), values)
    with_steps = [e for e in fresh if e.record.steps]
    if not with_steps:
        return
    query = select(records.c.id, records.c.cluster, records.c.job_id_raw, records.c.submit_time).where(
        records.c.job_id_raw.in_(sorted({e.record.job_id_raw for e in with_steps}))
    )
    ids = {RecordKey(c, j, t): i for i, c, j, t in connection.execute(query)}
    steps = [{"record_id": ids[e.record.key], **step_columns(s)} for e in with_steps for s in e.record.steps]
    connection.execute(insert(steps_table), steps)


def _update(session: Session, changes: list[tuple[int, dict, list[dict]]], now: datetime) -> None:
    if not changes:
        return
    session.execute(update(AccountingRecordRow), [{"id": i, **v, "updated_at": now} for i, v, _ in changes])
    ids = [i for i, _, _ in changes]
    session.query(AccountingStepRow).filter(AccountingStepRow.record_id.in_(ids)).delete(
        synchronize_session=False
    )
    steps = [{"record_id": i, **s} for i, _, ss in changes for s in ss]
    if steps:
        session.execute(insert(AccountingStepRow), steps)

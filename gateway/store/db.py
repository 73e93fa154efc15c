"""Engine, the one session scope, error translation and schema upgrades.

``Database.session()`` (ORM) and ``Database.transaction()`` (plain SQL) are
the only places that commit or roll back; both turn SQLAlchemy's errors into
the gateway's (``StoreUnavailable`` when the database cannot be reached,
``StoreError`` otherwise).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from gateway.errors import StoreError, StoreUnavailable

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def rows_matched(result: Result[Any]) -> int:
    """How many rows the UPDATE or DELETE that gave ``result`` matched. ``Session.execute`` returns
    a CursorResult for such a statement, but is typed as returning the wider Result."""
    return cast(CursorResult[Any], result).rowcount


def make_engine(url: str, *, sqlite_synchronous: str = "NORMAL") -> Engine:
    """An engine for ``url``; SQLite gets WAL, foreign keys, a busy timeout and ``sqlite_synchronous``."""
    if sqlite_synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f"sqlite_synchronous must be FULL or NORMAL, not {sqlite_synchronous!r}")
    if url.startswith("sqlite"):
        # A pool as large as the API's concurrent requests: an overflow connection is closed when
        # returned, and opening one again costs its PRAGMAs (WAL) on the next request.
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=20, max_overflow=20
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:  # a DB-API connection
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute(f"PRAGMA synchronous={sqlite_synchronous}")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def upgrade_schema(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (idempotent)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except OperationalError as exc:
        raise StoreUnavailable(f"cannot reach the database to upgrade its schema: {exc.orig}") from exc


def schema_behind(engine: Engine) -> tuple[str | None, str] | None:
    """``(revision the database is at, the newest)`` when its schema is older than the newest
    migration (None: an empty database), else None; reads only."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except OperationalError as exc:
        raise StoreUnavailable(f"cannot reach the database to read its schema version: {exc.orig}") from exc
    return None if current == head else (current, head)


@contextmanager
def _translated() -> Iterator[None]:
    """Turn SQLAlchemy's errors into the gateway's."""
    try:
        yield
    except IntegrityError as exc:
        raise StoreError(f"the database refused the change: {exc.orig}") from exc
    except OperationalError as exc:
        raise StoreUnavailable(f"the database is unavailable: {exc.orig}") from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise StoreUnavailable(f"the database connection was lost: {exc.orig}") from exc
        raise StoreError(f"database error: {exc.orig}") from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"database error: {exc}") from exc


class Database:
    def __init__(self, url: str, *, sqlite_synchronous: str = "NORMAL") -> None:
        if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.url = url
        self.engine = make_engine(url, sqlite_synchronous=sqlite_synchronous)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # SQLite has one writer at a time, and a writer that finds the file locked sleeps in steps of
        # 1 to 100 ms (its busy handler): under a burst of submissions that sleeping, not the work,
        # set the pace. Writers of this process queue on a lock instead, which wakes the next at once.
        self._sqlite_writer = threading.Lock() if self.dialect == "sqlite" else None

    @property
    def dialect(self) -> str:
        """The database's SQLAlchemy dialect name: ``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (``upgrade_schema``); StoreUnavailable when the
        database does not answer.
        """
        upgrade_schema(self.engine)

    def schema_behind(self) -> tuple[str | None, str] | None:
        """``(its revision, the newest)`` when the schema is older than the newest migration."""
        return schema_behind(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One unit of work with the ORM: commits on success, rolls back on any error."""
        session = self._sessions()
        try:
            with _translated():
                yield session
                session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    @contextmanager
    def transaction(self, *, writes: bool = False) -> Iterator[Connection]:
        """One unit of work with plain SQL statements (no ORM): for the hot submit path.

        ``writes``: the unit writes; on SQLite it waits for this process's other writers first.
        """
        if writes and self._sqlite_writer is not None:
            with self._sqlite_writer, _translated(), self.engine.begin() as connection:
                yield connection
            return
        with _translated(), self.engine.begin() as connection:
            yield connection

    def ping(self) -> float:
        """Round-trip one trivial query; returns its latency in seconds."""
        started = time.perf_counter()
        with self.session() as session:
            session.execute(text("SELECT 1"))
        return time.perf_counter() - started

    def dispose(self) -> None:
        """Close the engine's pooled connections; a later session opens new ones."""
        self.engine.dispose()

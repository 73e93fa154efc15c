"""Fresh databases for the benchmarks: a SQLite file, or a new PostgreSQL database dropped afterwards.

The PostgreSQL server is the one ``GW_BENCH_POSTGRES_URL`` names (a URL of an existing database
on it, used to create and drop the benchmark's own), else ``GW_TEST_POSTGRES_URL`` (the test
suite's), else the local server on 127.0.0.1:5432.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text

from gateway.store.db import Database

POSTGRES_ADMIN_URL = (
    os.environ.get("GW_BENCH_POSTGRES_URL")
    or os.environ.get("GW_TEST_POSTGRES_URL")
    or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@contextmanager
def fresh_url(kind: str, workdir: Path, *, admin_url: str = POSTGRES_ADMIN_URL) -> Iterator[str]:
    """The URL of a new, empty database of ``kind`` (``sqlite``: a file in ``workdir``; ``postgresql``:
    a database on ``admin_url``'s server, dropped on leaving)."""
    if kind == "sqlite":
        yield f"sqlite:///{workdir}/bench-{uuid.uuid4().hex[:8]}.db"
        return
    if kind != "postgresql":
        raise ValueError(f"database kind {kind!r}: expected sqlite or postgresql")
    name = f"gwbench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def fresh_database(kind: str, workdir: Path, *, admin_url: str = POSTGRES_ADMIN_URL) -> Iterator[Database]:
    """A new database of ``kind`` (``fresh_url``) with the gateway's schema; closed and removed after."""
    with fresh_url(kind, workdir, admin_url=admin_url) as url:
        db = Database(url)
        try:
            db.upgrade()
            yield db
        finally:
            db.dispose()

"""Alembic environment: runs on the connection the gateway hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from gateway.store import (  # noqa: F401 - registers those tables
    models_accounting,
    models_envs,
    models_eval,
    models_handoff,
    models_lineage,
    models_release,
    models_retention,
    models_telemetry,
)
from gateway.store.models import Base

config = context.config
target_metadata = Base.metadata


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        url = config.get_main_option("sqlalchemy.url")
        if url is None:
            raise SystemExit(
                "no database: the gateway hands Alembic its connection (store/db.py upgrade_schema); "
                "run by hand, set sqlalchemy.url in the Alembic config"
            )
        with create_engine(url).begin() as conn:
            context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
        return
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


run()

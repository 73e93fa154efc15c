"""Alembic environment: runs on the connection the gateway hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from gateway.store.accounting import models as models_accounting  # noqa: F401 - registers those tables
from gateway.store.accounting import telemetry_models as models_telemetry  # noqa: F401 - registers those tables
from gateway.store.envs import models as models_envs  # noqa: F401 - registers those tables
from gateway.store.eval import models as models_eval  # noqa: F401 - registers those tables
from gateway.store.handoff import models as models_handoff  # noqa: F401 - registers those tables
from gateway.store.lineage import models as models_lineage  # noqa: F401 - registers those tables
from gateway.store.models import Base
from gateway.store.releases import models as models_release  # noqa: F401 - registers those tables
from gateway.store.retention import models as models_retention  # noqa: F401 - registers those tables

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

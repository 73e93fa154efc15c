"""The gateway's database: SQLAlchemy rows inside, domain values outside."""

from gateway.store.db import Database, upgrade_schema
from gateway.store.runs.runs import RunStore

__all__ = ["Database", "RunStore", "upgrade_schema"]

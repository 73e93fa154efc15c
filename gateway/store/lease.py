"""A database lease: at most one holder at a time, for as long as it keeps renewing.

Several ``gw serve`` processes may share one database; all serve the API,
but only the holder of the ``scheduler`` lease runs the periodic refresh,
reconcile and retry jobs. Taking or renewing is one conditional UPDATE (or
the first INSERT), atomic on SQLite and PostgreSQL alike; a holder that dies
stops renewing and another takes over once the lease has expired.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.exc import IntegrityError

from gateway.errors import StoreError
from gateway.store.db import Database
from gateway.store.models import LeaseRow, utcnow

LEASES = LeaseRow.__table__


class Lease:
    def __init__(self, db: Database, name: str, holder: str, ttl_s: float) -> None:
        self.db = db
        self.name = name
        self.holder = holder
        self.ttl = timedelta(seconds=ttl_s)

    def acquire(self, *, now: datetime | None = None) -> bool:
        """Take or renew the lease; True while this holder has it."""
        now = now or utcnow()
        with self.db.transaction() as conn:
            taken = conn.execute(
                update(LEASES)
                .where(
                    LEASES.c.name == self.name,
                    or_(LEASES.c.holder == self.holder, LEASES.c.expires_at < now),
                )
                .values(holder=self.holder, expires_at=now + self.ttl)
            ).rowcount
        if taken:
            return True
        try:
            with self.db.transaction() as conn:
                conn.execute(
                    LEASES.insert().values(name=self.name, holder=self.holder, expires_at=now + self.ttl)
                )
            return True
        except StoreError as exc:
            if isinstance(exc.__cause__, IntegrityError):
                return False  # the row exists: another holder has the lease
            raise

    def release(self) -> None:
        """Give the lease up now if this holder has it (it expires at once), so another can take it."""
        with self.db.transaction() as conn:
            conn.execute(
                update(LEASES)
                .where(LEASES.c.name == self.name, LEASES.c.holder == self.holder)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )

"""Idempotency keys of the run store: taking a key with a new run, looking keys up, dropping expired ones."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Insert

from gateway.core.runs.idempotency import ClaimedKey, IdempotencyClaim
from gateway.store.db import Database
from gateway.store.models import utcnow
from gateway.store.rows import DROP_EXPIRED_KEY, DROP_EXPIRED_KEYS, DROP_EXPIRED_KEYS_OF, FIND_KEY, FIND_KEYS


class IdempotencyKeys:
    """Mixed into RunStore: the idempotency keys (``_take_key``/``_take_keys`` run inside its
    run-creating transaction)."""

    db: Database
    _insert_key: Insert

    def _take_keys(
        self, session: Connection, claims: Sequence[tuple[IdempotencyClaim, str]], now: datetime
    ) -> set[str]:
        """``_take_key`` for many claims of one user (each with its run id) in two statements; the keys
        written (a key another request holds is not among them)."""
        if not claims:
            return set()
        user = claims[0][0].user
        keys = [c.key for c, _ in claims]
        session.execute(DROP_EXPIRED_KEYS_OF, {"user": user, "keys": keys, "now": now})
        rows = [
            {
                "user": c.user,
                "key": c.key,
                "operation": c.operation,
                "request_sha256": c.request_sha256,
                "run_id": run_id,
                "created_at": now,
                "expires_at": c.expires_at,
            }
            for c, run_id in claims
        ]
        return {row.key for row in session.execute(self._insert_key, rows)}

    def _take_key(self, session: Connection, claim: IdempotencyClaim, run_id: str, now: datetime) -> bool:
        """Write the key for ``run_id`` unless a live one exists (an expired one is replaced)."""
        session.execute(DROP_EXPIRED_KEY, {"user": claim.user, "key": claim.key, "now": now})
        inserted = session.execute(
            self._insert_key,
            {
                "user": claim.user,
                "key": claim.key,
                "operation": claim.operation,
                "request_sha256": claim.request_sha256,
                "run_id": run_id,
                "created_at": now,
                "expires_at": claim.expires_at,
            },
        )
        return inserted.first() is not None

    def claimed_key(self, user: str, key: str) -> ClaimedKey | None:
        """What an earlier, unexpired request with this key of ``user`` made; None when there is none."""
        with self.db.transaction() as session:
            row = session.execute(FIND_KEY, {"user": user, "key": key, "now": utcnow()}).first()
        return None if row is None else ClaimedKey(row.run_id, row.operation, row.request_sha256)

    def claimed_keys(self, user: str, keys: Sequence[str]) -> dict[str, ClaimedKey]:
        """``claimed_key`` for many keys of ``user`` at once: the unexpired ones found, by key."""
        found: dict[str, ClaimedKey] = {}
        with self.db.transaction() as session:
            for start in range(0, len(keys), 500):  # bounded IN lists
                rows = session.execute(
                    FIND_KEYS, {"user": user, "keys": list(keys[start : start + 500]), "now": utcnow()}
                )
                for row in rows:
                    found[row.key] = ClaimedKey(row.run_id, row.operation, row.request_sha256)
        return found

    def forget_expired_keys(self, now: datetime | None = None) -> int:
        """Delete idempotency keys past their time; returns how many."""
        with self.db.transaction(writes=True) as session:
            return session.execute(DROP_EXPIRED_KEYS, {"now": now or utcnow()}).rowcount

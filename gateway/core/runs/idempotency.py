"""A client's ``Idempotency-Key`` on a submission, and what an earlier request with that key left."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class IdempotencyClaim:
    """A client's ``Idempotency-Key`` on a submission: the same key again means the same request."""

    user: str
    key: str
    operation: str  # run.submit, or run.rerun of a run
    request_sha256: str  # of the request's canonical form
    expires_at: datetime


@dataclass(frozen=True)
class ClaimedKey:
    """What an earlier request with the same key left: the run it made and what it asked."""

    run_id: str
    operation: str
    request_sha256: str

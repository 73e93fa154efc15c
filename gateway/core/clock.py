"""The clock helper: now, as the store and the services write times (aware, UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now, as an aware UTC datetime."""
    return datetime.now(UTC)

"""A read cache for what changes rarely: tokens -> principals, projects with queues and caps, site options.

Every request authenticates and every submission reads its project, queues,
caps and the site options; these change only on ``gw admin apply``, a token
revoke or an admin's edit. Each write of them (``AccessStore``) also sets a
*generation* (a random value in ``site_options``) in the same transaction.
A cached value is kept with the generation read *before* it was loaded, and
is used only while the database still holds that generation: one primary-key
read instead of the several reads it stands for. So a change is seen by the
next request of every process (``gw serve`` and ``gw admin`` are separate
processes on one database), never later; a revoked token is refused at once.

A write made around the gateway (SQL by hand) sets no generation: restart
the server, or make any change through the gateway, to drop the cache.

Within ``snapshot()`` the generation is read once, at the first cached read,
and every cached read after it in the same block (and thread) uses that one:
the block sees the access data as of one moment. A submission's admission
reads its project and the site options in one snapshot (one read, not two).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from threading import Lock
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.store.db import Database
from gateway.store.models import SiteOptionRow

GENERATION_KEY = "_access_generation"  # site_options key; never a site file option (those have no "_")
MAX_ENTRIES = 10_000  # tokens in use at once, projects; past it the cache starts again empty

_READ_GENERATION = select(SiteOptionRow.value).where(SiteOptionRow.key == GENERATION_KEY)
T = TypeVar("T")
_UNREAD = object()
# The generation read in the current snapshot() block, _UNREAD before its first read; None outside.
_SNAPSHOT: ContextVar[list[Any] | None] = ContextVar("access_snapshot", default=None)


def bump_generation(session: Session) -> None:
    """Mark users, tokens, projects or options changed, inside the writing transaction."""
    row = session.get(SiteOptionRow, GENERATION_KEY) or SiteOptionRow(key=GENERATION_KEY)
    row.value = uuid.uuid4().hex
    session.add(row)


class AccessCache:
    """Values by key, each valid while the database's access generation is the one it was loaded at."""

    def __init__(self, db: Database, *, max_entries: int = MAX_ENTRIES) -> None:
        self.db = db
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[Any, Any]] = {}
        self._lock = Lock()
        self.hits = 0
        self.misses = 0

    def generation(self) -> Any:
        """The access generation now in the database (None before the first change): one read;
        inside ``snapshot()``, the one its first call read."""
        held = _SNAPSHOT.get()
        if held is not None and held[0] is not _UNREAD:
            return held[0]
        with self.db.transaction() as connection:
            generation = connection.execute(_READ_GENERATION).scalar()
        if held is not None:
            held[0] = generation
        return generation

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A block whose cached reads all check the generation read at the first of them (once).
        Nested blocks share the outer one's."""
        if _SNAPSHOT.get() is not None:
            yield
            return
        token = _SNAPSHOT.set([_UNREAD])
        try:
            yield
        finally:
            _SNAPSHOT.reset(token)

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The value under ``key``: cached when still current, else ``load()`` (kept unless None).

        ``load``'s exceptions (NotFound, StoreUnavailable) pass through and nothing is kept.
        """
        generation = self.generation()  # read before loading: a change in between reloads next time
        found = self._entries.get(key)
        if found is not None and found[0] == generation:
            self.hits += 1
            return found[1]
        self.misses += 1
        value = load()
        if value is not None:
            with self._lock:
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()
                self._entries[key] = (generation, value)
        return value

    def forget(self, key: Hashable) -> None:
        """Drop ``key`` (this process's own change that sets no generation, such as a token's use)."""
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        """Drop every cached value of this process."""
        with self._lock:
            self._entries.clear()

"""Cursors for paging through runs, newest first: where the previous page ended (no I/O).

A cursor is the (created_at, run id) of the last run on a page, written as
``<microseconds since 1970-01-01 UTC>.<run id>``, e.g.
``1767225600000000.r-3f2a9c0d1e2b4a5f``; the next page starts after it. Any
text matching ``CURSOR_PATTERN`` is a cursor (it names a place in the
order, whether or not such a run exists); anything else is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gateway.core import names

CURSOR = re.compile(rf"([0-9]{{1,16}})\.({names.NAME.pattern})")
CURSOR_PATTERN = f"^{CURSOR.pattern}$"
CURSOR_HELP = "the next_cursor a previous page gave, unchanged (<microseconds since 1970>.<run id>)"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Cursor:
    created_at: datetime
    run_id: str

    def encode(self) -> str:
        """The cursor as text, for ``next_cursor``; ``decode`` reads it back (naive times are UTC)."""
        when = self.created_at if self.created_at.tzinfo else self.created_at.replace(tzinfo=UTC)
        return f"{(when - _EPOCH) // _MICROSECOND}.{self.run_id}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The cursor ``text`` stands for; ValueError (saying what is valid) for anything else."""
        match = CURSOR.fullmatch(text)
        if match is None:
            raise ValueError(f"not a cursor; use {CURSOR_HELP}")
        return cls(_EPOCH + int(match.group(1)) * _MICROSECOND, match.group(2))

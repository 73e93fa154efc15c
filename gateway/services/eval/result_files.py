"""Reading an eval run's results files through the run host, bounded, and checking their sha256.

``RemoteFile`` reads one file of a run directory as the job's OS user, in
chunks of at most ``CHUNK_BYTES`` (the run host's limit per call), never
through a symlink or outside the run directory. ``lines()`` hands the
parsers one line at a time, a line longer than ``MAX_LINE_BYTES`` cut at
that length (which the parsers then refuse as too long), so memory stays
bounded whatever the file holds; ``read_all`` reads a small file whole.
Either way the bytes are hashed as they go, and ``check`` compares the
digest and size with what the harvest and the manifest recorded: a file
changed in between is refused, never half-read as another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from gateway.adapters.runhost import RunHost
from gateway.core.eval.results import MAX_LINE_BYTES, refuse

CHUNK_BYTES = 1 << 20


class RemoteFile:
    def __init__(self, host: RunHost, path: str, *, as_user: str, inside: str, label: str) -> None:
        self.host = host
        self.path = path
        self.as_user = as_user
        self.inside = inside
        self.label = label  # how a refusal names the file (relative to the run directory)
        self.digest = hashlib.sha256()
        self.size = 0
        self._size_seen: int | None = None

    def _chunk(self, offset: int) -> bytes:
        read = self.host.read_file(
            self.path, as_user=self.as_user, max_bytes=CHUNK_BYTES, offset_bytes=offset, inside=self.inside
        )
        if not read.exists or read.error:
            why = read.error or "it does not exist"
            raise refuse(f"cannot read {self.label} as {self.as_user}: {why}", self.label)
        if self._size_seen is not None and read.size_bytes != self._size_seen:
            raise refuse(f"{self.label} changed size while it was read", self.label)
        self._size_seen = read.size_bytes
        self.digest.update(read.data)
        self.size += len(read.data)
        return read.data

    def chunks(self) -> Iterator[bytes]:
        """The file in chunks of at most ``CHUNK_BYTES``, as the job's user reads it; refused when it changes
        size meanwhile."""
        offset = 0
        while True:
            data = self._chunk(offset)
            if data:
                yield data
            offset += len(data)
            if not data or offset >= (self._size_seen or 0):
                return

    def read_all(self, max_bytes: int) -> bytes:
        """The whole file; refused when it is longer than ``max_bytes``."""
        parts, total = [], 0
        for data in self.chunks():
            total += len(data)
            if total > max_bytes:
                raise refuse(f"{self.label} is over {max_bytes} bytes", self.label)
            parts.append(data)
        return b"".join(parts)

    def lines(self) -> Iterator[bytes]:
        """The file's lines (with their newline), a line over ``MAX_LINE_BYTES`` cut just past it."""
        pending = b""
        for data in self.chunks():
            pending += data
            start = 0
            while True:
                end = pending.find(b"\n", start)
                if end < 0:
                    break
                yield pending[start : end + 1]
                start = end + 1
            pending = pending[start:]
            if len(pending) > MAX_LINE_BYTES:
                yield pending[: MAX_LINE_BYTES + 1]  # refused by the parser as too long
                return
        if pending:
            yield pending

    def check(self, sha256: str, size: int | None = None) -> None:
        """The bytes read hash to ``sha256`` (and number ``size``); refused otherwise."""
        got = self.digest.hexdigest()
        if got != sha256 or (size is not None and self.size != size):
            raise refuse(
                f"{self.label} is not the file recorded: sha256 {got[:12]} ({self.size} bytes), recorded "
                f"{sha256[:12]}"
                + (f" ({size} bytes)" if size is not None else "")
                + "; it changed after the job wrote it",
                self.label,
            )

"""The audit anchor file on the gateway host: checkpoints of the audit chain, outside the database.

One JSON line per checkpoint (``gateway/core/audit/anchors.py`` writes and reads
the lines; this module only touches the file). The file is created 0600 by
``os.open`` itself (never written first and narrowed after), only ever
opened for appending, and each line is fsync'd before ``append`` returns.
A file made append-only (``chattr +a``) keeps working: nothing here
truncates, rewrites or deletes it; ``retire`` renames it, which such a file
refuses (the error says so).

Reading never raises: a missing, unreadable or malformed file is described
in the returned ``AnchorRead``. Writing raises ``AnchorError``.
"""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path

from gateway.core.audit.anchors import AnchorRead, Checkpoint, parse_lines, parse_tail
from gateway.errors import AnchorError

TAIL_BYTES = 4096  # more than one checkpoint line (about 120 bytes)
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
_MODE = 0o600


class AnchorFile:
    """The checkpoints kept in one file at ``path``."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)

    @property
    def path(self) -> str:
        """The file's path, as a string (for messages and ``AnchorRead.path``)."""
        return str(self._path)

    def read(self) -> AnchorRead:
        """Every checkpoint in the file, and every line that is not one."""
        try:
            with self._path.open("rb") as handle:
                mode = os.fstat(handle.fileno()).st_mode & 0o7777
                checkpoints, problems = parse_lines(handle)
        except FileNotFoundError:
            return AnchorRead(self.path, exists=False)
        except OSError as exc:
            return AnchorRead(self.path, error=_reason(exc))
        return AnchorRead(self.path, checkpoints=checkpoints, problems=problems, mode=mode)

    def read_last(self) -> AnchorRead:
        """Only the file's last line (a few KiB read, however long the file): for every cycle."""
        try:
            with self._path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                start = max(0, size - TAIL_BYTES)
                handle.seek(start)
                checkpoints, problems = parse_tail(handle.read(), whole_file=start == 0)
        except FileNotFoundError:
            return AnchorRead(self.path, exists=False)
        except OSError as exc:
            return AnchorRead(self.path, error=_reason(exc))
        return AnchorRead(self.path, checkpoints=checkpoints, problems=problems)

    def prepare(self) -> None:
        """Make the file (empty, 0600) and its directory, unless they are there; raises AnchorError."""
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            created = not self._path.exists()
            os.close(os.open(self._path, _APPEND, _MODE))
            if created:
                _sync_dir(self._path.parent)
        except OSError as exc:
            raise AnchorError(f"cannot create the audit anchor file {self.path}: {_reason(exc)}") from exc

    def append(self, checkpoint: Checkpoint) -> None:
        """Append ``checkpoint`` as one line and fsync it; raises AnchorError."""
        data = checkpoint.line().encode()
        try:
            fd = os.open(self._path, _APPEND, _MODE)
            try:
                while data:
                    data = data[os.write(fd, data) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise AnchorError(f"cannot write the audit anchor file {self.path}: {_reason(exc)}") from exc

    def retire(self) -> str | None:
        """Rename the file aside (``<name>.<UTC time>``), to keep it as evidence; returns the new name,
        or None when there was no file. Raises AnchorError."""
        if not self._path.exists():
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = self._path.with_name(f"{self._path.name}.{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self._path.with_name(f"{self._path.name}.{stamp}-{n}")
        try:
            os.rename(self._path, target)
            _sync_dir(self._path.parent)
        except OSError as exc:
            hint = " (is it append-only? `chattr -a` it as root first)" if exc.errno == errno.EPERM else ""
            raise AnchorError(
                f"cannot move the audit anchor file {self.path} aside: {_reason(exc)}{hint}"
            ) from exc
        return str(target)


def _sync_dir(directory: Path) -> None:
    """fsync a directory, so a file just made or renamed in it survives a power loss."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)

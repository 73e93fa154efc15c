"""The run host: the files and OS accounts of the machine where jobs run, behind one protocol.

Services never touch that machine's files themselves. They ask a ``RunHost``
to make a run directory, write a manifest, read a log, hash a run's outputs,
describe a venv, each done with the job's OS user's permissions
(``as_user``), so a user gets back only what that user could read.
``gateway.adapters.runhost_local.LocalRunHost`` is the implementation for a
gateway on the login node; an SSH host (SFTP) fits the same protocol.

Paired with the command runner (``gateway.adapters.runner``): the runner
runs programs there, the run host reads and writes files there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class OsAccount:
    name: str
    uid: int
    gid: int
    home: str


@dataclass(frozen=True)
class FileRead:
    """Part of a file, as its reader was allowed to see it.

    ``exists`` False: not there (yet). ``error``: why nothing was read (not a regular file, under
    /proc, permission denied ...); None when ``data`` holds what was asked for.
    """

    path: str
    exists: bool
    size_bytes: int  # the file's size when it was read
    offset_bytes: int  # where ``data`` starts in the file
    data: bytes = b""
    error: str | None = None

    @property
    def end_bytes(self) -> int:
        """The offset just after ``data``: where a follower reads next."""
        return self.offset_bytes + len(self.data)

    def text(self) -> str:
        """``data`` decoded as UTF-8, undecodable bytes replaced (a log can hold anything)."""
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class OutputFile:
    path: str  # relative to the run directory
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class OutputScan:
    """The regular files under a run directory that matched its output patterns, hashed."""

    files: list[OutputFile] = field(default_factory=list)
    skipped: int = 0  # symlinks, things reached through one, fifos, sockets, devices
    truncated: bool = False  # more files matched than were hashed
    errors: list[str] = field(default_factory=list)  # files that could not be read


@dataclass(frozen=True)
class PathMeasure:
    """One path inside a run directory, measured before a deletion: its size and digest."""

    rel: str  # relative to the run directory; "." is the directory itself
    exists: bool
    kind: str | None  # file | dir | other; None when it does not exist
    size_bytes: int
    files: int
    sha256: str | None  # a file's sha256; a directory's: the sha256 of its listing
    error: str | None = None


@dataclass(frozen=True)
class DirUsage:
    """The space one run directory takes (regular files, no symlink followed)."""

    path: str
    exists: bool
    size_bytes: int
    files: int
    error: str | None = None


@dataclass(frozen=True)
class Removal:
    """What one deletion did: ``removed``, or the path was already ``missing``, or ``error`` says why not."""

    removed: bool
    missing: bool
    error: str | None = None
    emptied: bool = False  # a run directory emptied whose parent its owner may not change: it stays


class RunHost(Protocol):
    def account(self, user: str) -> OsAccount | None:
        """The OS account ``user`` on the run host; None when there is none."""
        ...

    def make_run_dir(self, path: str, *, owner: str) -> None:
        """Create a new run directory (its parents as needed), owned by ``owner`` and private to it.

        RunHostError when it cannot be made (it already exists, no permission, no space).
        """
        ...

    def write_file(self, path: str, data: bytes, *, as_user: str, mode: int = 0o644) -> None:
        """Write ``path`` atomically as ``as_user``; RunHostError when that user cannot."""
        ...

    def remove_file(self, path: str, *, as_user: str) -> None:
        """Remove regular file ``path`` as ``as_user`` (gone already: nothing to do); RunHostError
        when that user cannot, or it is a directory."""
        ...

    def read_file(
        self,
        path: str,
        *,
        as_user: str,
        max_bytes: int,
        offset_bytes: int | None = None,
        tail_lines: int | None = None,
        inside: str | None = None,
    ) -> FileRead:
        """Read at most ``max_bytes`` of a regular file as ``as_user``: from ``offset_bytes``, or the
        last ``tail_lines`` lines. ``inside``: only a file below that directory, reached without
        symlinks. Refusals are in ``FileRead.error``; RunHostUnavailable when the host does not answer."""
        ...

    def scan_outputs(self, run_dir: str, patterns: list[str], *, as_user: str, max_files: int) -> OutputScan:
        """Match ``patterns`` under ``run_dir`` as ``as_user`` and hash each regular file found."""
        ...

    def writable_dir(self, path: str, *, as_user: str) -> str | None:
        """None when ``as_user`` may create files in directory ``path``; else why not."""
        ...

    def readable_file(self, path: str, *, as_user: str) -> str | None:
        """None when ``as_user`` may read regular file ``path`` (it is opened, never read); else why not."""
        ...

    def python_env(self, venv: str, *, as_user: str) -> dict[str, Any]:
        """The packages of a virtual environment as ``as_user`` sees it (JSON-ready, never raises)."""
        ...

    def image_archive(self, path: str, *, as_user: str) -> dict[str, Any]:
        """The image in an archive (``podman save``) as ``as_user`` reads it: ``{"path", "image_id":
        "sha256:...", "tags", "layers"}`` or ``{"path", "error"}`` (JSON-ready, never raises)."""
        ...

    def measure_paths(
        self, run_dir: str, rels: list[str], *, as_user: str, digest: bool = True
    ) -> list[PathMeasure]:
        """Size and (``digest``) sha256 of each of ``rels`` inside ``run_dir`` as ``as_user``, never
        through a symlink."""
        ...

    def measure_dirs(self, run_dirs: list[str], *, as_user: str) -> list[DirUsage]:
        """The bytes and files under each run directory as ``as_user`` (nothing hashed)."""
        ...

    def remove_path(self, run_dir: str, rel: str, *, kind: str, as_user: str) -> Removal:
        """Delete ``rel`` (a file, or a directory: "." is ``run_dir`` itself) as ``as_user``, the files'
        owner; never through a symlink, never outside ``run_dir``."""
        ...

"""Content-addressed dataset manifests: one entry per file, one digest per dataset.

A manifest lists every regular file of a dataset by its relative name, size
in bytes and SHA-256. Its digest is the SHA-256 of the text GNU coreutils
``sha256sum`` prints for those files, sorted by the byte order of their names
and run in the dataset's root. So anyone with a shell can recompute it,
without the gateway:

    cd ROOT && find -L . -type f -print0 | LC_ALL=C sort -z | sed -z 's|^\\./||' \\
        | xargs -0 -r sha256sum -- | sha256sum

(``SHELL_DIGEST_PIPELINE``; the digest is the first field it prints.) ``find -L``
follows symlinks to files and directories and leaves out everything that is
not a regular file (fifos, sockets, devices, dangling links); ``LC_ALL=C sort
-z`` sorts the names by their bytes, which is the order used here (the ``./``
prefix every name shares does not change it); ``sed -z`` strips that prefix so
the names are the relative ones. For a dataset that is a single file, run
``sha256sum -- NAME | sha256sum`` in its directory. The text itself is
accepted by ``sha256sum --check --strict`` run in the root.

Names are ``str``. A name that is not valid UTF-8 on disk is kept the way
``os.fsdecode`` gives it (lone surrogates, ``surrogateescape``), and every
byte-level step here (sort order, digest) encodes it back the same way, so it
round-trips to the exact bytes on disk.

Everything here takes values and returns values; reading files is
``gateway.adapters.files``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MAX_FILES = 1_000_000
MAX_BYTES = 2**63 - 1  # the most a version's files may add up to: what the database's BIGINT holds
MAX_FILE_BYTES = 2**53 - 1  # the most one file may be: the largest integer every JSON reader keeps exactly
MAX_PATH_CHARS = 4096
SHELL_DIGEST_PIPELINE = (
    "find -L . -type f -print0 | LC_ALL=C sort -z | sed -z 's|^\\./||' | xargs -0 -r sha256sum -- | sha256sum"
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FIELDS = ("path", "size", "sha256")
# ``path_problem``'s rule as a JSON-schema pattern (the length is maxLength): parts with a character
# other than '.' (or of 3 dots or more), no NUL.
_PART = r"\.*[^/.\x00][^/\x00]*|\.{3,}"
MANIFEST_PATH_PATTERN = rf"^(?:{_PART})(?:/(?:{_PART}))*$"
_PATH_RULE = (
    "a path is relative and '/'-separated (no leading '/' or './'), has no '.', '..' or empty "
    f"components, no NUL, and at most {MAX_PATH_CHARS} characters"
)


def path_bytes(path: str) -> bytes:
    """The bytes a name stands for on disk; the sort key of manifests (byte order)."""
    return path.encode("utf-8", "surrogateescape")


def path_problem(path: object) -> str | None:
    """Why ``path`` is not a valid manifest path, or None when it is."""
    if not isinstance(path, str):
        return f"path must be a string, not {type(path).__name__}"
    if not path:
        return "path is empty"
    if len(path) > MAX_PATH_CHARS:
        return f"path has {len(path)} characters, more than {MAX_PATH_CHARS}"
    if "\0" in path:
        return "path contains a NUL character"
    if path.startswith("/"):
        return "path is absolute (starts with '/')"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return f"path has a {repr(part) if part else 'empty'} component"
    try:
        path_bytes(path)
    except UnicodeEncodeError:
        return "path contains a lone surrogate that does not stand for a byte (not from os.fsdecode)"
    return None


@dataclass(frozen=True)
class FileEntry:
    """One file of a dataset: relative name, size in bytes, SHA-256 (64 lowercase hex).

    Raises ValueError on construction when a field is not valid.
    """

    path: str
    size: int
    sha256: str

    def __post_init__(self) -> None:
        problem = path_problem(self.path)
        if problem:
            raise ValueError(f"{problem}; {_PATH_RULE}")
        if (
            not isinstance(self.size, int)
            or isinstance(self.size, bool)
            or not 0 <= self.size <= MAX_FILE_BYTES
        ):
            raise ValueError(
                f"size must be an integer number of bytes from 0 to {MAX_FILE_BYTES}, got {self.size!r}"
            )
        if not isinstance(self.sha256, str) or not _HEX64.fullmatch(self.sha256):
            raise ValueError(f"sha256 must be 64 lowercase hex digits, got {self.sha256!r}")

    def to_dict(self) -> dict[str, object]:
        """``{path, size, sha256}``: the entry as the manifest format writes it (size in bytes)."""
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


def _entry(raw: Mapping | FileEntry) -> FileEntry:
    if isinstance(raw, FileEntry):
        return raw
    if not isinstance(raw, Mapping):
        raise ValueError(f"must be a mapping with keys {', '.join(_FIELDS)}, not {type(raw).__name__}")
    missing = [key for key in _FIELDS if key not in raw]
    unknown = sorted(str(key) for key in raw if key not in _FIELDS)
    if missing or unknown:
        what = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unknown {', '.join(unknown)}" if unknown else "",
            )
            if part
        )
        raise ValueError(f"{what}; the keys are exactly {', '.join(_FIELDS)}")
    sha = raw["sha256"]
    return FileEntry(path=raw["path"], size=raw["size"], sha256=sha.lower() if isinstance(sha, str) else sha)


def check_entries(raw: Iterable[Mapping | FileEntry]) -> list[FileEntry]:
    """Validate manifest entries and return them sorted by the bytes of their paths.

    Each item is a FileEntry or a mapping with exactly the keys path, size,
    sha256 (the hex may be upper case; it is lower-cased). Raises ValueError
    naming the first bad entry (index and path), what is wrong and what is
    valid: a bad field, a duplicate path, or more than MAX_FILES entries.
    """
    entries: list[FileEntry] = []
    first_index: dict[str, int] = {}
    total = 0
    for index, item in enumerate(raw):
        where = f"entry {index}"
        if isinstance(item, Mapping | FileEntry):
            path = item.path if isinstance(item, FileEntry) else item.get("path")
            where += f" (path {path!r})"
        if index >= MAX_FILES:
            raise ValueError(f"{where}: a manifest holds at most {MAX_FILES:,} files")
        try:
            entry = _entry(item)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if entry.path in first_index:
            raise ValueError(
                f"{where}: duplicate path, already given as entry {first_index[entry.path]}; "
                "each path appears once"
            )
        first_index[entry.path] = index
        total += entry.size
        if total > MAX_BYTES:
            raise ValueError(
                f"{where}: the files add up to more than {MAX_BYTES} bytes, the most a version holds"
            )
        entries.append(entry)
    entries.sort(key=lambda e: path_bytes(e.path))
    return entries


def _escape(name: str) -> str:
    # coreutils (md5sum.c): a name holding '\\', '\n' or '\r' is printed with those three
    # escaped and the line starts with one backslash; nothing else is escaped (checked
    # with real files on coreutils 9.1, Debian 12; older releases may leave '\r' as is).
    return name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def sha256sum_line(entry: FileEntry) -> str:
    """The line ``sha256sum NAME`` prints for this entry (text mode), newline included."""
    if any(c in entry.path for c in "\\\n\r"):
        return f"\\{entry.sha256}  {_escape(entry.path)}\n"
    return f"{entry.sha256}  {entry.path}\n"


def sha256sum_text(entries: Iterable[FileEntry]) -> str:
    """The lines of ``sha256sum`` for the entries, in the order given.

    To write it to a file, encode it with ``path_bytes`` rules
    (``text.encode("utf-8", "surrogateescape")``) so non-UTF-8 names keep their bytes.
    """
    return "".join(sha256sum_line(entry) for entry in entries)


def manifest_digest(entries: Iterable[FileEntry]) -> str:
    """SHA-256 hex of ``sha256sum_text`` of the entries sorted by path bytes.

    Independent of the order given; equal to what ``SHELL_DIGEST_PIPELINE``
    prints in the dataset's root.
    """
    ordered = sorted(entries, key=lambda e: path_bytes(e.path))
    digest = hashlib.sha256()
    for entry in ordered:
        digest.update(path_bytes(sha256sum_line(entry)))
    return digest.hexdigest()


def total_bytes(entries: Iterable[FileEntry]) -> int:
    """Sum of the entries' sizes, in bytes."""
    return sum(entry.size for entry in entries)


@dataclass(frozen=True)
class ManifestDiff:
    """What changed from one manifest to another, by path; lists sorted by path bytes."""

    added: list[FileEntry]
    removed: list[FileEntry]
    changed: list[tuple[FileEntry, FileEntry]]  # (old, new): same path, other size or sha256
    unchanged: int

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (names with surrogates need ``ensure_ascii=True``, json's default)."""
        return {
            "added": [entry.to_dict() for entry in self.added],
            "removed": [entry.to_dict() for entry in self.removed],
            "changed": [
                {
                    "path": old.path,
                    "old": {"size": old.size, "sha256": old.sha256},
                    "new": {"size": new.size, "sha256": new.sha256},
                }
                for old, new in self.changed
            ],
            "unchanged": self.unchanged,
        }


def diff_manifests(old: Iterable[Mapping | FileEntry], new: Iterable[Mapping | FileEntry]) -> ManifestDiff:
    """Compare two manifests by path. Both are checked as by ``check_entries`` (ValueError)."""
    before = {entry.path: entry for entry in check_entries(old)}
    after = check_entries(new)
    added: list[FileEntry] = []
    changed: list[tuple[FileEntry, FileEntry]] = []
    unchanged = 0
    for entry in after:
        previous = before.pop(entry.path, None)
        if previous is None:
            added.append(entry)
        elif previous != entry:
            changed.append((previous, entry))
        else:
            unchanged += 1
    return ManifestDiff(added=added, removed=list(before.values()), changed=changed, unchanged=unchanged)

"""Reading from disk on the gw side: bounded text files (specs, scripts, site files) and datasets.

``read_text`` is the one way ``gw`` reads a spec, a batch script or a site
file: a regular file only (a FIFO, a device such as ``/dev/zero``, a
directory or a socket is refused before a byte is read, and a FIFO is never
waited on), at most ``TEXT_FILE_BYTES``, UTF-8. ``load_spec_file`` reads a
run spec file with it, and its ``script_file``, then validates the spec.

``scan`` turns a file or a directory into ``FileEntry`` values (see
``gateway.core.lineage.manifest``) the way ``find -L ROOT -type f`` sees the tree:
symlinks to files and to directories are followed, and only regular files
are listed. Fifos, sockets, devices and dangling symlinks are never opened;
their names go to ``ScanResult.skipped``. Memory does not grow with file
size: each file is read through one reusable buffer.

Names come from the OS as ``os.fsdecode`` gives them: a name that is not
valid UTF-8 keeps its bytes as lone surrogates (``surrogateescape``), so
``os.fsencode`` and ``manifest.path_bytes`` give back the bytes on disk.

Every failure of ``scan`` is a ``SpecError`` (what="dataset path") with one issue at
"path" naming the file and the OS reason: a path that does not exist, is not
a regular file or directory, or cannot be read; a symlink loop; a directory
loop (a directory that contains itself through a symlink); a file that
changed size while it was scanned; more than ``MAX_FILES`` files.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, Literal

from gateway.core.lineage.manifest import MAX_FILES, MAX_PATH_CHARS, FileEntry, path_bytes
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.core.yaml_input import SPEC_LIMITS, load_yaml
from gateway.errors import SpecError, SpecIssue

BUFFER_BYTES = 1 << 20
TEXT_FILE_BYTES = SPEC_LIMITS.max_chars  # a spec, script or site file: 1 MiB
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_text(
    path: str | os.PathLike[str], *, max_bytes: int = TEXT_FILE_BYTES, what: str = "run spec"
) -> str:
    """The text of a regular file of at most ``max_bytes`` bytes, decoded as UTF-8.

    The path is stat'ed first, and only a regular file is opened, with
    O_NONBLOCK so that a name swapped for a FIFO since cannot make open()
    wait; the opened file is checked again (fstat) and read to at most
    ``max_bytes`` + 1 bytes, whatever its size said. Symlinks are followed:
    ``gw`` reads as the user who runs it, the user's own files. Raises
    SpecError (``what``, source: the path) with one issue saying what the
    path is, how big, or where the first byte that is not UTF-8 sits.
    """
    name = os.fspath(path)
    try:
        _check_regular(os.stat(name), name, max_bytes, what)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _unreadable(f"cannot read it: {_os_reason(exc)}", name, what) from exc
    with open(fd, "rb", buffering=0) as handle:
        try:
            _check_regular(os.fstat(fd), name, max_bytes, what)
            data = _read_at_most(handle, max_bytes + 1)
        except OSError as exc:
            raise _unreadable(f"cannot read it: {_os_reason(exc)}", name, what) from exc
    if len(data) > max_bytes:
        message = f"it grew past {max_bytes} bytes while it was read; at most {max_bytes}"
        raise _unreadable(message, name, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        message = f"it is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line}, column {column}"
        raise _unreadable(message, name, what) from None


def _check_regular(info: os.stat_result, name: str, max_bytes: int, what: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((label for test, label in _KINDS if test(info.st_mode)), "not a file")
        raise _unreadable(f"it is {kind}, not a regular file; give the path of a regular file", name, what)
    if info.st_size > max_bytes:
        raise _unreadable(f"it is {info.st_size} bytes; at most {max_bytes} are read", name, what)


def _read_at_most(handle: BinaryIO, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0 and (chunk := handle.read(min(left, BUFFER_BYTES))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _unreadable(message: str, name: str, what: str) -> SpecError:
    # The issue names the file itself (not "(spec)"): `gw sbatch missing.sh` says which file it is.
    return SpecError([SpecIssue(name, message)], name, what=what)


def load_spec_file(path: str | os.PathLike[str]) -> RunSpec:
    """A run spec file (YAML or JSON) as a RunSpec, read with ``read_text``.

    A ``script_file`` key names a script (relative to the spec file's
    directory, or absolute) whose text becomes ``script``, read the same way.
    Raises SpecError naming the spec file.
    """
    name = os.fspath(path)
    data = load_yaml(read_text(name), limits=SPEC_LIMITS, source=name)
    if isinstance(data, dict) and "script_file" in data:
        script_path = os.path.join(os.path.dirname(name), str(data.pop("script_file")))
        try:
            data["script"] = read_text(script_path, what="batch script")
        except SpecError as exc:
            issues = [SpecIssue("script_file", f"{script_path}: {i.message}") for i in exc.issues]
            raise SpecError(issues, name) from None
    return build_spec(data, source=name)


def _fail(message: str, value: object) -> SpecError:
    return SpecError([SpecIssue("path", message, value)], what="dataset path")


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def sha256_file(
    path: str | os.PathLike[str],
    *,
    progress: Callable[[int], None] | None = None,
    buffer_bytes: int = BUFFER_BYTES,
) -> tuple[str, int]:
    """SHA-256 hex and size in bytes of one regular file, read in ``buffer_bytes`` chunks.

    One buffer is allocated and reused, so memory does not depend on file
    size. ``progress(n_bytes)`` is called after each chunk with that chunk's
    size. Raises SpecError when the path is not a readable regular file (a
    fifo or device is refused before it is opened).
    """
    name = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(name).st_mode):
            raise _fail(f"{name!r} is not a regular file", name)
        # O_NONBLOCK: should the name have become a fifo since the stat, open() does not hang.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _fail(f"cannot read {name!r}: {_os_reason(exc)}", name) from exc
    with open(fd, "rb", buffering=0) as handle:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _fail(f"{name!r} is not a regular file", name)
            return sha256_stream(handle, progress=progress, buffer_bytes=buffer_bytes)
        except OSError as exc:
            raise _fail(f"cannot read {name!r}: {_os_reason(exc)}", name) from exc


def sha256_stream(
    handle: io.RawIOBase | io.BufferedIOBase,
    *,
    progress: Callable[[int], None] | None = None,
    buffer_bytes: int = BUFFER_BYTES,
) -> tuple[str, int]:
    """SHA-256 hex and byte count of what ``handle`` reads to its end, through one reused buffer.

    OSError passes through to the caller, which knows what it was reading.
    """
    digest = hashlib.sha256()
    view = memoryview(bytearray(buffer_bytes))
    size = 0
    while n := handle.readinto(view):
        digest.update(view[:n])
        size += n
        if progress is not None:
            progress(n)
    return digest.hexdigest(), size


@dataclass(frozen=True)
class ScanResult:
    """What ``scan`` found.

    root: absolute, resolved path of the directory (or of the file).
    kind: "directory" or "file".
    entries: one per regular file, sorted by the bytes of their names.
    skipped: relative names of things that are not regular files (fifos,
    sockets, devices, dangling symlinks), sorted the same way; never opened.
    """

    root: str
    kind: Literal["directory", "file"]
    entries: list[FileEntry]
    skipped: list[str]


ScanProgress = Callable[[int, int, str], None]


def scan(path: str | os.PathLike[str], *, progress: ScanProgress | None = None) -> ScanResult:
    """Manifest entries for a file or a directory tree, following symlinks like ``find -L``.

    A file gives one entry named by the basename of ``path`` as given. A
    directory gives one entry per regular file below it, named relative to
    it with '/'. Two passes: a stat walk (names, sizes, total bytes), then
    hashing. ``progress(done_bytes, total_bytes, relative_name)`` is called
    after each chunk and after each file (empty ones too); the last call has
    done_bytes == total_bytes. Raises SpecError (see the module docstring).
    """
    given = os.path.abspath(os.fspath(path))
    try:
        top = os.stat(given)
        root = os.path.realpath(given, strict=True)
    except OSError as exc:
        raise _fail(f"cannot read {given!r}: {_os_reason(exc)}", given) from exc
    if stat.S_ISREG(top.st_mode):
        kind: Literal["directory", "file"] = "file"
        listed: list[tuple[str, int]] = [(os.path.basename(given), top.st_size)]
        skipped: list[str] = []
    elif stat.S_ISDIR(top.st_mode):
        kind = "directory"
        listed, skipped = _walk(root, top)
    else:
        raise _fail(f"{given!r} is neither a regular file nor a directory", given)

    total = sum(size for _, size in listed)
    done = 0
    entries = []
    for rel, listed_size in listed:
        full = given if kind == "file" else os.path.join(root, rel)

        def step(n: int, rel: str = rel) -> None:
            nonlocal done
            done += n
            if progress is not None:
                progress(done, total, rel)

        sha, size = sha256_file(full, progress=step)
        if size != listed_size:
            raise _fail(
                f"{full!r} changed while it was scanned ({listed_size} bytes when listed, {size} when "
                "hashed); scan again once nothing writes to it",
                full,
            )
        if size == 0 and progress is not None:
            progress(done, total, rel)
        entries.append(FileEntry(path=rel, size=size, sha256=sha))
    return ScanResult(root=root, kind=kind, entries=entries, skipped=sorted(skipped, key=path_bytes))


def _walk(root: str, top: os.stat_result) -> tuple[list[tuple[str, int]], list[str]]:
    """(relative name, size) of every regular file below root, sorted by name bytes, and skipped names.

    Depth-first with an explicit stack (deep trees do not hit Python's
    recursion limit); a directory is listed in full and closed before its
    children are entered, so open descriptors do not grow with depth.
    """
    files: list[tuple[str, int]] = []
    skipped: list[str] = []
    # Directories on the current path, by identity: meeting one again below itself is a loop.
    ancestors: dict[tuple[int, int], str] = {(top.st_dev, top.st_ino): "."}
    stack: list[tuple[list[os.DirEntry[str]], str, tuple[int, int]]] = [
        (_list_dir(root, "."), "", (top.st_dev, top.st_ino))
    ]
    while stack:
        children, prefix, key = stack[-1]
        if not children:
            stack.pop()
            del ancestors[key]
            continue
        child = children.pop()
        rel = prefix + child.name
        if len(rel) > MAX_PATH_CHARS:
            raise _fail(f"{rel!r} is longer than {MAX_PATH_CHARS} characters, the most a manifest holds", rel)
        info = _stat(child, rel)
        if info is None or not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            skipped.append(rel)
        elif stat.S_ISREG(info.st_mode):
            files.append((rel, info.st_size))
            if len(files) > MAX_FILES:
                raise _fail(f"{root!r} holds more than {MAX_FILES:,} files, the most a manifest holds", root)
        else:
            ident = (info.st_dev, info.st_ino)
            if ident in ancestors:
                raise _fail(
                    f"directory loop: {rel!r} is the directory {ancestors[ident]!r} again "
                    "(a symlink points to a directory above itself); remove or replace that symlink",
                    rel,
                )
            ancestors[ident] = rel
            stack.append((_list_dir(child.path, rel), rel + "/", ident))
    files.sort(key=lambda item: path_bytes(item[0]))
    return files, skipped


def _list_dir(path: str, rel: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError as exc:
        raise _fail(f"cannot list directory {rel!r} ({path!r}): {_os_reason(exc)}", rel) from exc


def _stat(child: os.DirEntry[str], rel: str) -> os.stat_result | None:
    """The followed stat of a directory entry; None for a dangling symlink (``find -L`` skips it)."""
    try:
        return child.stat(follow_symlinks=True)
    except FileNotFoundError:
        if child.is_symlink():
            return None
        raise _fail(f"{rel!r} vanished while it was scanned", rel) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _fail(
                f"symlink loop: {rel!r} leads back to itself through symlinks ({_os_reason(exc)}); "
                "remove or replace that symlink",
                rel,
            ) from exc
        raise _fail(f"cannot read {rel!r}: {_os_reason(exc)}", rel) from exc

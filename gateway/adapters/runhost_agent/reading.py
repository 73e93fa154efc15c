"""Reading part of one regular file as the job's user, bounded in bytes (job logs, outputs)."""

from __future__ import annotations

import base64
import errno
import os
import stat
from typing import Any

from ._common import BLOCK_BYTES, RefusedPath, check_inside, kind_of, pseudo_root, reason


def read_file(
    path: str,
    *,
    max_bytes: int,
    offset_bytes: int | None = None,
    tail_lines: int | None = None,
    inside: str | None = None,
) -> dict[str, Any]:
    """Read part of one regular file: ``max_bytes`` from ``offset_bytes``, or its last ``tail_lines`` lines.

    Returns ``{"path", "exists", "size_bytes", "offset_bytes", "data_b64", "error"}``; ``exists`` is
    False (no error) when the file is not there yet. ``inside``: the file must sit under that directory,
    reached without a symlink (a job's outputs). ``error`` says why nothing was read otherwise.
    """
    answer: dict[str, Any] = {
        "path": path,
        "exists": False,
        "size_bytes": 0,
        "offset_bytes": 0,
        "data_b64": "",
    }
    try:
        fd = _open_regular(path, inside=inside)
    except FileNotFoundError:
        return {**answer, "error": None}
    except RefusedPath as exc:
        return {**answer, "exists": True, "error": str(exc)}
    except OSError as exc:
        return {**answer, "exists": exc.errno != errno.ENOENT, "error": reason(exc)}
    with os.fdopen(fd, "rb", buffering=0) as handle:
        size = os.fstat(fd).st_size
        try:
            if offset_bytes is not None:
                start = min(max(offset_bytes, 0), size)
                handle.seek(start)
                data = _read_upto(handle, max_bytes)
            else:
                start, data = _tail(handle, size, tail_lines or 200, max_bytes)
        except OSError as exc:
            return {**answer, "exists": True, "size_bytes": size, "error": reason(exc)}
    return {
        "path": path,
        "exists": True,
        "size_bytes": size,
        "offset_bytes": start,
        "data_b64": base64.b64encode(data).decode("ascii"),
        "error": None,
    }


def _open_regular(path: str, *, inside: str | None) -> int:
    """An fd of ``path`` opened read-only, non-blocking; RefusedPath unless it is a regular file."""
    if not os.path.isabs(path):
        raise RefusedPath(f"{path} is not an absolute path")
    root = pseudo_root(path)
    if root is not None:
        raise RefusedPath(f"{path} is under {root}, which holds no job output; it is never read")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if inside is not None:
        check_inside(path, inside)
        flags |= os.O_NOFOLLOW
    info = os.stat(path)  # FileNotFoundError passes up: not written yet
    if not stat.S_ISREG(info.st_mode):
        raise RefusedPath(f"{path} is not a regular file ({kind_of(info.st_mode)}); it is never opened")
    fd = os.open(path, flags)  # O_NONBLOCK: should it have become a fifo since the stat, open() returns
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RefusedPath(f"{path} is not a regular file; it is never read")
    return fd


def _read_upto(handle: Any, max_bytes: int) -> bytes:
    chunks, left = [], max_bytes
    while left > 0:
        chunk = handle.read(min(left, BLOCK_BYTES))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _tail(handle: Any, size: int, lines: int, max_bytes: int) -> tuple[int, bytes]:
    """Read backwards in blocks until ``lines`` newlines are found or ``max_bytes`` are read."""
    position, data = size, b""
    while position > 0 and data.count(b"\n") <= lines and size - position < max_bytes:
        step = min(BLOCK_BYTES, position, max_bytes - (size - position))
        position -= step
        handle.seek(position)
        data = handle.read(step) + data
    text = b"".join(data.splitlines(keepends=True)[-lines:])
    return size - len(text), text

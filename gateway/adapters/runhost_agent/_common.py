"""What every agent operation shares: the refused-path error, pseudo file systems, hashing, reasons.

Standard library only, like the whole agent (``gateway.adapters.runhost_agent``).
"""

from __future__ import annotations

import hashlib
import os
import stat

PSEUDO_ROOTS = ("/proc", "/sys", "/dev")  # files there are not job output, whatever they claim
BLOCK_BYTES = 64 * 1024
HASH_BUFFER_BYTES = 1 << 20


class RefusedPath(Exception):
    """A path the run host never reads (pseudo file systems, non-regular files, outside a root)."""


def pseudo_root(path: str) -> str | None:
    """The pseudo file system (``/proc``, ``/sys``, ``/dev``) ``path`` resolves into, or None."""
    real = os.path.realpath(path)
    return next((r for r in PSEUDO_ROOTS if real == r or real.startswith(r + "/")), None)


def reason(exc: OSError) -> str:
    """The words of an OSError (its strerror), else the error itself."""
    return exc.strerror or str(exc)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("a fifo", "a socket", "a device", "a directory")."""
    for test, word in (
        (stat.S_ISFIFO, "a fifo"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return word
    return "not a regular file"


def check_inside(path: str, root: str) -> None:
    """RefusedPath unless ``path`` is below ``root`` and no component from ``root`` down is a symlink."""
    rel = os.path.relpath(path, root)
    if rel == "." or rel.startswith("../") or rel == "..":
        raise RefusedPath(f"{path} is not inside {root}")
    current = root
    for part in rel.split("/"):
        current = os.path.join(current, part)
        if stat.S_ISLNK(os.lstat(current).st_mode):
            raise RefusedPath(f"{path} is reached through a symlink ({current}); it is not read")


def sha256_file(path: str) -> tuple[str, int]:
    """(sha256, size in bytes) of regular file ``path``, opened without following a symlink."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RefusedPath("not a regular file")
        digest, size = hashlib.sha256(), 0
        view = memoryview(bytearray(HASH_BUFFER_BYTES))
        while n := handle.readinto(view):
            digest.update(view[:n])
            size += n
    return digest.hexdigest(), size

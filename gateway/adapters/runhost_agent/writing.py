"""Writing and removing single files as the job's user, and checking what that user may do."""

from __future__ import annotations

import base64
import contextlib
import os
import stat
from typing import Any

from ._common import pseudo_root, reason


def write_file(path: str, *, data_b64: str, mode: int = 0o644) -> dict[str, Any]:
    """Write ``path`` atomically (a new temporary file beside it, then a rename); parents made 0755.

    The temporary file is created exclusively and never through a symlink. Returns {"error": None}
    or {"error": reason}.
    """
    data = base64.b64decode(data_b64)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return {"error": f"cannot write {path}: {reason(exc)}"}
    return {"error": None}


def remove_file(path: str) -> dict[str, Any]:
    """Remove ``path`` when it is a regular file (never a directory; a symlink itself, not its
    target); gone already is no error. Returns {"error": None} or {"error": reason}."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"error": None}
    except OSError as exc:
        return {"error": f"cannot remove {path}: {reason(exc)}"}
    if stat.S_ISDIR(info.st_mode):
        return {"error": f"{path} is a directory; only files are removed"}
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return {"error": f"cannot remove {path}: {reason(exc)}"}
    return {"error": None}


def writable_dir(path: str) -> dict[str, Any]:
    """Whether this user may create files in directory ``path``: {"error": None} or why not."""
    if not os.path.isabs(path):
        return {"error": f"{path} is not an absolute path"}
    root = pseudo_root(path)
    if root is not None:
        return {"error": f"{path} is under {root}, a pseudo file system; job output cannot go there"}
    if not os.path.isdir(path):
        return {"error": f"directory {path} does not exist"}
    if not os.access(path, os.W_OK | os.X_OK):
        return {"error": f"directory {path} is not writable by this user"}
    return {"error": None}


def readable_file(path: str) -> dict[str, Any]:
    """Whether this user may read regular file ``path`` (opened, never read): {"error": None} or why not."""
    if not os.path.isabs(path):
        return {"error": f"{path} is not an absolute path"}
    root = pseudo_root(path)
    if root is not None:
        return {"error": f"{path} is under {root}, a pseudo file system"}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return {"error": f"cannot open {path}: {reason(exc)}"}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"error": f"{path} is not a regular file"}
    finally:
        os.close(fd)
    return {"error": None}

"""Retention's work inside a run directory as the job's user: measuring, digesting and deleting.

Every path is named relative to the run directory and reached without a symlink.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import Any

from ._common import RefusedPath, check_inside, kind_of, pseudo_root, reason, sha256_file


def _root_dir(root: str) -> None:
    """RefusedPath unless ``root`` is an absolute, real directory (not a symlink), outside /proc etc."""
    if not os.path.isabs(root):
        raise RefusedPath(f"{root} is not an absolute path")
    if pseudo_root(root) is not None:
        raise RefusedPath(f"{root} is under a pseudo file system")
    info = os.lstat(root)
    if stat.S_ISLNK(info.st_mode):
        raise RefusedPath(f"{root} is a symlink; a run directory is never reached through one")
    if not stat.S_ISDIR(info.st_mode):
        raise RefusedPath(f"{root} is not a directory")


def _target(root: str, rel: str) -> str:
    """The path ``rel`` names below ``root`` ("." is root itself), reached without a symlink."""
    if rel == ".":
        _root_dir(root)
        return root
    if rel.startswith("/") or ".." in rel.split("/"):
        raise RefusedPath(f"{rel} is not a path inside {root}")
    _root_dir(root)
    path = os.path.join(root, rel)
    check_inside(path, root)
    return path


def _walk_plain(top: str) -> list[tuple[str, os.stat_result]]:
    """Every entry below directory ``top`` (relative path, lstat), never descending through a symlink."""
    found: list[tuple[str, os.stat_result]] = []
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as entries:
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                info = entry.stat(follow_symlinks=False)
                found.append((rel, info))
                if stat.S_ISDIR(info.st_mode):
                    pending.append(rel)
    return sorted(found)


def measure_paths(root: str, *, paths: list[str], digest: bool = True) -> dict[str, Any]:
    """Size and digest of each of ``paths`` (relative to run directory ``root``; "." is all of it).

    A file's digest is its sha256; a directory's is the sha256 of its sorted listing, one line
    ``path<TAB>kind<TAB>size<TAB>sha256`` per entry (a symlink is listed with its target, never
    followed). Returns ``{"paths": [{"rel", "exists", "kind", "bytes", "files", "sha256", "error"}]}``.
    """
    answers = []
    for rel in paths:
        answer: dict[str, Any] = {"rel": rel, "exists": False, "kind": None, "bytes": 0, "files": 0}
        try:
            path = _target(root, rel)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                sha, size = sha256_file(path) if digest else ("", info.st_size)
                answer.update(exists=True, kind="file", bytes=size, files=1, sha256=sha)
            elif stat.S_ISDIR(info.st_mode):
                lines, size, files = [], 0, 0
                for sub, sub_info in _walk_plain(path):
                    if stat.S_ISREG(sub_info.st_mode):
                        sha = sha256_file(os.path.join(path, sub))[0] if digest else ""
                        lines.append(f"{sub}\tfile\t{sub_info.st_size}\t{sha}\n")
                        size += sub_info.st_size
                        files += 1
                    elif stat.S_ISLNK(sub_info.st_mode):
                        lines.append(f"{sub}\tlink\t0\t{os.readlink(os.path.join(path, sub))}\n")
                    elif stat.S_ISDIR(sub_info.st_mode):
                        lines.append(f"{sub}\tdir\t0\t\n")
                listing = hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()
                answer.update(exists=True, kind="dir", bytes=size, files=files, sha256=listing)
            else:
                answer.update(exists=True, kind="other", error=f"{rel} is {kind_of(info.st_mode)}")
        except FileNotFoundError:
            pass
        except RefusedPath as exc:
            answer.update(exists=True, error=str(exc))
        except OSError as exc:
            answer.update(exists=exc.errno != errno.ENOENT, error=reason(exc))
        answers.append(answer)
    return {"paths": answers}


def measure_dirs(roots: list[str]) -> dict[str, Any]:
    """Bytes and regular files under each run directory (no symlink followed, nothing hashed).

    Returns ``{"dirs": [[root, exists, bytes, files, error or None], ...]}``.
    """
    answers: list[list[Any]] = []
    for root in roots:
        try:
            _root_dir(root)
            entries = _walk_plain(root)
        except FileNotFoundError:
            answers.append([root, False, 0, 0, None])
            continue
        except (RefusedPath, OSError) as exc:
            answers.append([root, True, 0, 0, str(exc) if isinstance(exc, RefusedPath) else reason(exc)])
            continue
        regular = [info.st_size for _, info in entries if stat.S_ISREG(info.st_mode)]
        answers.append([root, True, sum(regular), len(regular), None])
    return {"dirs": answers}


def remove_path(root: str, *, rel: str, kind: str) -> dict[str, Any]:
    """Delete ``rel`` below run directory ``root`` ("." with kind "dir": the directory itself).

    Never through a symlink: every component from ``root`` down is checked, a file is unlinked only
    when it is still a regular file, and a directory is removed by ``shutil.rmtree``, which on Linux
    works on file descriptors and unlinks a symlink inside without following it. Returns
    ``{"removed": bool, "missing": bool, "error": None or why}``; a path already gone is ``missing``.
    """
    import shutil

    try:
        path = _target(root, rel)
        info = os.lstat(path)
    except FileNotFoundError:
        return {"removed": False, "missing": True, "error": None}
    except (RefusedPath, OSError) as exc:
        return {"removed": False, "missing": False, "error": str(exc)}
    try:
        if kind == "file":
            if not stat.S_ISREG(info.st_mode):
                return {"removed": False, "missing": False, "error": f"{rel} is no longer a regular file"}
            os.unlink(path)
        elif kind == "dir":
            if not stat.S_ISDIR(info.st_mode) or not shutil.rmtree.avoids_symlink_attacks:
                return {
                    "removed": False,
                    "missing": False,
                    "error": f"{rel} is not a directory it may remove",
                }
            if rel == ".":
                return _empty_then_remove(path)
            shutil.rmtree(path)
        else:
            return {"removed": False, "missing": False, "error": f"unknown kind {kind!r}"}
    except FileNotFoundError:
        return {"removed": False, "missing": True, "error": None}
    except OSError as exc:
        return {"removed": False, "missing": False, "error": f"cannot delete {rel}: {reason(exc)}"}
    return {"removed": True, "missing": False, "error": None}


def _empty_then_remove(root: str) -> dict[str, Any]:
    """Delete everything in run directory ``root``, then ``root`` itself. Its parent (the gateway's
    runs_dir) may not be this user's to change: then the empty directory stays and ``emptied`` says
    so, for the gateway to remove (``LocalRunHost.remove_path``)."""
    import shutil

    with os.scandir(root) as entries:
        names = [entry.name for entry in entries]
    for name in names:
        child = os.path.join(root, name)
        if stat.S_ISDIR(os.lstat(child).st_mode):
            shutil.rmtree(child)
        else:
            os.unlink(child)  # a file, or a symlink itself (never what it points at)
    try:
        os.rmdir(root)
    except PermissionError:
        return {"removed": True, "missing": False, "error": None, "emptied": True}
    return {"removed": True, "missing": False, "error": None}

"""Finding and hashing a run's output files (globs below its directory, never through a symlink)."""

from __future__ import annotations

import glob
import os
import stat
from typing import Any

from ._common import RefusedPath, sha256_file


def scan_outputs(run_dir: str, *, patterns: list[str], max_files: int) -> dict[str, Any]:
    """Hash the regular files under ``run_dir`` that match ``patterns`` (globs, ``**`` recursive).

    Symlinks, and anything reached through one, are skipped, as are fifos, sockets and devices.
    Returns ``{"files": [[relative path, size_bytes, sha256], ...] sorted, "skipped": N,
    "truncated": bool, "errors": [...]}``.
    """
    matched: set[str] = set()
    skipped: set[str] = set()
    truncated = False
    for pattern in patterns:
        for rel in glob.iglob(pattern, root_dir=run_dir, recursive=True):
            if rel in matched or rel in skipped:
                continue
            kind = _plain_kind(run_dir, rel)
            if kind == "file":
                matched.add(rel)
            elif kind != "directory":
                skipped.add(rel)
            if len(matched) > max_files:
                truncated = True
                break
        if truncated:
            break
    files, errors = [], []
    for rel in sorted(matched)[:max_files]:
        try:
            sha, size = sha256_file(os.path.join(run_dir, rel))
        except (OSError, RefusedPath) as exc:
            errors.append(f"{rel}: {exc.strerror if isinstance(exc, OSError) else exc}")
            continue
        files.append([rel, size, sha])
    return {"files": files, "skipped": len(skipped), "truncated": truncated, "errors": errors}


def _plain_kind(root: str, rel: str) -> str:
    """ "file" for a regular file reached without symlinks, "directory", or "other"."""
    path = root
    info = None
    for part in rel.split("/"):
        path = os.path.join(path, part)
        try:
            info = os.lstat(path)
        except OSError:
            return "other"
        if stat.S_ISLNK(info.st_mode):
            return "other"
    if info is None:
        return "other"
    if stat.S_ISREG(info.st_mode):
        return "file"
    return "directory" if stat.S_ISDIR(info.st_mode) else "other"

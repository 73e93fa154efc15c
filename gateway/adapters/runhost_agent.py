"""File work on the machine where jobs run, done with the job's OS user's own permissions.

The local run host (``gateway.adapters.runhost_local``) calls these
functions in its own process when the job's user is the gateway's own, and
otherwise runs this file as that user (``runuser -u USER -- python3 -I -S``)
with one JSON request on stdin and one JSON answer on stdout, so that the
kernel, not the gateway, decides what may be read: a job's user gets back
only bytes that user could read.

Standard library only, and no import of the gateway: the file also runs as a
program on a host where the gateway is not installed (an SSH submit host).

Every read is bounded: only regular files are opened (a FIFO, a device or a
socket is refused before it could block), never under ``/proc``, ``/sys`` or
``/dev``, at most ``max_bytes`` per call. Every answer is JSON-ready; bytes
travel as base64. Errors a caller should show (no such file, permission
denied, not a regular file) are part of the answer, not exceptions.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import glob
import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Callable
from typing import Any

PSEUDO_ROOTS = ("/proc", "/sys", "/dev")  # files there are not job output, whatever they claim
BLOCK_BYTES = 64 * 1024
HASH_BUFFER_BYTES = 1 << 20


class RefusedPath(Exception):
    """A path the run host never reads (pseudo file systems, non-regular files, outside a root)."""


# -- reading ---------------------------------------------------------------------------------


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
        return {**answer, "exists": exc.errno != errno.ENOENT, "error": _reason(exc)}
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
            return {**answer, "exists": True, "size_bytes": size, "error": _reason(exc)}
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
    root = _pseudo_root(path)
    if root is not None:
        raise RefusedPath(f"{path} is under {root}, which holds no job output; it is never read")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if inside is not None:
        _check_inside(path, inside)
        flags |= os.O_NOFOLLOW
    info = os.stat(path)  # FileNotFoundError passes up: not written yet
    if not stat.S_ISREG(info.st_mode):
        raise RefusedPath(f"{path} is not a regular file ({_kind(info.st_mode)}); it is never opened")
    fd = os.open(path, flags)  # O_NONBLOCK: should it have become a fifo since the stat, open() returns
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RefusedPath(f"{path} is not a regular file; it is never read")
    return fd


def _check_inside(path: str, root: str) -> None:
    """RefusedPath unless ``path`` is below ``root`` and no component from ``root`` down is a symlink."""
    rel = os.path.relpath(path, root)
    if rel == "." or rel.startswith("../") or rel == "..":
        raise RefusedPath(f"{path} is not inside {root}")
    current = root
    for part in rel.split("/"):
        current = os.path.join(current, part)
        if stat.S_ISLNK(os.lstat(current).st_mode):
            raise RefusedPath(f"{path} is reached through a symlink ({current}); it is not read")


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


# -- outputs -----------------------------------------------------------------------------------


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
            sha, size = _sha256(os.path.join(run_dir, rel))
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


def _sha256(path: str) -> tuple[str, int]:
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


# -- writing -----------------------------------------------------------------------------------


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
        return {"error": f"cannot write {path}: {_reason(exc)}"}
    return {"error": None}


def remove_file(path: str) -> dict[str, Any]:
    """Remove ``path`` when it is a regular file (never a directory; a symlink itself, not its
    target); gone already is no error. Returns {"error": None} or {"error": reason}."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"error": None}
    except OSError as exc:
        return {"error": f"cannot remove {path}: {_reason(exc)}"}
    if stat.S_ISDIR(info.st_mode):
        return {"error": f"{path} is a directory; only files are removed"}
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return {"error": f"cannot remove {path}: {_reason(exc)}"}
    return {"error": None}


def writable_dir(path: str) -> dict[str, Any]:
    """Whether this user may create files in directory ``path``: {"error": None} or why not."""
    if not os.path.isabs(path):
        return {"error": f"{path} is not an absolute path"}
    root = _pseudo_root(path)
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
    root = _pseudo_root(path)
    if root is not None:
        return {"error": f"{path} is under {root}, a pseudo file system"}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return {"error": f"cannot open {path}: {_reason(exc)}"}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"error": f"{path} is not a regular file"}
    finally:
        os.close(fd)
    return {"error": None}


# -- python environments -------------------------------------------------------------------------


def python_env(venv: str) -> dict[str, Any]:
    """The packages installed in ``venv``, read from their metadata files (no process starts).

    Reads every ``*.dist-info`` and ``*.egg-info`` under ``venv/lib/python*/site-packages`` (and
    ``lib64/...`` when it is another directory): Name and Version from METADATA or PKG-INFO, else
    from the entry's name. Returns ``{"venv", "python": "3.11" or None, "packages": count,
    "packages_sha256": sha256 of the sorted lines "name==version\\n" (names normalised per PEP 503)}``
    or ``{"venv", "error"}``. Never raises.
    """
    try:
        return _python_env(venv)
    except OSError as exc:  # a venv that changes under us, a directory we may not list
        return {"venv": venv, "error": f"cannot read {venv}: {_reason(exc)}"}


def _python_env(venv: str) -> dict[str, Any]:
    if not os.path.isdir(venv):
        return {"venv": venv, "error": f"{venv} is not a directory"}
    found: dict[str, str] = {}
    for lib in ("lib", "lib64"):
        for site in sorted(glob.glob(os.path.join(glob.escape(venv), lib, "python*", "site-packages"))):
            if os.path.isdir(site) and os.path.realpath(site) not in found:
                found[os.path.realpath(site)] = site
    if not found:
        return {"venv": venv, "error": f"no lib/python*/site-packages under {venv}: not a virtualenv?"}
    lines: set[str] = set()
    for site in found.values():
        for entry in os.scandir(site):
            if entry.name.endswith((".dist-info", ".egg-info")):
                name, version = _distribution(entry.path)
                if name:
                    lines.add(f"{re.sub(r'[-_.]+', '-', name).lower()}=={version}\n")
    known = [v for v in (_python_version(os.path.basename(os.path.dirname(s))) for s in found.values()) if v]
    return {
        "venv": venv,
        "python": max(known, key=lambda v: tuple(int(p) for p in v.split("."))) if known else None,
        "packages": len(lines),
        "packages_sha256": hashlib.sha256("".join(sorted(lines)).encode()).hexdigest(),
    }


def _python_version(dirname: str) -> str | None:
    match = re.fullmatch(r"python(\d+\.\d+)t?", dirname)
    return match.group(1) if match else None


def _distribution(path: str) -> tuple[str, str]:
    """(name, version) of one dist-info/egg-info entry; from its metadata, else its name."""
    meta = os.path.join(path, "METADATA" if path.endswith(".dist-info") else "PKG-INFO")
    if path.endswith(".egg-info") and not os.path.isdir(path):
        meta = path  # an egg-info file is the PKG-INFO itself
    headers: dict[str, str] = {}
    try:
        with open(meta, encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(200), fh, strict=False):  # headers come first; stop at the body
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if sep and key in ("Name", "Version") and key not in headers:
                    headers[key] = value.strip()
    except OSError:
        pass
    stem = os.path.basename(path).rsplit(".", 1)[0]
    name_part, _, rest = stem.partition("-")
    return headers.get("Name") or name_part, headers.get("Version") or rest.partition("-")[0]


# -- container image archives --------------------------------------------------------------------


def image_archive(path: str) -> dict[str, Any]:
    """The image in a ``podman save`` / ``docker save`` archive (docker-archive format): its id
    (``sha256:`` of its config blob, hashed here, as the runtime computes it), repo tags and layer
    count, read from the tar's ``manifest.json``. ``{"path", "error"}`` when it is not one image's
    archive or cannot be read. Never raises.
    """
    import tarfile

    if _pseudo_root(path) or not os.path.isfile(path):
        return {"path": path, "error": f"{path} is not a regular file"}
    try:
        with tarfile.open(path, "r:") as tar:
            manifest_member = tar.getmember("manifest.json")
            manifest_file = tar.extractfile(manifest_member)
            if manifest_file is None or manifest_member.size > HASH_BUFFER_BYTES:
                return {"path": path, "error": "manifest.json is not a small regular file"}
            manifest = json.loads(manifest_file.read())
            if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
                return {"path": path, "error": "the archive must hold exactly one image"}
            config_name = str(manifest[0].get("Config", ""))
            config_file = tar.extractfile(tar.getmember(config_name))
            if config_file is None:
                return {"path": path, "error": f"{config_name} is not a regular file"}
            digest = hashlib.sha256()
            for block in iter(lambda: config_file.read(1 << 16), b""):
                digest.update(block)
    except KeyError as exc:
        return {"path": path, "error": f"not an image archive (podman save): no {exc.args[0]} in it"}
    except (OSError, tarfile.TarError, ValueError) as exc:
        return {"path": path, "error": f"cannot read {path} as an image archive: {exc}"}
    tags = manifest[0].get("RepoTags") or []
    return {
        "path": path,
        "image_id": "sha256:" + digest.hexdigest(),
        "tags": [str(t) for t in tags][:32],
        "layers": len(manifest[0].get("Layers") or []),
    }


# -- retention: measuring and deleting inside a run directory ------------------------------------


def _root_dir(root: str) -> None:
    """RefusedPath unless ``root`` is an absolute, real directory (not a symlink), outside /proc etc."""
    if not os.path.isabs(root):
        raise RefusedPath(f"{root} is not an absolute path")
    if _pseudo_root(root) is not None:
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
    _check_inside(path, root)
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
                sha, size = _sha256(path) if digest else ("", info.st_size)
                answer.update(exists=True, kind="file", bytes=size, files=1, sha256=sha)
            elif stat.S_ISDIR(info.st_mode):
                lines, size, files = [], 0, 0
                for sub, sub_info in _walk_plain(path):
                    if stat.S_ISREG(sub_info.st_mode):
                        sha = _sha256(os.path.join(path, sub))[0] if digest else ""
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
                answer.update(exists=True, kind="other", error=f"{rel} is {_kind(info.st_mode)}")
        except FileNotFoundError:
            pass
        except RefusedPath as exc:
            answer.update(exists=True, error=str(exc))
        except OSError as exc:
            answer.update(exists=exc.errno != errno.ENOENT, error=_reason(exc))
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
            answers.append([root, True, 0, 0, str(exc) if isinstance(exc, RefusedPath) else _reason(exc)])
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
        return {"removed": False, "missing": False, "error": f"cannot delete {rel}: {_reason(exc)}"}
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


# -- the program ---------------------------------------------------------------------------------


def _pseudo_root(path: str) -> str | None:
    """The pseudo file system (``/proc``, ``/sys``, ``/dev``) ``path`` resolves into, or None."""
    real = os.path.realpath(path)
    return next((r for r in PSEUDO_ROOTS if real == r or real.startswith(r + "/")), None)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _kind(mode: int) -> str:
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


OPERATIONS: dict[str, Callable[..., Any]] = {
    "read_file": read_file,
    "scan_outputs": scan_outputs,
    "write_file": write_file,
    "remove_file": remove_file,
    "writable_dir": writable_dir,
    "readable_file": readable_file,
    "python_env": python_env,
    "image_archive": image_archive,
    "measure_paths": measure_paths,
    "measure_dirs": measure_dirs,
    "remove_path": remove_path,
}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """One request ``{"op": name, "args": {...}}`` -> ``{"ok": true, "result": ...}`` or an error."""
    op = OPERATIONS.get(request.get("op", ""))
    if op is None:
        return {"ok": False, "error": f"unknown operation {request.get('op')!r}"}
    try:
        return {"ok": True, "result": op(**request.get("args", {}))}
    except (TypeError, ValueError, RefusedPath, OSError) as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    """Answer the one JSON request on stdin (2**20 characters read at most) with one JSON line on stdout.

    Returns the exit status: 0 when the request was read (its own errors are in the answer), 2 when it
    was not JSON.
    """
    try:
        request = json.loads(sys.stdin.read(1 << 20))
    except ValueError as exc:
        print(json.dumps({"ok": False, "error": f"bad request: {exc}"}))
        return 2
    print(json.dumps(handle(request)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

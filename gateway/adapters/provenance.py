"""What a run's code and environment were at submission: git state, venv packages, image digest.

Three readers, each returning a JSON-ready dict for the run record:

- ``code_info(directory)``: the git work tree holding ``directory`` (repo, commit, branch,
  dirty, a hash of the uncommitted changes). git runs through the command runner only.
- ``python_env_info(venv)``: the packages installed in a virtual environment, read from
  their metadata files; no process starts.
- ``image_info(ref)``: a container image's digest, from an ``@sha256:`` reference or by
  hashing a local image file (cached by path, size, mtime and inode).

None of them raises for a missing or odd input: ``code_info`` answers None, the other two
put an ``"error"`` in their dict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway.adapters.files import sha256_stream
from gateway.adapters.runner import CommandRunner, LocalRunner
from gateway.errors import CommandError

# safe.directory=*: the gateway may run as root over a user's repo, which git refuses since 2.35.4.
# Repo config can name programs git would run (fsmonitor hook, diff drivers, textconv); the first
# is switched off here and the others by --no-ext-diff/--no-textconv. Clean filters (git-lfs) can
# still run on modified files: pass ``as_user`` to run git with the repo owner's rights.
_GIT = ("git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false")
_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_GIT_TIMEOUT_S = 60.0
_DIGEST_REF = re.compile(r"@sha256:([0-9a-fA-F]{64})$")
_CACHE_MAX_ENTRIES = 1000


# ---------------------------------------------------------------- code


def code_info(
    directory: str, *, runner: CommandRunner | None = None, as_user: str | None = None
) -> dict[str, Any] | None:
    """The git state of the work tree holding ``directory``, or None when there is none.

    None when ``directory`` is not inside a git work tree (a bare repo, a ``.git`` directory,
    a missing path), or git cannot be run or times out. Otherwise::

        {"repo": remote.origin.url (credentials removed) or the work tree's absolute top level,
         "commit": full HEAD sha, or None before the first commit,
         "branch": the checked-out branch (also before the first commit), None when detached,
         "dirty": tracked changes (staged or not) or untracked, not-ignored files,
         "diff_sha256": None when clean, else sha256 of ``git diff HEAD --binary`` (against the
                        empty tree before the first commit) followed by, for each untracked file
                        in sorted order, its path and the sha256 of its content,
         "untracked": the number of untracked, not-ignored files}

    ``as_user`` runs git as that OS user (needs root), which bounds what a repo's own config
    can make git run. Untracked files are read here, as the gateway's user; only regular files
    are read (a symlink counts by its target text, anything else by its kind).
    """
    if not directory:
        return None  # git -C "" would read the gateway's own working directory
    git = _git_output(runner or LocalRunner(), as_user)
    try:
        top = git(directory, "rev-parse", "--show-toplevel")
        if top is None or not top.strip():
            return None
        top = top.rstrip("\n")
        commit = git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        branch = git(top, "symbolic-ref", "--quiet", "--short", "HEAD")
        url = git(top, "config", "--get", "remote.origin.url")
        status = git(top, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all")
        if status is None:
            return None
        tracked_changed, untracked = _parse_status(status)
        dirty = tracked_changed or bool(untracked)
        diff_sha = None
        if dirty:
            base = commit.strip() if commit else git(top, "hash-object", "-t", "tree", "--stdin")
            if not base:
                return None
            diff = git(top, "diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", base.strip())
            if diff is None:
                return None
            diff_sha = _changes_sha256(diff, top, untracked)
    except CommandError:  # git missing, or it ran past its time (CommandTimeout)
        return None
    return {
        "repo": _strip_credentials(url.strip()) if url and url.strip() else os.path.abspath(top),
        "commit": commit.strip() if commit else None,
        "branch": branch.strip() if branch and branch.strip() else None,
        "dirty": dirty,
        "diff_sha256": diff_sha,
        "untracked": len(untracked),
    }


def _git_output(runner: CommandRunner, as_user: str | None) -> Callable[..., str | None]:
    def out(cwd: str, *args: str) -> str | None:
        """stdout of ``git -C cwd ARGS``, or None when git exits non-zero."""
        stdin = "" if "--stdin" in args else None
        result = runner.run(
            [*_GIT, "-C", cwd, *args], stdin=stdin, timeout_s=_GIT_TIMEOUT_S, env=_GIT_ENV, as_user=as_user
        )
        return result.stdout if result.returncode == 0 else None

    return out


def _parse_status(text: str) -> tuple[bool, list[str]]:
    """(any tracked change, untracked paths) from ``status --porcelain=v1 -z``."""
    fields = text.split("\0")
    tracked_changed, untracked = False, []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code == "??":
            untracked.append(path)
        elif code != "!!":
            tracked_changed = True
            if "R" in code or "C" in code:
                i += 1  # a rename or copy is followed by its source path
    return tracked_changed, sorted(untracked)


def _changes_sha256(diff: str, top: str, untracked: list[str]) -> str:
    # The runner decodes output as UTF-8 with replacement, so non-UTF-8 bytes in a diff hash as
    # U+FFFD: still deterministic, and any change of a line still changes the hash.
    digest = hashlib.sha256(diff.encode("utf-8", "surrogateescape"))
    for path in untracked:
        digest.update(b"\0untracked\0" + path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_untracked_content_id(os.path.join(top, path)).encode() + b"\n")
    return digest.hexdigest()


def _untracked_content_id(path: str) -> str:
    """sha256 of a regular file's bytes; ``symlink:TARGET`` or the kind for anything else."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return "symlink:" + os.readlink(path)
        if not stat.S_ISREG(info.st_mode):
            return "directory" if stat.S_ISDIR(info.st_mode) else "special"
        # O_NONBLOCK: a FIFO swapped in after the lstat must not block the submission
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable:{exc.strerror}"
    with os.fdopen(fd, "rb") as fh:
        return "sha256:" + sha256_stream(fh)[0]


def _strip_credentials(url: str) -> str:
    """``https://user:token@host/x`` -> ``https://host/x``; ``ssh://git:pw@h/x`` -> ``ssh://git@h/x``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or "@" not in parts.netloc:
        return url  # scp-like git@host:path, or a local path: nothing secret in it
    userinfo, _, host = parts.netloc.rpartition("@")
    # over http(s) a token often sits in the user name itself: drop the whole user part there
    netloc = host if parts.scheme in ("http", "https") else userinfo.partition(":")[0] + "@" + host
    return urlunsplit(parts._replace(netloc=netloc))


# ---------------------------------------------------------------- python environment


def python_env_info(venv: str) -> dict[str, Any]:
    """The packages installed in ``venv``, read from metadata files (no process starts).

    Reads every ``*.dist-info`` and ``*.egg-info`` under ``venv/lib/python*/site-packages``
    (and ``lib64/...`` when it is not the same directory): Name and Version from METADATA or
    PKG-INFO, else from the entry's name. Returns::

        {"venv": venv, "python": "3.11" (highest lib/pythonX.Y with site-packages) or None,
         "packages": number of distinct name==version lines,
         "packages_sha256": sha256 hex of the sorted, distinct lines "name==version\\n"
                            (names normalised per PEP 503, versions as written)}

    or ``{"venv": venv, "error": "..."}`` when ``venv`` is not a directory or has no
    site-packages. Never raises.
    """
    try:
        return _python_env_info(venv)
    except OSError as exc:  # a venv that changes under us, a directory we may not list
        return {"venv": venv, "error": f"cannot read {venv}: {exc.strerror or exc}"}


def _python_env_info(venv: str) -> dict[str, Any]:
    root = Path(venv)
    if not root.is_dir():
        return {"venv": venv, "error": f"{venv} is not a directory"}
    found: dict[str, Path] = {}
    for lib in ("lib", "lib64"):
        for site in sorted(root.glob(f"{lib}/python*/site-packages")):
            if site.is_dir() and os.path.realpath(site) not in found:
                found[os.path.realpath(site)] = site
    if not found:
        return {"venv": venv, "error": f"no lib/python*/site-packages under {venv}: not a virtualenv?"}
    lines: set[str] = set()
    for site in found.values():
        for entry in os.scandir(site):
            if entry.name.endswith((".dist-info", ".egg-info")):
                name, version = _distribution(Path(entry.path))
                if name:
                    lines.add(f"{re.sub(r'[-_.]+', '-', name).lower()}=={version}\n")
    known = [v for v in (_python_version(site.parent.name) for site in found.values()) if v]
    return {
        "venv": venv,
        "python": max(known, key=lambda v: tuple(int(p) for p in v.split("."))) if known else None,
        "packages": len(lines),
        "packages_sha256": hashlib.sha256("".join(sorted(lines)).encode()).hexdigest(),
    }


def _python_version(dirname: str) -> str | None:
    match = re.fullmatch(r"python(\d+\.\d+)t?", dirname)
    return match.group(1) if match else None


def _distribution(path: Path) -> tuple[str, str]:
    """(name, version) of one dist-info/egg-info entry; from its metadata, else its name."""
    meta = path / ("METADATA" if path.name.endswith(".dist-info") else "PKG-INFO")
    if path.name.endswith(".egg-info") and not path.is_dir():
        meta = path  # an egg-info file is the PKG-INFO itself
    headers: dict[str, str] = {}
    try:
        with meta.open(encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(200), fh, strict=False):  # headers come first; stop at the body
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if sep and key in ("Name", "Version") and key not in headers:
                    headers[key] = value.strip()
    except OSError:
        pass
    stem = path.name.rsplit(".", 1)[0]
    name_part, _, rest = stem.partition("-")
    return headers.get("Name") or name_part, headers.get("Version") or rest.partition("-")[0]


# ---------------------------------------------------------------- container image


def image_info(ref: str, *, cache_path: str | None = None) -> dict[str, Any]:
    """The digest of a container image.

    Returns ``{"image": ref, "digest": "sha256:<hex>" or None, "how": "reference" | "file" | None}``
    plus ``"error"`` when something is wrong; ``how`` is None exactly when ``digest`` is:

    - a ref ending in ``@sha256:<64 hex>`` gives that digest (lower-cased), ``how`` "reference";
    - an absolute path of a readable regular file (an Apptainer .sif) is hashed, ``how`` "file";
      with ``cache_path`` (a JSON file) the digest is kept under the path and reused while the
      file's size, mtime_ns and inode are unchanged, so a big image is hashed once;
    - anything else (a tag such as ``docker://python:3.11``) gives no digest and no error.

    A missing, unreadable or non-regular file is reported in ``"error"``; never raises.
    """
    match = _DIGEST_REF.search(ref)
    if match:
        return {"image": ref, "digest": "sha256:" + match.group(1).lower(), "how": "reference"}
    failed = {"image": ref, "digest": None, "how": None}
    if not os.path.isabs(ref):
        return failed
    try:
        info = os.stat(ref)
    except OSError as exc:
        return {**failed, "error": f"cannot read image file {ref}: {exc.strerror}"}
    if not stat.S_ISREG(info.st_mode):
        return {**failed, "error": f"image path {ref} is not a regular file"}
    key = {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "inode": info.st_ino}
    cache = _read_cache(cache_path) if cache_path else {}
    entry = cache.get(ref)
    if isinstance(entry, dict) and {k: entry.get(k) for k in key} == key and entry.get("digest"):
        return {"image": ref, "digest": entry["digest"], "how": "file"}
    try:
        with open(ref, "rb") as fh:
            digest = "sha256:" + sha256_stream(fh)[0]
            after = os.fstat(fh.fileno())
    except OSError as exc:
        return {**failed, "error": f"cannot read image file {ref}: {exc.strerror}"}
    if (after.st_size, after.st_mtime_ns, after.st_ino) != tuple(key.values()):
        return {**failed, "error": f"image file {ref} changed while it was being hashed"}
    if cache_path:
        cache.pop(ref, None)
        cache[ref] = {**key, "digest": digest}
        _write_cache(cache_path, dict(list(cache.items())[-_CACHE_MAX_ENTRIES:]))
    return {"image": ref, "digest": digest, "how": "file"}


def _read_cache(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: start again
    entries = data.get("entries") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}


def _write_cache(path: str, entries: dict[str, Any]) -> None:
    """Replace the cache file atomically; a cache that cannot be written only costs a re-hash."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "entries": entries}, fh)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)

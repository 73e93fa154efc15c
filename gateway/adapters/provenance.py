"""What a run's code and environment were at submission: git state, venv packages, image digest.

Two readers, each returning a JSON-ready dict for the run record (the third, a venv's packages,
reads the run host's files and lives with it: ``gateway.adapters.runhost_agent.python_env``):

- ``code_info(directory)``: the git work tree holding ``directory`` (repo, commit, branch,
  dirty, a hash of the uncommitted changes). git runs through the command runner only.
- ``image_info(ref)``: a container image's digest, from an ``@sha256:`` reference or by
  hashing a local image file (cached by path, size, mtime and inode).

Neither raises for a missing or odd input: ``code_info`` answers None, ``image_info`` puts an
``"error"`` in its dict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway.adapters.files import sha256_stream
from gateway.adapters.runner import CommandRunner, LocalRunner
from gateway.core.spec.lineage import image_ref_digest
from gateway.errors import CommandError

# safe.directory=*: the gateway may run as root over a user's repo, which git refuses since 2.35.4.
# Repo config can name programs git would run (fsmonitor hook, diff drivers, textconv); the first
# is switched off here and the others by --no-ext-diff/--no-textconv. Clean filters (git-lfs) can
# still run on modified files: pass ``as_user`` to run git with the repo owner's rights.
_GIT = ("git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false")
_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_GIT_TIMEOUT_S = 60.0
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
    digest = image_ref_digest(ref)
    if digest:
        return {"image": ref, "digest": digest, "how": "reference"}
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

"""Lock files: pinned requirements with hashes, as ``pip-compile --generate-hashes``, ``uv pip compile
--generate-hashes`` and ``uv export`` write them.

Every requirement is ``name==version`` with at least one ``--hash=sha256:...``; comments, blank
lines, line continuations and environment markers are read; options other than hashes
(``-e``, ``-r``, ``--index-url`` ...) and unpinned or unhashed requirements are refused, so that a
locked environment installs the same files everywhere (``pip install --require-hashes``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

MAX_LOCK_CHARS = 512 * 1024
MAX_PACKAGES = 2000
_REQ = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[A-Za-z0-9,._ -]*\])?\s*==\s*(?P<version>[A-Za-z0-9.+!_-]+)"
    r"\s*(?:;\s*(?P<marker>[^\\#]*?))?\s*$"
)
_HASH = re.compile(r"--hash[= ]sha256:(?P<hex>[0-9a-f]{64})")
# the build script carries the lock in a quoted here-document: its end word may not appear in it
HEREDOC_END = "GW_LOCK_END"


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares it: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class LockedPackage:
    name: str  # normalised
    version: str
    hashes: tuple[str, ...]  # sha256 hex digests of the files it may install
    marker: str | None = None


def parse_lock(text: str) -> list[LockedPackage]:
    """The packages a lock pins, sorted by name; ValueError naming the line that is not valid."""
    if len(text) > MAX_LOCK_CHARS:
        raise ValueError(f"the lock file has {len(text)} characters; at most {MAX_LOCK_CHARS}")
    if HEREDOC_END in text or "\x00" in text:
        raise ValueError(f"the lock file may not contain {HEREDOC_END!r} or NUL characters")
    logical: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined = (pending + line).strip()
        pending = ""
        if joined:
            logical.append((start, joined))
    if pending.strip():
        logical.append((start, pending.strip()))
    found: dict[str, LockedPackage] = {}
    for number, line in logical:
        hashes = tuple(m.group("hex") for m in _HASH.finditer(line))
        head = _HASH.sub("", line).strip()
        if head.startswith("-"):
            raise ValueError(
                f"line {number}: option {head.split()[0]!r} is not allowed in a lock; give only "
                "'name==version --hash=sha256:...' lines"
            )
        match = _REQ.fullmatch(head)
        if match is None:
            raise ValueError(
                f"line {number}: {head[:80]!r} is not pinned; every requirement is 'name==version' "
                "with --hash=sha256:... (pip-compile --generate-hashes, uv pip compile --generate-hashes)"
            )
        if not hashes:
            raise ValueError(
                f"line {number}: {match.group('name')} has no --hash=sha256:...; a lock pins files"
            )
        name = normalise(match.group("name"))
        if name in found:
            raise ValueError(f"line {number}: {name} is pinned twice")
        found[name] = LockedPackage(name, match.group("version"), hashes, match.group("marker") or None)
    if not found:
        raise ValueError("the lock file pins no package")
    if len(found) > MAX_PACKAGES:
        raise ValueError(f"the lock file pins {len(found)} packages; at most {MAX_PACKAGES}")
    return [found[name] for name in sorted(found)]


def lock_sha256(text: str) -> str:
    """sha256 (hex) of the lock's text as given."""
    return hashlib.sha256(text.encode()).hexdigest()


def lock_content(text: str, *, pip_sources: bool = False) -> dict[str, Any]:
    """A python version's content (what its digest covers): the lock, its sha256 and what it pins;
    ``pip_sources`` when its build may build pinned source archives. ValueError as ``parse_lock``."""
    content: dict[str, Any] = {
        "lock": text,
        "lock_sha256": lock_sha256(text),
        "locked": {p.name: p.version for p in parse_lock(text)},
    }
    if pip_sources:
        content["pip_sources"] = True
    return content

"""The site's advisory database: a directory of OSV JSON files on the gateway host, read bounded.

``OsvDirectory(path).load()`` reads every ``*.json`` below ``path`` (at most ``max_files``, each at
most ``max_bytes``) and parses each into a ``gateway.core.envs.advisories.Advisory``; a file that is
not one is named in ``problems`` and skipped. The parsed set is kept until a file's mtime or the
file count changes, so a scan does not re-read an unchanged database.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from gateway.core.envs.advisories import Advisory, parse_advisory


@dataclass
class AdvisorySet:
    advisories: list[Advisory] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    source: str | None = None  # the directory; None when the site keeps none


class OsvDirectory:
    def __init__(self, path: Path | None, *, max_files: int = 50_000, max_bytes: int = 1 << 20) -> None:
        self.path = path
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._key: tuple[int, float] | None = None
        self._cached = AdvisorySet()

    def load(self) -> AdvisorySet:
        """The advisories (and the files that could not be read); empty when no directory is set."""
        if self.path is None:
            return AdvisorySet()
        files: list[Path] = []
        newest = 0.0
        for root, _dirs, names in os.walk(self.path):
            for name in sorted(names):
                if name.endswith(".json") and len(files) < self.max_files:
                    path = Path(root) / name
                    files.append(path)
                    with contextlib.suppress(OSError):
                        newest = max(newest, path.stat().st_mtime)
        key = (len(files), newest)
        if key == self._key:
            return self._cached
        found = AdvisorySet(source=str(self.path))
        if not self.path.is_dir():
            found.problems.append(f"the advisory directory {self.path} does not exist")
        for path in files:
            try:
                if path.stat().st_size > self.max_bytes:
                    raise ValueError(f"over {self.max_bytes} bytes")
                found.advisories.append(parse_advisory(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, AttributeError, TypeError) as exc:
                found.problems.append(f"{path}: {exc}")
        self._key, self._cached = key, found
        return found

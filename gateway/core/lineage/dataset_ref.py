"""Dataset references, ``[project/]name@version``: the pattern and its parser.

Plain ``re`` and a dataclass, no pydantic, so that `gw` command modules can
check a reference without loading the spec models (``gateway.core.spec.lineage``
re-exports all of it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.core import names

VERSION_SELECTOR = rf"latest|{names.VERSION_NUMBER}|sha256:[0-9a-f]{{8,64}}"  # which version of a dataset
VERSION_SELECTOR_HELP = "latest, a number (3 or v3), or sha256: and 8-64 hex digits of the version's digest"
DATASET_REF = re.compile(
    r"(?:(?P<project>[A-Za-z0-9][A-Za-z0-9._-]{0,62})/)?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,62})"
    rf"@(?P<version>{VERSION_SELECTOR})"
)
# The same, as one JSON-schema pattern (no group names).
DATASET_REF_PATTERN = rf"(?:{names.NAME.pattern}/)?{names.NAME.pattern}@(?:{VERSION_SELECTOR})"
DATASET_REF_HELP = (
    "[project/]name@version, where version is 'latest', a number (3 or v3) or "
    "'sha256:' and 8-64 hex digits of the version's digest (e.g. tiny-text@latest, other/corpus@v2)"
)


@dataclass(frozen=True)
class DatasetRef:
    project: str | None  # None: the run's own project
    name: str
    version: str  # latest | <number> | sha256:<hex prefix>

    @property
    def number(self) -> int | None:
        """The version number a ``3`` or ``v3`` selector names; None for ``latest`` or a digest."""
        return int(self.version.removeprefix("v")) if self.version[:1] in "v0123456789" else None

    @property
    def digest_prefix(self) -> str | None:
        """The hex digits of a ``sha256:`` selector; None for ``latest`` or a number."""
        return self.version.removeprefix("sha256:") if self.version.startswith("sha256:") else None


def parse_dataset_ref(text: str) -> DatasetRef:
    """``[project/]name@version`` -> DatasetRef; ValueError saying what is valid."""
    match = DATASET_REF.fullmatch(text)
    if not match:
        if names.VERSION_ZERO.search(text):
            raise ValueError(f"dataset reference {text!r}: versions are numbered from 1")
        raise ValueError(f"dataset reference {text!r} is not valid; use {DATASET_REF_HELP}")
    version = match["version"]
    if version[:1] in "v0123456789":
        version = str(int(version.removeprefix("v")))
    return DatasetRef(match["project"], match["name"], version)

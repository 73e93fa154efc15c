"""The lineage parts of a run spec: dataset uses, output patterns, metrics files and code.

A dataset is named in a spec as ``[project/]name@version``: ``version`` is
``latest``, a number (``3`` or ``v3``) or a digest prefix (``sha256:`` and
8 to 64 hex digits). The project defaults to the run's own. The submission
resolves ``latest`` and records the exact version.

Outputs and metrics files are relative to the run directory (``$GW_RUN_DIR``):
outputs are glob patterns (``**`` crosses directories), metrics are files.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import field_validator

from gateway.core.described import NON_BLANK_LINE, anchored, documented
from gateway.core.lineage.dataset_ref import (
    DATASET_REF_HELP,
    DATASET_REF_PATTERN,
    VERSION_SELECTOR,
    VERSION_SELECTOR_HELP,
    DatasetRef,
    parse_dataset_ref,
)
from gateway.core.spec.parts import SHA256_HEX, _check_text, _Strict

MAX_OUTPUT_PATTERNS = 64
_REL_PATH = re.compile(r"[A-Za-z0-9._/*?\[\]+=@,-]{1,1024}")
_REL_PATH_HELP = "a path relative to the run directory: letters, digits, . _ / + = @ , - and glob * ? [ ]"


CodeText = Annotated[str, documented(pattern=NON_BLANK_LINE, maxLength=2048)]  # a repo URL or a branch
_DIGEST_REF = re.compile(r"@sha256:([0-9a-fA-F]{64})$")


def image_ref_digest(ref: str) -> str | None:
    """``sha256:<hex>`` (lower-cased) of an image reference pinned by digest (``name@sha256:...``)."""
    match = _DIGEST_REF.search(ref)
    return "sha256:" + match.group(1).lower() if match else None


def dataset_env_var(name: str) -> str:
    """The job's variable holding a dataset's path: ``GW_DATASET_<NAME>`` (upper case, ``_`` for others)."""
    return "GW_DATASET_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


def check_relative(value: str, what: str, *, glob: bool) -> str:
    """A path below the run directory (no '/', '..' or empty parts); globs only where allowed."""
    if not _REL_PATH.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not valid; use {_REL_PATH_HELP}")
    parts = value.split("/")
    if value.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{what} {value!r} must stay inside the run directory: no leading '/', '.' or '..'")
    if not glob and any(c in value for c in "*?["):
        raise ValueError(f"{what} {value!r} names one file; glob characters are for outputs")
    return value


class DatasetUse(_Strict):
    """A dataset a run reads: ``ref`` names the version, ``verify`` what the pre-flight checks.

    ``verify: exists`` (the default) checks the path is there and readable;
    ``verify: digest`` also checks every file against the version's manifest
    (and, for a directory, that no file was added or removed).
    """

    ref: Annotated[str, documented(pattern=anchored(DATASET_REF_PATTERN))]
    verify: Literal["exists", "digest"] = "exists"

    @field_validator("ref")
    @classmethod
    def _ref(cls, value: str) -> str:
        parse_dataset_ref(value)
        return value


class CodeRef(_Strict):
    """The code a run was submitted from (``gw submit`` fills it from git; or give it)."""

    repo: CodeText
    commit: Annotated[str, documented(pattern=r"^[0-9a-f]{7,64}$")] | None = None
    branch: CodeText | None = None
    dirty: bool = False
    diff_sha256: Annotated[str, documented(pattern=r"^[0-9a-f]{64}$")] | None = None
    untracked: int = 0

    @field_validator("repo", "branch")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None:
            _check_text(value, allow_newlines=False)
            if not value.strip() or len(value) > 2048:
                raise ValueError("must be 1-2048 characters")
        return value

    @field_validator("commit")
    @classmethod
    def _commit(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9a-f]{7,64}", value):
            raise ValueError(f"commit {value!r} is not a git object id (7-64 lower-case hex digits)")
        return value

    @field_validator("diff_sha256")
    @classmethod
    def _diff(cls, value: str | None) -> str | None:
        if value is not None and not SHA256_HEX.fullmatch(value):
            raise ValueError("must be 64 lower-case hex digits (sha256)")
        return value


IMAGE_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
__all__ = [
    "DATASET_REF_HELP",
    "DATASET_REF_PATTERN",
    "VERSION_SELECTOR",
    "VERSION_SELECTOR_HELP",
    "MAX_OUTPUT_PATTERNS",
    "CodeRef",
    "DatasetRef",
    "DatasetUse",
    "check_relative",
    "dataset_env_var",
    "parse_dataset_ref",
]

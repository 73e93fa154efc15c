"""The site evidence key on disk: loading the signer ``gw serve`` signs bundles with, and writing a
new key pair (``gw admin evidence-key generate``). The key's maths is
``gateway.core.evidence.signing``; this module only reads and writes its files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from gateway.core.evidence import signing
from gateway.errors import SpecError, SpecIssue

MAX_KEY_BYTES = 64 * 1024
SETTING = "evidence_signing_key"


def load_signer(path: Path | None) -> Callable[[bytes], bytes] | None:
    """The signer of the private key at ``path`` (None: bundles are unsigned).

    SpecError naming the setting when the file cannot be opened, is not a regular file, is readable
    by others than its owner's group (mode & 0o004), or holds no unencrypted Ed25519 private key.
    """
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise _bad(path, "is not a regular file")
            if info.st_mode & 0o004:
                raise _bad(path, f"is readable by everyone (mode {info.st_mode & 0o777:o}); chmod 600 it")
            pem = handle.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise _bad(path, f"cannot be read: {exc.strerror or exc}") from exc
    try:
        return signing.signer(pem)
    except ValueError as exc:
        raise _bad(path, f"holds no usable key: {exc}") from exc


def _bad(path: Path, why: str) -> SpecError:
    return SpecError(
        [
            SpecIssue(
                SETTING, f"the evidence signing key {path} {why} (gw admin evidence-key generate makes one)"
            )
        ],
        what="settings",
    )


def write_key_pair(path: Path) -> tuple[Path, str]:
    """Write a new Ed25519 key: ``path`` (the private key, 0600, never over an existing file) and
    ``path`` + ``.pub`` (the public key, 0644). Returns (the public key's path, the key id).
    OSError when either cannot be written (FileExistsError: one is there already)."""
    private, public = signing.generate_key()
    public_path = path.with_name(path.name + ".pub")
    if public_path.exists():
        raise FileExistsError(f"{public_path} exists already")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private)
    fd = os.open(public_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(public)
    return public_path, signing.key_id(public)

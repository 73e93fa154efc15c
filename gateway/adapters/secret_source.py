"""Where the gateway reads the value of a secret the site or a project holds: a file its own user
can read, or an environment variable of its own process (``gw serve``). The one place a held
secret's value is read (docs/access.md#site-and-project-secrets).

``problem`` checks a source without keeping anything; ``read`` returns the value's bytes (at most
``MAX_SECRET_BYTES``), which the caller hands straight to the run host and never stores. A file
must be a regular file (a FIFO or device is refused before it could block).
"""

from __future__ import annotations

import os
import stat

from gateway.core.site.secrets import MAX_SECRET_BYTES, HeldSecret


class SecretSourceError(Exception):
    """The value cannot be read; the message names the source, never holds the value."""


def _open(path: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SecretSourceError(f"gw serve cannot open {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SecretSourceError(f"{path} is not a regular file")
    return fd


def problem(secret: HeldSecret, *, check_env: bool = True) -> str | None:
    """None when the value can be read now (a file is opened, never read); else why not.
    ``check_env`` False: an environment source is not looked at (another process holds it)."""
    if secret.file is not None:
        try:
            os.close(_open(secret.file))
        except SecretSourceError as exc:
            return str(exc)
        return None
    if check_env and not os.environ.get(secret.env or ""):
        return f"gw serve has no (or an empty) environment variable {secret.env}"
    return None


def read(secret: HeldSecret) -> bytes:
    """The value; SecretSourceError when it cannot be read, is empty or is over the size limit."""
    if secret.file is not None:
        fd = _open(secret.file)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_SECRET_BYTES + 1)
        where = secret.file
    else:
        data = os.environb.get(os.fsencode(secret.env or ""), b"")
        where = f"environment variable {secret.env}"
    if not data:
        raise SecretSourceError(f"the value of secret {secret.name} ({where}) is empty or not set")
    if len(data) > MAX_SECRET_BYTES:
        raise SecretSourceError(
            f"the value of secret {secret.name} ({where}) is over {MAX_SECRET_BYTES} bytes"
        )
    return data

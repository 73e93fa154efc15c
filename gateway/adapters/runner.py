"""The one place the gateway starts programs.

A ``CommandRunner`` runs an argv (never a shell string) with optional stdin,
a time limit and extra environment, optionally as another OS user, and
returns what the program printed. ``LocalRunner`` runs it here (``runuser``
for another user, which needs root); an SSH runner runs it on a login node,
logging in as that user, and fits the same protocol, so adapters never know
which they have.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.errors import CommandError, CommandTimeout


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float


class CommandRunner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> CommandResult:
        """Run ``argv`` (as ``as_user`` when given); CommandTimeout past ``timeout_s``, CommandError
        if it cannot start."""
        ...


class LocalRunner:
    """Runs programs on this machine.

    Without ``as_user`` a program gets the gateway's environment plus ``env``.
    With ``as_user`` (another user: through ``runuser -u USER --``) it gets a
    clean login-like environment plus ``env``, so nothing of the gateway's
    leaks into a job that sbatch exports the environment to.
    """

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> CommandResult:
        """``CommandRunner.run``: a local process, never a shell; output decoded, bad bytes replaced.

        A non-zero exit is not an error here (the caller reads ``returncode`` and stderr). CommandError
        also when ``as_user`` has no account on this machine.
        """
        if as_user:
            # A job's environment starts clean, even as the gateway's own user: nothing of
            # the gateway's (database URL, tokens) may leak into it.
            full_env = {**_user_env(as_user), **(env or {})}
            if as_user != current_user():
                # runuser lives in /usr/sbin, which a user's PATH does not hold
                argv = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", as_user, "--", *argv]
        else:
            full_env = {**os.environ, **(env or {})}
        started = time.monotonic()
        try:
            proc = subprocess.run(
                list(argv),
                input=stdin,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                env=full_env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(f"{argv[0]} did not finish within {timeout_s:g} s") from exc
        except OSError as exc:
            raise CommandError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        return CommandResult(
            argv=tuple(argv),
            returncode=proc.returncode,
            stdout=proc.stdout,
            stderr=proc.stderr,
            duration_s=time.monotonic() - started,
        )


def current_user() -> str:
    """The name of the OS account this process runs as (its effective uid)."""
    return pwd.getpwuid(os.geteuid()).pw_name


def _user_env(user: str) -> dict[str, str]:
    try:
        entry = pwd.getpwnam(user)
    except KeyError as exc:
        raise CommandError(f"no OS user {user!r} on this host") from exc
    return {
        "HOME": entry.pw_dir,
        "USER": user,
        "LOGNAME": user,
        "SHELL": entry.pw_shell or "/bin/sh",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }

"""The command runner over SSH: programs run on a remote submit host, as the job's OS user.

``SshRunner`` fits ``CommandRunner`` (``gateway.adapters.runner``), so the
Slurm adapter and the run host use it exactly as they use the local runner:
an argv, stdin, a time limit, extra environment, optionally another user.

SSH carries one command *line*, which the login shell on the submit host
reads; so every argv word, every environment value and the user name is
``shlex.quote``-d here, and nothing else builds that line. Names are checked
first: an environment variable name, a user name (strict POSIX) and the
program (no ``=``, no NUL) are refused if malformed, never passed on.

How the gateway becomes the job's user (``ssh_login``):
- ``per_user_key``: it logs in as that user with that user's key file;
- ``sudo``: it logs in as the service user and runs ``sudo -n -H -u USER --``.
Commands without a user run as the service user. Connections come from one
``SshPool``; see ``gateway.adapters.ssh`` for which failures mean "nothing
ran" (CommandError) and which mean "unknown" (CommandTimeout).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from gateway.adapters.runner import CommandResult, Deferred, StartedCommand
from gateway.adapters.ssh import SshPool
from gateway.adapters.ssh_hop import LoginCheck
from gateway.adapters.ssh_login import Login
from gateway.errors import CommandError

LoginMode = Literal["per_user_key", "sudo"]

# What useradd accepts by default on Debian (NAME_REGEX), at most 32 characters.
USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,30}\$?")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def remote_command(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, sudo_user: str | None = None
) -> str:
    """The one shell command line that runs ``argv`` with ``env`` (as ``sudo_user`` through sudo).

    Every word is quoted, so the remote shell sees exactly these words, whatever they hold (quotes,
    ``;``, ``$()``, newlines, unicode). CommandError for an empty argv, a NUL byte anywhere, a
    program name holding ``=`` (``env`` would read it as a variable), a malformed variable name or
    user name.
    """
    if not argv:
        raise CommandError("no program to run")
    words = [*argv, *(env or {}).keys(), *(env or {}).values()]
    if any("\0" in word for word in words):
        raise CommandError("a NUL byte cannot be passed in a command line")
    if "=" in argv[0] or argv[0].startswith("-"):
        raise CommandError(f"not a program name: {argv[0]!r}")
    prefix: list[str] = []
    if sudo_user is not None:
        check_user(sudo_user)
        prefix = ["sudo", "-n", "-H", "-u", sudo_user, "--"]
    if env:
        bad = [name for name in env if not ENV_NAME.fullmatch(name)]
        if bad:
            raise CommandError(f"not an environment variable name: {bad[0]!r}")
        prefix += ["env", *(f"{name}={value}" for name, value in env.items())]
    return " ".join(shlex.quote(word) for word in [*prefix, *argv])


def check_user(user: str) -> str:
    """``user`` when it is a strict POSIX user name (it becomes a login, a sudo argument, a file
    name); CommandError otherwise."""
    if not USER_NAME.fullmatch(user):
        raise CommandError(
            f"not an OS user name: {user!r}; the submit host accepts lower-case letters, digits, "
            "'_' and '-' (a letter or '_' first, at most 32 characters)"
        )
    return user


class SshRunner:
    """``CommandRunner`` on the submit host over pooled SSH connections."""

    def __init__(
        self,
        pool: SshPool,
        *,
        login_mode: LoginMode,
        service_user: str,
        service_key: Path,
        user_keys: str = "/etc/gateway/ssh/users/{user}",
    ) -> None:
        self.pool = pool
        self.login_mode = login_mode
        self.service = Login(check_user(service_user), service_key)
        self.user_keys = user_keys  # per_user_key: the key file of each user, {user} replaced

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> CommandResult:
        """``CommandRunner.run`` on the submit host; output decoded as UTF-8, bad bytes replaced.

        A non-zero exit is not an error (the caller reads ``returncode`` and stderr). CommandError when
        nothing ran (bad name, unreachable host, refused host key or login); CommandTimeout past
        ``timeout_s`` or when the connection dropped while the program ran (its outcome unknown).
        """
        login, sudo_user = self.login_for(as_user)
        command = remote_command(argv, env=env, sudo_user=sudo_user)
        data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
        result = self.pool.exec(login, command, stdin=data, timeout_s=timeout_s)
        return CommandResult(
            argv=tuple(argv),
            returncode=result.returncode,
            stdout=result.stdout.decode("utf-8", errors="replace"),
            stderr=result.stderr.decode("utf-8", errors="replace"),
            duration_s=result.duration_s,
        )

    def start(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> StartedCommand:
        """``CommandRunner.start``, deferred: the whole command runs at ``finish`` (``run``).

        ``SshPool.exec`` sends a command and its input together, so over SSH nothing of the
        program's start overlaps the caller's work.
        """
        return Deferred(self, argv, timeout_s=timeout_s, env=env, as_user=as_user)

    def login_for(self, as_user: str | None) -> tuple[Login, str | None]:
        """How a command of ``as_user`` gets there: (the login, the user to sudo to or None)."""
        if as_user is None or as_user == self.service.user:
            return self.service, None
        check_user(as_user)
        if self.login_mode == "sudo":
            return self.service, as_user
        return Login(as_user, Path(self.user_keys.replace("{user}", as_user))), None

    # -- the hop (gateway.adapters.ssh_hop.SubmitHop) ----------------------------------------

    @property
    def service_user(self) -> str:
        """The account the gateway logs in as for commands without a user."""
        return self.service.user

    def describe(self) -> str:
        """``ssh://USER@HOST:PORT (MODE)``."""
        target = self.pool.target
        return f"ssh://{self.service.user}@{target.host}:{target.port} ({self.login_mode})"

    def probe(self) -> None:
        """``true`` as the service user over a pooled connection (CommandError/CommandTimeout)."""
        result = self.run(["true"], timeout_s=self.pool.target.connect_timeout_s)
        if result.returncode != 0:
            raise CommandError(
                f"`true` on the submit host exited {result.returncode}: {result.stderr.strip()}"
            )

    def check_login(self, user: str) -> LoginCheck:
        """``id -un`` as ``user``, through the login mode; never raises."""
        started = time.perf_counter()
        try:
            result = self.run(["id", "-un"], as_user=user, timeout_s=self.pool.target.connect_timeout_s)
        except CommandError as exc:
            return LoginCheck(user, False, None, str(exc))
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        who = result.stdout.strip()
        if result.returncode != 0:
            detail = result.stderr.strip() or f"id exited {result.returncode}"
            return LoginCheck(user, False, None, detail[-500:])
        if who != user:
            return LoginCheck(user, False, None, f"the command ran as {who!r}, not as {user!r}")
        via = "sudo" if self.login_for(user)[1] else f"key {self.login_for(user)[0].key_path}"
        return LoginCheck(user, True, latency_ms, f"ran as {who} ({via})")

    def close(self) -> None:
        """Close the pool's connections."""
        self.pool.close()

"""The run host on a remote submit host, reached over SSH (the gateway host may share no file system).

Every operation runs on the submit host *as the job's OS user*, through the
SSH runner (a login with that user's key, or sudo to that user, as the site
chose): file reads, writes, output hashing and venv listings by the
standard-library agent (``gateway.adapters.runhost_base``, the same bounds as
on the login node: regular files only, never /proc, /sys or /dev, a size cap
per call, ``timeout_s`` per call); run directories by ``mkdir -m 0700`` as
their owner, so they are the owner's from the start and the gateway needs
no root there. Accounts are looked up with ``getent passwd`` as the service
user, and remembered for a minute.
"""

from __future__ import annotations

import threading
import time

from gateway.adapters.runhost import OsAccount
from gateway.adapters.runhost_base import AgentRunHost
from gateway.adapters.runner import CommandResult, CommandRunner
from gateway.adapters.runner_ssh import check_user
from gateway.errors import CommandError, CommandTimeout, RunHostError, RunHostUnavailable

ACCOUNT_TTL_S = 60.0


class SshRunHost(AgentRunHost):
    """``RunHost`` on the submit host behind ``runner`` (an ``SshRunner``)."""

    def __init__(self, runner: CommandRunner, *, python: str = "/usr/bin/python3", timeout_s: float = 30.0):
        super().__init__(runner, python=python, timeout_s=timeout_s)
        self._accounts: dict[str, tuple[float, OsAccount]] = {}
        self._lock = threading.Lock()

    def account(self, user: str) -> OsAccount | None:
        """``RunHost.account`` from the submit host's ``getent passwd``; None for no such user or a
        malformed name. RunHostUnavailable / RunHostError when the host cannot be asked."""
        try:
            check_user(user)
        except CommandError:
            return None
        with self._lock:
            cached = self._accounts.get(user)
        if cached and time.monotonic() - cached[0] < ACCOUNT_TTL_S:
            return cached[1]
        result = self._run(["getent", "passwd", user], as_user=None, what=f"look up user {user}")
        if result.returncode == 2:  # getent: no such key
            return None
        fields = result.stdout.strip().split(":")
        if result.returncode != 0 or len(fields) < 7 or fields[0] != user:
            raise RunHostError(
                f"cannot look up user {user} on the submit host: getent exited {result.returncode}: "
                f"{(result.stderr or result.stdout).strip()[-300:]}"
            )
        account = OsAccount(user, int(fields[2]), int(fields[3]), fields[5])
        with self._lock:
            self._accounts[user] = (time.monotonic(), account)
        return account

    def make_run_dir(self, path: str, *, owner: str) -> None:
        """``RunHost.make_run_dir``: ``mkdir -m 0700`` as ``owner`` on the submit host.

        Its parent (the gateway's ``runs_dir`` there) must exist and let job users create directories
        (mode 1777, like /tmp, or a group they share). RunHostError when it cannot be made (it exists,
        no permission, no such parent), RunHostUnavailable when the host does not answer.
        """
        if not path.startswith("/"):
            raise RunHostError(f"cannot make run directory {path}: not an absolute path")
        result = self._run(["mkdir", "-m", "0700", "--", path], as_user=owner, what=f"make {path}")
        if result.returncode != 0:
            raise RunHostError(
                f"cannot make run directory {path} as {owner} on the submit host: "
                f"{result.stderr.strip()[-300:] or f'mkdir exited {result.returncode}'}; the gateway's "
                "runs_dir there must exist and let job users create directories (mode 1777)"
            )

    def _run(self, argv: list[str], *, as_user: str | None, what: str) -> CommandResult:
        try:
            return self.runner.run(argv, timeout_s=self.timeout_s, as_user=as_user)
        except CommandTimeout as exc:
            raise RunHostUnavailable(f"the submit host did not answer ({what}): {exc}") from exc
        except CommandError as exc:
            raise RunHostError(f"cannot {what} on the submit host: {exc}") from exc

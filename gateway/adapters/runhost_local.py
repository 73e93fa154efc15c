"""The run host when the gateway runs on the machine where jobs run (the login node).

Each file operation runs as the job's OS user. When that is the gateway's own
user, the operation runs in this process; otherwise the job-side program
``runhost_agent`` runs as that user through the command runner (``runuser``
needs the gateway to be root), with the system's Python and no site
packages, so the kernel checks that user's permissions
(``gateway.adapters.runhost_base``). Either way a call is bounded in time
(``timeout_s``) and in size.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

from gateway.adapters import runhost_agent
from gateway.adapters.runhost import OsAccount, Removal
from gateway.adapters.runhost_base import AgentRunHost
from gateway.adapters.runner import CommandRunner, current_user
from gateway.errors import RunHostError


class LocalRunHost(AgentRunHost):
    """Files and accounts of this machine, each operation with the job user's permissions."""

    def __init__(self, runner: CommandRunner, *, python: str = "/usr/bin/python3", timeout_s: float = 30.0):
        super().__init__(runner, python=python, timeout_s=timeout_s)
        self._me = current_user()

    def account(self, user: str) -> OsAccount | None:
        """``RunHost.account``: from this machine's passwd database."""
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            return None
        return OsAccount(user, entry.pw_uid, entry.pw_gid, entry.pw_dir)

    def make_run_dir(self, path: str, *, owner: str) -> None:
        """``RunHost.make_run_dir``: mode 0700, chowned to ``owner`` when the gateway is root.

        RunHostError when ``owner`` has no OS account here or the directory cannot be made (it exists,
        no permission).
        """
        account = self.account(owner)
        if account is None:
            raise RunHostError(f"cannot make run directory {path}: no OS user {owner!r} on this host")
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, 0o700)  # a new run's directory: never one that exists already
            if os.geteuid() == 0 and owner != self._me:
                os.chown(path, account.uid, account.gid)
        except OSError as exc:
            raise RunHostError(
                f"cannot make run directory {path}: {exc.strerror or exc}; "
                "the gateway's runs_dir must be writable by the gateway (ask an admin)"
            ) from exc

    def remove_path(self, run_dir: str, rel: str, *, kind: str, as_user: str) -> Removal:
        """``RunHost.remove_path`` as ``as_user``; a run directory its owner emptied but may not remove
        (the runs_dir is the gateway's) is then removed by the gateway: ``rmdir``, which takes only an
        empty directory and never a symlink."""
        removal = super().remove_path(run_dir, rel, kind=kind, as_user=as_user)
        if not removal.emptied:
            return removal
        try:
            os.rmdir(run_dir)
        except OSError as exc:
            return Removal(False, False, f"emptied {run_dir}, but cannot remove it: {exc.strerror or exc}")
        return Removal(True, False, None)

    def _call(self, op: str, as_user: str, **args: Any) -> dict[str, Any]:
        """Run one agent operation as ``as_user``: in this process when that is us, else as that user."""
        if as_user != self._me:
            return super()._call(op, as_user, **args)
        answer = runhost_agent.handle({"op": op, "args": args})
        if not answer.get("ok"):
            raise RunHostError(f"{op} as {as_user} failed: {answer.get('error')}")
        return answer["result"]

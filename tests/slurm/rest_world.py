"""The two backends the adapter contract tests run against, on the real local cluster.

``cli``: SlurmCLI, submitting as root (the gateway's user). ``rest``: SlurmRest with its own
slurmrestd daemons, submitting as the OS user gwtalice (slurmrestd will not run as root), who
gets an association in the account ``gwtrest`` for the tests' lifetime.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm.cli import SlurmCLI
from gateway.adapters.slurm.rest import SlurmRest
from gateway.adapters.slurm.restd import RestDaemons

REST_USER = "gwtalice"
REST_ACCOUNT = "gwtrest"


class Backend:
    """A backend that submits as ``submit_user``; ``admin_uid`` is who its cancels are recorded as."""

    def __init__(self, inner: Any, submit_user: str | None, admin_uid: int) -> None:
        self.inner = inner
        self.submit_user = submit_user or pwd.getpwuid(os.geteuid()).pw_name
        self._as_user = submit_user
        self.admin_uid = admin_uid

    def prepare_submit(
        self,
        *,
        tag: str,
        as_user: str | None = None,
        exclude_nodes=(),
        comment=None,
        mail_user=None,
        script_path=None,
    ) -> Any:
        user = as_user or self._as_user
        return self.inner.prepare_submit(
            tag=tag,
            as_user=user,
            exclude_nodes=exclude_nodes,
            comment=comment,
            mail_user=mail_user,
            script_path=script_path,
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def sacctmgr(*args: str) -> None:
    subprocess.run(["sacctmgr", "-i", *args], capture_output=True, text=True, check=False)


def ensure_rest_users() -> None:
    """gwtalice and gwtbob exist, and gwtalice may submit (an association in ``gwtrest``)."""
    from tests.service.conftest import ensure_os_users

    ensure_os_users()
    sacctmgr("add", "account", REST_ACCOUNT, "Description=gateway rest backend tests")
    sacctmgr("add", "user", REST_USER, f"account={REST_ACCOUNT}", f"DefaultAccount={REST_ACCOUNT}")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # slurmctld learns new associations a moment later
        shown = subprocess.run(
            ["scontrol", "show", "assoc_mgr", f"users={REST_USER}", f"accounts={REST_ACCOUNT}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if f"UserName={REST_USER}(" in shown:
            return
        time.sleep(0.2)


def socket_dir() -> Path:
    return Path(f"/tmp/gw-restd-{uuid.uuid4().hex[:8]}")


def rest_backend(directory: Path, **daemon_options: Any) -> SlurmRest:
    return SlurmRest(RestDaemons(directory, **daemon_options), SlurmCLI(LocalRunner()), query_timeout_s=10)


def remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
